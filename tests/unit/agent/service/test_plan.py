"""The plan: the drift preview, and what a target would do, with nothing changed."""

from __future__ import annotations

import math
from typing import Any

import pytest

from agent.api.kinds import agent_kinds
from agent.service import InvalidRequest
from common.wire.plan import PlanDocument

from .helpers import NEWEST, Rig, alias, rig, wire


def _state(r: Rig) -> tuple[Any, ...]:
    """Every object's kind, name and resource version, the timeline length and the time."""
    objects: list[tuple[str, str, str | None]] = []
    for model in {m for m in agent_kinds().values() if "metadata" in m.model_fields}:
        for obj in r.world.cluster.list(model):
            meta = obj.model_dump()["metadata"]
            objects.append((model.__name__, meta["name"] or "", meta["resourceVersion"]))
    assert {"NodeClaim", "Node", "Pod", "EC2NodeClass", "NodePool"} <= {o[0] for o in objects}
    return (sorted(objects), len(r.world.timeline), r.world.clock.now())


def test_a_plan_without_target_is_the_drift_preview() -> None:
    r = rig(nodes=5)
    result = r.service.plan({})
    PlanDocument.model_validate(wire(result), extra="forbid")
    assert result.target is None
    assert result.preview["drifted"] == []
    assert result.preview["haltedNodePools"] == []
    assert r.service.plan(None).preview["replace"] == 0


def test_a_plan_with_a_target_says_what_would_drift_and_changes_nothing() -> None:
    r = rig(nodes=20)
    before = _state(r)
    result = r.service.plan(alias(NEWEST))
    assert _state(r) == before
    PlanDocument.model_validate(wire(result), extra="forbid")
    assert wire(result)["target"] == alias(NEWEST)["target"]
    assert result.error is None
    assert result.would_drift == {"batch": 6, "general": 14}
    assert result.drifting is not None
    assert result.waves is not None
    assert len(result.drifting) == 20
    (row,) = result.node_classes or []
    assert row.target_ami_selector_terms == [{"alias": f"al2023@{NEWEST}"}]
    assert set(row.target_images).isdisjoint(row.images)
    for pool, nodes, share in (("general", 14, 10), ("batch", 6, 20)):
        sizes = [len(w["nodes"]) for w in result.waves if w["nodePool"] == pool]
        allowed = math.ceil(nodes * share / 100)
        assert sum(sizes) == nodes
        assert max(sizes) <= allowed
        assert len(sizes) == math.ceil(nodes / allowed)
    assert result.eta_seconds == max(w["endSeconds"] for w in result.waves)
    _, wave = r.service.apply_wave("wave-1", alias(NEWEST))
    assert wave.target_images == result.target_images


def test_a_kubernetes_version_plan_re_resolves_the_alias_without_moving_anything() -> None:
    r = rig(nodes=5)
    result = r.service.plan({"target": {"kubernetesVersion": "1.31"}})
    assert result.kubernetes_version_target == "1.31"
    assert sum((result.would_drift or {}).values()) == 5
    assert {r.world.amis.get(i).kubernetes_version for i in result.target_images or []} == {"1.31"}
    assert r.world.kubernetes_version == "1.30"


def test_a_plan_for_an_unresolvable_target_says_why_and_drifts_nothing() -> None:
    r = rig(nodes=3)
    result = r.service.plan({"target": {"amiSelectorTerms": [{"id": "ami-0000000000dead"}]}})
    assert (result.error or "").startswith("the target resolves to no image")
    assert result.would_drift == {}
    assert (result.node_classes or [])[0].error == "amiSelectorTerms did not match any AMIs"


def test_an_invalid_plan_request_names_the_field() -> None:
    r = rig(nodes=1)
    with pytest.raises(InvalidRequest) as caught:
        r.service.plan({"target": {"amiSelectorTerms": [{"id": "x"}]}})
    assert caught.value.fields[0][0] == "target.amiSelectorTerms[0].id"
