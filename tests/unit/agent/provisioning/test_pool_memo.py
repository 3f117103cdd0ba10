"""Built pools are reused while their NodePool's spec, the DaemonSets and the cloud's instance
types are the same objects, and each read gets its own copy of what the scheduler changes."""

from __future__ import annotations

import numpy as np
import pytest

from agent.catalog import Catalog
from agent.provisioning.view import PoolMemo
from agent.scheduling.plans import PoolPlan
from agent.scheduling.typetable import TypeTable


@pytest.fixture(scope="module")
def catalog_table() -> TypeTable:
    catalog = Catalog.packaged()
    types = list(catalog)[:20]
    return TypeTable(types, [catalog.offerings(t) for t in types], catalog.zones)


def pool(table: TypeTable) -> PoolPlan:
    plan = PoolPlan.plain(table, "general")
    plan.remaining = np.full(len(table.resources), 100, dtype=np.int64)
    return plan


def test_the_same_parts_reuse_the_built_pool_and_hand_out_copies(catalog_table: TypeTable) -> None:
    memo = PoolMemo()
    spec, daemons = object(), object()
    builds: list[PoolPlan] = []

    def build() -> PoolPlan:
        builds.append(pool(catalog_table))
        return builds[-1]

    first = memo.get("general", (spec, daemons), build)
    assert first.remaining is not None
    first.remaining = first.remaining - 50
    second = memo.get("general", (spec, daemons), build)
    assert len(builds) == 1
    assert second.table is first.table
    assert second.remaining is not None
    assert int(second.remaining[0]) == 100
    memo.get("general", (object(), daemons), build)
    assert len(builds) == 2
    memo.retain(set())
    memo.get("general", (spec, daemons), build)
    assert len(builds) == 3
