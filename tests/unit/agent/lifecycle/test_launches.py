"""A round's launches: the cloud calls run through the lifecycle's runner (on a pool of threads
in the live agent), what follows each launch on the caller's thread in the NodeClaims' order."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

import pytest

from agent.api.conditions import is_true
from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclaim import NodeClaim
from agent.catalog import Catalog
from agent.runner import ThreadRunner, one_by_one
from tests.unit.agent.cloud.helpers import ready
from tests.unit.agent.lifecycle.test_nodeclaims import Rig, catalog, m5_claim, rig

__all__ = ["catalog"]
R = TypeVar("R")
NAMES = ("claim-a", "claim-b", "claim-c")


class Counting:
    """A runner that keeps the size of every batch it is given, and runs it on threads."""

    def __init__(self, runner: ThreadRunner) -> None:
        self.runner = runner
        self.batches: list[int] = []

    def __call__(self, calls: Sequence[Callable[[], R]]) -> list[R]:
        self.batches.append(len(calls))
        return self.runner(calls)


def _three(catalog: Catalog) -> Rig:
    built = rig(catalog)
    built.cluster.create(ready(built.amis))
    for name in reversed(NAMES):
        built.cluster.create(m5_claim(name=name))
    return built


def test_the_thread_runner_runs_the_calls_at_once_and_answers_in_order() -> None:
    runner = ThreadRunner(workers=3)
    together = threading.Barrier(3, timeout=10)

    def call(n: int) -> Callable[[], int]:
        def run() -> int:
            together.wait()  # passes only when all three run at the same time
            return n * n

        return run

    try:
        assert runner([call(n) for n in (3, 1, 2)]) == [9, 1, 4]
        assert runner([]) == []
    finally:
        runner.close()


def test_one_round_launches_every_claim_in_one_batch_and_records_them_in_order(
    catalog: Catalog,
) -> None:
    world = _three(catalog)
    counting = Counting(ThreadRunner(workers=3))
    world.lifecycle.launches = counting
    try:
        world.lifecycle.reconcile()
    finally:
        counting.runner.close()
    assert counting.batches == [3]
    assert [obj for kind, obj in ((k, o) for _, k, o in world.events) if kind == "Launched"] == [
        f"nodeclaim/{n}" for n in NAMES
    ]
    for name in NAMES:
        launched = world.claim(name)
        assert launched.status.provider_id
        assert is_true(launched, "Launched")


def test_the_same_claims_launch_alike_on_threads_and_one_by_one(catalog: Catalog) -> None:
    def launched(threads: bool) -> list[tuple[str, str | None, str]]:
        world = _three(catalog)
        runner = ThreadRunner(workers=3)
        world.lifecycle.launches = runner if threads else one_by_one
        try:
            world.lifecycle.reconcile()
        finally:
            runner.close()
        return [
            (
                n,
                world.claim(n).status.image_id,
                world.claim(n).metadata.labels["node.kubernetes.io/instance-type"],
            )
            for n in NAMES
        ]

    assert launched(threads=True) == launched(threads=False)


def test_an_unexpected_error_is_raised_after_the_other_launches_are_applied(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = _three(catalog)
    create = world.cloud.create

    def failing(claim: NodeClaim, nodeclass: EC2NodeClass) -> NodeClaim:
        if claim.name == "claim-b":
            raise RuntimeError("the cloud's client broke")
        return create(claim, nodeclass)

    monkeypatch.setattr(world.cloud, "create", failing)
    runner = ThreadRunner(workers=3)
    world.lifecycle.launches = runner
    try:
        with pytest.raises(RuntimeError, match="client broke"):
            world.lifecycle.reconcile()
    finally:
        runner.close()
    assert is_true(world.claim("claim-a"), "Launched")
    assert is_true(world.claim("claim-c"), "Launched")
    assert not world.claim("claim-b").status.provider_id
