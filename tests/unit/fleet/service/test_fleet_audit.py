"""The Fleet's own changes audited (contract C): each apply with its reason, each cluster's
change before and after, and a change to a cluster held by a live rollout written in that
rollout's trail too."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from common.kubemodel import parse_manifest
from fleet.domain.fleet import Fleet
from fleet.service.commands.fleets import apply_fleet, fleet_audit, list_clusters
from fleet.service.commands.rollouts import start_rollout
from fleet.service.errors import BadInput, Unknown
from fleet.service.reads.queries import audit_trail
from tests.support.documents import wire
from tests.support.fleetsim import FleetHarness, fleet_manifest

RINGS = {"canary": ["can-1"], "prod": ["prod-1", "prod-2"]}
WINDOW = {"schedule": "0 22 * * *", "duration": "4h", "timeZone": "Europe/Paris"}
STRATEGY: list[dict[str, Any]] = [{"name": "canary", "soak": "2m"}, {"name": "prod", "soak": "2m"}]


def _manifest(windows: bool, *, freeze: bool = False) -> dict[str, Any]:
    data = copy.deepcopy(fleet_manifest(RINGS))
    for cluster in data["spec"]["clusters"]:
        if windows and cluster["name"] == "prod-1":
            cluster["maintenanceWindows"] = [dict(WINDOW)]
    if freeze:
        data["spec"]["freezes"] = [
            {"start": "2026-12-20T00:00:00Z", "end": "2027-01-04T00:00:00Z", "reason": "year-end"}
        ]
    return data


def _apply(harness: FleetHarness, data: dict[str, Any], reason: str | None = None) -> Any:
    return apply_fleet(harness.ctx, parse_manifest(Fleet, data), "ada", reason)


def test_a_window_removed_mid_rollout_is_in_the_fleet_audit_and_the_rollout_trail(
    tmp_path: Path,
) -> None:
    harness = FleetHarness(tmp_path, RINGS, nodes=3)
    _apply(harness, _manifest(windows=True), "CHG-1: prod-1 patches at night")
    (prod1,) = [c for c in list_clusters(harness.ctx, "demo") if c.name == "prod-1"]
    assert [wire(w) for w in prod1.maintenance_windows] == [WINDOW]
    assert prod1.windows == 1
    assert [c.ring_index for c in list_clusters(harness.ctx, "demo")] == [0, 1, 1]
    rid = start_rollout(harness.ctx, harness.release(STRATEGY), "alice").id
    harness.step(10)
    result = _apply(harness, _manifest(windows=False), "INC-7: window blocks the fix")
    assert result.changed == ("prod-1",)

    trail = audit_trail(harness.ctx, rid)
    (changed,) = [e for e in trail if e.action == "fleet.changed"]
    assert changed.object == "cluster/demo/prod-1"
    assert changed.actor == "ada"
    assert changed.before == {"maintenanceWindows": [WINDOW]}
    assert changed.after == {"maintenanceWindows": []}
    assert changed.reason == "INC-7: window blocks the fix"
    transitions = [e for e in trail if e.action == "rollout.transition"]
    assert transitions
    assert all(e.reason for e in transitions), "transitions carry reasons"

    entries = fleet_audit(harness.ctx, "demo")
    applies = [e for e in entries if e.action == "fleet.apply"]
    assert [e.reason for e in applies] == [
        None,
        "CHG-1: prod-1 patches at night",
        "INC-7: window blocks the fix",
    ]
    assert applies[-1].after["changed"] == ["prod-1"]
    cluster_rows = [(e.action, e.object, e.before, e.after) for e in entries]
    assert (
        "cluster.changed",
        "cluster/demo/prod-1",
        {"maintenanceWindows": []},
        {"maintenanceWindows": [WINDOW]},
    ) in cluster_rows
    assert cluster_rows[-1] == (
        "cluster.changed",
        "cluster/demo/prod-1",
        {"maintenanceWindows": [WINDOW]},
        {"maintenanceWindows": []},
    )
    added = [e for e in entries if e.action == "cluster.added"]
    assert sorted(e.object for e in added) == [
        "cluster/demo/can-1",
        "cluster/demo/prod-1",
        "cluster/demo/prod-2",
    ]
    assert added[0].before is None
    assert added[0].after["ring"] == "canary"
    assert added[0].after["credentialsRef"] == "(set)", "a credentials reference is not shown"
    assert fleet_audit(harness.ctx, "demo", after_id=entries[-2].id) == entries[-1:]


def test_rings_freezes_and_removals_are_audited_with_the_live_rollout(tmp_path: Path) -> None:
    harness = FleetHarness(tmp_path, RINGS, nodes=3)
    rid = start_rollout(harness.ctx, harness.release(STRATEGY), "alice").id
    data = _manifest(windows=False, freeze=True)
    data["spec"]["clusters"] = [c for c in data["spec"]["clusters"] if c["name"] != "prod-2"]
    _apply(harness, data, "prod-2 decommissioned; year-end freeze")
    entries = fleet_audit(harness.ctx, "demo")
    (last_apply,) = [e for e in entries if e.action == "fleet.apply"][-1:]
    assert last_apply.actor == "ada"
    assert last_apply.before == {"freezes": []}
    assert last_apply.after["freezes"][0]["reason"] == "year-end"
    assert last_apply.after["removed"] == ["prod-2"]
    (removed,) = [e for e in entries if e.action == "cluster.removed"]
    assert removed.object == "cluster/demo/prod-2"
    assert removed.after is None
    assert removed.before["ring"] == "prod"
    trail = {(e.action, e.object): e for e in audit_trail(harness.ctx, rid)}
    assert trail[("fleet.changed", "cluster/demo/prod-2")].after == {"removed": True}
    frozen = trail[("fleet.changed", "fleet/demo")]
    assert frozen.before == {"freezes": []}
    assert frozen.reason == "prod-2 decommissioned; year-end freeze"


def test_a_bad_reason_changes_nothing_and_an_unknown_fleet_has_no_audit(tmp_path: Path) -> None:
    harness = FleetHarness(tmp_path, RINGS, nodes=3)
    before = fleet_audit(harness.ctx, "demo")
    with pytest.raises(BadInput, match="reason: at most 1000 characters"):
        _apply(harness, _manifest(windows=True), "x" * 1001)
    with pytest.raises(BadInput, match="reason: must not contain control characters"):
        _apply(harness, _manifest(windows=True), "a\x1b[31m")
    assert fleet_audit(harness.ctx, "demo") == before
    assert all(c.windows == 0 for c in list_clusters(harness.ctx, "demo"))
    with pytest.raises(Unknown):
        fleet_audit(harness.ctx, "nope")


def test_the_trail_names_the_ring_and_counts_the_wave_from_1(tmp_path: Path) -> None:
    harness = FleetHarness(tmp_path, RINGS, nodes=3)
    _apply(harness, _manifest(windows=False))
    rid = start_rollout(harness.ctx, harness.release(STRATEGY), "alice").id
    harness.step(10)
    moves = [e for e in audit_trail(harness.ctx, rid) if e.action == "rollout.transition"]
    assert moves, "the scheduler moved the rollout"
    with harness.ctx.reading() as uow:
        stored = [
            r.after or {} for r in uow.audit.list(rollout_id=rid) if r.action == moves[0].action
        ]
    assert (stored[0]["ring"], stored[0]["wave"]) == (0, 0), "stored as indexes from 0"
    assert moves[0].after["ring"] == "canary"
    assert moves[0].after["wave"] == 1
    rings = {e.after["ring"] for e in moves}
    assert rings <= {"canary", "prod"}
