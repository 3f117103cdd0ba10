"""The status's progress over the API: who may approve the waiting ring (the tokens that may,
by name), who holds which role (``/v1/whoami``'s ``people``), and the OpenAPI schema describing
both."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from fleet.api.documents import WhoAmI
from fleet.documents.rollouts import RolloutStatus
from tests.support.fleetsim import FleetHarness

from .helpers import STRATEGY, client, release_doc, serving
from .test_rbac import RINGS, access, as_, state


def test_the_waiting_ring_names_its_approvers_and_whoami_names_every_role(tmp_path: Path) -> None:
    harness = FleetHarness(tmp_path, RINGS, nodes=10)
    with serving(harness.ctx, access=access()) as url, client(url, {}) as api:
        started = api.post("/v1/rollouts", json=release_doc(STRATEGY), headers=as_("otto"))
        rid = started.json()["id"]
        harness.run_until(
            lambda: state(harness, rid) == "awaiting-approval", limit=timedelta(hours=2)
        )
        body = api.get(f"/v1/rollouts/{rid}", headers=as_("vera")).json()
        status = RolloutStatus.model_validate(body)
        assert status.progress.approval is not None
        # carl may approve canary only; ada every ring; root is an admin
        assert status.progress.approval.approvers == ["ada", "root"]
        assert status.progress.approval.ring == "prod"
        assert status.actions.approve.allowed
        assert status.actions.approve.ring == "prod"
        assert status.position is not None
        assert (status.position.ring, status.position.ring_number, status.position.wave) == (
            "prod",
            2,
            1,
        )
        me = WhoAmI.model_validate(api.get("/v1/whoami", headers=as_("vera")).json())
        assert (me.name, me.role) == ("vera", "viewer")
        assert me.people == {
            "viewer": ["vera"],
            "operator": ["otto"],
            "approver": ["ada", "carl"],
            "admin": ["root"],
        }
        schemas = api.get("/openapi.json").json()["components"]["schemas"]
        assert {"position", "progress", "actions"} <= set(schemas["RolloutStatus"]["properties"])
        assert "approvers" in schemas["ApprovalWait"]["properties"]
        assert "people" in schemas["WhoAmI"]["properties"]


def test_without_authentication_nobody_is_named(tmp_path: Path) -> None:
    harness = FleetHarness(tmp_path, RINGS, nodes=10)
    with serving(harness.ctx, token_hashes=None) as url, client(url, {}) as api:
        rid = api.post("/v1/rollouts", json=release_doc(STRATEGY)).json()["id"]
        harness.run_until(
            lambda: state(harness, rid) == "awaiting-approval", limit=timedelta(hours=2)
        )
        status = RolloutStatus.model_validate(api.get(f"/v1/rollouts/{rid}").json())
        assert status.progress.approval is not None
        assert status.progress.approval.approvers is None
        assert api.get("/v1/whoami").json()["people"] == {}
