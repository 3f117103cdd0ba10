"""The fleet's audit and its clusters over the real API: ``PUT /v1/fleets/{name}?reason=`` kept
with before/after, ``GET /v1/fleets/{name}/audit`` for a viewer (404 for an unknown fleet), and
``GET /v1/fleets/{name}/clusters`` with the rings in promotion order and each cluster's
contact (contracts B and C)."""

from __future__ import annotations

import copy
from datetime import timedelta
from pathlib import Path

from common.auth import hash_token
from fleet.api.app import create_app
from fleet.api.documents import ErrorDocument
from fleet.api.rbac import AccessControl, Grant
from fleet.documents.audit import FleetAuditDocument
from fleet.documents.clusters import ClustersDocument
from fleet.service.contact.probes import ProbePolicy
from tests.unit.agent.server.helpers import serving as agent_serving

from .helpers import client, fleet_doc, serving, traced_context

RINGS = {"prod": ["prod-1"], "canary": ["can-1"], "staging": ["stg-1"]}
"""Rings listed out of alphabetical order: the answer must keep the manifest's order."""
WINDOW = {"schedule": "0 22 * * 1-5", "duration": "4h", "timeZone": "Europe/Paris"}


def _access() -> AccessControl:
    return AccessControl(
        {
            hash_token("vera-token"): Grant("vera", "viewer", None),
            hash_token("root-token"): Grant("root", "admin", None),
        }
    )


def test_a_viewer_reads_the_fleet_audit_with_reasons_before_and_after(tmp_path: Path) -> None:
    traced = traced_context(tmp_path)
    root, vera = {"Authorization": "Bearer root-token"}, {"Authorization": "Bearer vera-token"}
    doc = fleet_doc(RINGS)
    with serving(traced.ctx, access=_access()) as url, client(url, {}) as api:
        assert api.put("/v1/fleets/demo", json=doc, headers=root).status_code == 201
        changed = copy.deepcopy(doc)
        changed["spec"]["clusters"][0]["maintenanceWindows"] = [WINDOW]
        put = api.put(
            "/v1/fleets/demo",
            params={"reason": "CHG-42 nightly window"},
            json=changed,
            headers=root,
        )
        assert put.status_code == 200, put.text
        refused = api.put("/v1/fleets/demo", params={"reason": "x" * 1001}, json=doc, headers=root)
        assert refused.status_code in (400, 422), refused.text
        assert "reason" in refused.text

        answer = api.get("/v1/fleets/demo/audit", headers=vera)
        assert answer.status_code == 200, answer.text
        audit = FleetAuditDocument.model_validate(answer.json())
        assert audit.fleet == "demo"
        last = audit.entries[-1]
        assert (last.action, last.object, last.actor) == (
            "cluster.changed",
            "cluster/demo/prod-1",
            "root",
        )
        assert last.before == {"maintenanceWindows": []}
        assert last.after == {"maintenanceWindows": [WINDOW]}
        assert last.reason == "CHG-42 nightly window"
        assert [e.reason for e in audit.entries if e.action == "fleet.apply"] == [
            None,
            "CHG-42 nightly window",
        ], "the refused apply left no row"
        assert audit.last_id == last.id
        newer = api.get("/v1/fleets/demo/audit", params={"after": last.id}, headers=vera).json()
        assert newer == {"fleet": "demo", "entries": [], "lastId": last.id}
        two = api.get("/v1/fleets/demo/audit", params={"limit": 2}, headers=vera).json()
        assert [e["id"] for e in two["entries"]] == [e.id for e in audit.entries[:2]]

        missing = api.get("/v1/fleets/nope/audit", headers=vera)
        assert missing.status_code == 404
        assert ErrorDocument.model_validate(missing.json()).error.code == "fleet_not_found"
        assert api.get("/v1/fleets/demo/audit").status_code == 401


def test_clusters_come_with_rings_in_promotion_order_and_their_contact(tmp_path: Path) -> None:
    traced = traced_context(tmp_path)
    with serving(traced.ctx) as url, client(url) as api:
        doc = fleet_doc(RINGS)
        doc["spec"]["clusters"][0]["maintenanceWindows"] = [WINDOW]
        assert api.put("/v1/fleets/demo", json=doc).status_code == 201
        with traced.ctx.writing() as uow:
            uow.clusters.record_status("demo", "can-1", {"nodes": 2}, traced.clock.now)
            uow.commit()
        answer = api.get("/v1/fleets/demo/clusters")
        assert answer.status_code == 200, answer.text
        clusters = ClustersDocument.model_validate(answer.json())
        assert clusters.rings == ["prod", "canary", "staging"]
        by_name = {c.name: c for c in clusters.clusters}
        assert {n: c.ring_index for n, c in by_name.items()} == {
            "prod-1": 0,
            "can-1": 1,
            "stg-1": 2,
        }
        prod = by_name["prod-1"]
        assert prod.windows == 1
        assert [w.model_dump(by_alias=True) for w in prod.maintenance_windows] == [WINDOW]
        assert prod.contact.health == "unknown"
        assert prod.contact.last_contact is None
        assert by_name["can-1"].contact.health == "healthy"
        assert by_name["can-1"].contact.last_contact == "2026-11-02T09:00:00Z"
        assert api.get("/v1/fleets/nope/clusters").status_code == 404


def test_a_clusters_contact_is_stale_after_three_of_the_schedulers_probe_intervals(
    tmp_path: Path,
) -> None:
    traced = traced_context(tmp_path)
    five_minutes = ProbePolicy(timedelta(minutes=5))
    with agent_serving(create_app(traced.ctx, probes=five_minutes)) as url, client(url) as api:
        assert api.put("/v1/fleets/demo", json=fleet_doc(RINGS)).status_code == 201
        with traced.ctx.writing() as uow:
            uow.clusters.record_status("demo", "can-1", {"nodes": 2}, traced.clock.now)
            uow.commit()
        traced.clock.advance(14 * 60)

        def health() -> str:
            clusters = api.get("/v1/fleets/demo/clusters").json()["clusters"]
            return str(next(c for c in clusters if c["name"] == "can-1")["contact"]["health"])

        assert health() == "healthy", "14 min of silence is within 3 intervals of 5 min"
        traced.clock.advance(61)
        assert health() == "stale"
