"""The rollout routes: the list, one rollout's status, its audit trail, and the operator's
commands, whose refusals (409) and unknown rollouts (404) change nothing."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from fleet.api.documents import ErrorDocument
from fleet.documents.audit import AuditDocument
from fleet.documents.rollouts import CommandResult, RolloutsDocument, RolloutStatus

from .helpers import Traced, fleet_doc, release_doc

COMMANDS = ["pause", "resume", "abort", "rollback", "approve"]


def start(api: httpx.Client, **release: Any) -> str:
    """Apply the fleet (once) and start a rollout of a release; its id."""
    if api.get("/v1/fleets").json()["fleets"] == []:
        api.put("/v1/fleets/demo", json=fleet_doc())
    response = api.post("/v1/rollouts", json=release_doc(**release))
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def snapshot(api: httpx.Client, rid: str) -> tuple[dict[str, Any], list[Any]]:
    """The rollout's status and audit trail, to compare before and after a refusal."""
    return api.get(f"/v1/rollouts/{rid}").json(), api.get(f"/v1/rollouts/{rid}/audit").json()[
        "entries"
    ]


def test_rollouts_are_listed_oldest_first_the_limit_keeps_the_newest_and_active_filtered(
    api: httpx.Client, fleet: Traced
) -> None:
    first = start(api)
    api.post(f"/v1/rollouts/{first}/abort")
    fleet.clock.advance(60)
    second = start(api, release="v20251118")
    every = RolloutsDocument.model_validate(api.get("/v1/rollouts").json()).rollouts
    assert [(r.id, r.state) for r in every] == [(first, "aborted"), (second, "planned")]
    assert every[1].steps == {"pending": 3}
    assert every[1].release == "al2023-v20251118"
    active = api.get("/v1/rollouts", params={"active": "true"}).json()["rollouts"]
    assert [r["id"] for r in active] == [second]
    assert [r["id"] for r in api.get("/v1/rollouts?limit=1").json()["rollouts"]] == [second], (
        "a limit keeps the newest: an overview never loses today's rollouts to old ones"
    )
    bad = api.get("/v1/rollouts?limit=0")
    assert bad.status_code == 422
    assert bad.json()["error"]["fields"][0]["path"] == "limit"


def test_a_rollouts_status_has_its_rings_waves_and_clusters(api: httpx.Client) -> None:
    rid = start(api)
    status = RolloutStatus.model_validate(api.get(f"/v1/rollouts/{rid}").json())
    assert (status.state, status.paused, status.fleet) == ("planned", False, "demo")
    assert [(r.name, len(r.waves)) for r in status.rings] == [("canary", 1), ("prod", 2)]
    assert [(c.cluster, c.state) for c in status.clusters] == [
        ("can-1", "pending"),
        ("prod-1", "pending"),
        ("prod-2", "pending"),
    ]
    assert status.target["amiSelectorTerms"] == [{"alias": "al2023@v20251216"}]
    assert status.plan is not None


def test_the_audit_trail_reads_after_an_id(api: httpx.Client) -> None:
    rid = start(api)
    api.post(f"/v1/rollouts/{rid}/pause")
    api.post(f"/v1/rollouts/{rid}/resume")
    trail = AuditDocument.model_validate(api.get(f"/v1/rollouts/{rid}/audit").json())
    assert [(e.action, e.actor) for e in trail.entries] == [
        ("rollout.start", "api-token"),
        ("rollout.pause", "api-token"),
        ("rollout.resume", "api-token"),
    ]
    assert trail.last_id == trail.entries[-1].id
    assert trail.entries[1].object == f"rollout/{rid}"
    assert trail.entries[1].before == {"paused": False}
    newer = api.get(f"/v1/rollouts/{rid}/audit", params={"after": trail.entries[0].id}).json()
    assert [e["action"] for e in newer["entries"]] == ["rollout.pause", "rollout.resume"]
    latest = api.get(f"/v1/rollouts/{rid}/audit", params={"after": trail.last_id}).json()
    assert (latest["entries"], latest["lastId"]) == ([], trail.last_id)
    limited = api.get(f"/v1/rollouts/{rid}/audit", params={"limit": 1}).json()["entries"]
    assert [e["action"] for e in limited] == ["rollout.start"]


@pytest.mark.parametrize("path", ["/v1/rollouts/ro-nope", "/v1/rollouts/ro-nope/audit"])
def test_reading_an_unknown_rollout_is_404(api: httpx.Client, path: str) -> None:
    response = api.get(path)
    assert response.status_code == 404
    error = ErrorDocument.model_validate(response.json()).error
    assert error.code == "rollout_not_found"
    assert "ro-nope" in error.message


def test_a_command_on_an_unknown_rollout_is_404_and_audits_nothing(
    api: httpx.Client, fleet: Traced
) -> None:
    for command in COMMANDS:
        response = api.post(f"/v1/rollouts/ro-nope/{command}")
        assert response.status_code == 404, command
        assert response.json()["error"]["code"] == "rollout_not_found"
    with fleet.ctx.reading() as uow:
        assert uow.audit.list() == []


def test_pause_resume_abort_and_rollback_answer_their_results(api: httpx.Client) -> None:
    rid = start(api)
    paused = CommandResult.model_validate(api.post(f"/v1/rollouts/{rid}/pause").json())
    assert (paused.id, paused.paused, paused.state) == (rid, True, "planned")
    assert api.get(f"/v1/rollouts/{rid}").json()["paused"] is True
    resumed = api.post(f"/v1/rollouts/{rid}/resume").json()
    assert resumed == {"id": rid, "paused": False, "state": "planned"}
    assert api.post(f"/v1/rollouts/{rid}/abort").json() == {"id": rid, "state": "aborted"}
    rolled = api.post(f"/v1/rollouts/{rid}/rollback")  # no wave reached a cluster
    assert rolled.status_code == 409
    assert "no cluster has anything to roll back" in rolled.json()["error"]["message"]
    assert api.get(f"/v1/rollouts/{rid}").json()["state"] == "aborted"


@pytest.mark.parametrize(
    ("setup", "command", "reason", "code"),
    [
        ([], "resume", "is not paused (it is planned): there is nothing to resume", "already_done"),
        (["pause"], "pause", "is already paused", "already_done"),
        (
            [],
            "approve",
            "not waiting for an approval (no ring waits, so ring prod cannot",
            "command_refused",
        ),
        (["abort"], "abort", "is already aborted", "already_done"),
        (["abort"], "pause", "has ended (aborted): there is nothing to pause", "command_refused"),
        (["abort"], "resume", "has ended (aborted): there is nothing to resume", "command_refused"),
        ([], "rollback", "is planned: nothing was rolled out yet", "command_refused"),
    ],
    ids=[
        "resume-running",
        "pause-paused",
        "approve-planned",
        "abort-aborted",
        "pause-aborted",
        "resume-aborted",
        "rollback-planned",
    ],
)
def test_a_refused_command_is_409_and_changes_nothing(
    api: httpx.Client, setup: list[str], command: str, reason: str, code: str
) -> None:
    """A command that would do nothing says so (``already_done``: "already aborted", never
    "it cannot become aborted"); one the rollout's state refuses says why."""
    rid = start(api)
    for step in setup:
        assert api.post(f"/v1/rollouts/{rid}/{step}").status_code == 200
    before = snapshot(api, rid)
    body = {"ring": "prod"} if command == "approve" else None
    response = api.post(f"/v1/rollouts/{rid}/{command}", json=body)
    assert response.status_code == 409
    error = ErrorDocument.model_validate(response.json()).error
    assert error.code == code
    assert reason in error.message
    assert error.message.startswith(f"rollout {rid} ")
    assert "cannot become" not in error.message
    assert snapshot(api, rid) == before


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"ring": 5}, "ring"),
        ({"ring": "prod", "comment": "x" * 2001}, "comment"),
        ({"ring": "prod", "rings": "prod"}, "rings"),
        ({}, "ring"),
        ({"comment": "no ring named"}, "ring"),
        ({"ring": ""}, "ring"),
    ],
    ids=[
        "ring-not-a-string",
        "comment-too-long",
        "unknown-field",
        "ring-missing",
        "ring-missing-beside-a-comment",
        "ring-empty",
    ],
)
def test_an_invalid_approval_body_is_422_naming_the_field(
    api: httpx.Client, body: dict[str, Any], path: str
) -> None:
    rid = start(api)
    before = snapshot(api, rid)
    response = api.post(f"/v1/rollouts/{rid}/approve", json=body)
    assert response.status_code == 422
    assert [f["path"] for f in response.json()["error"]["fields"]] == [path]
    assert snapshot(api, rid) == before


def test_a_malformed_approval_body_is_400(api: httpx.Client) -> None:
    rid = start(api)
    response = api.post(
        f"/v1/rollouts/{rid}/approve",
        content=b"{ring",
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 400
    yaml_body = api.post(
        f"/v1/rollouts/{rid}/approve",
        content=b"ring: prod\n---\nring: dev\n",
        headers={"Content-Type": "application/yaml"},
    )
    assert yaml_body.status_code == 400
    assert "2 YAML documents" in yaml_body.json()["error"]["message"]
    empty = api.post(
        f"/v1/rollouts/{rid}/approve",
        content=b"",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert empty.status_code == 422, "an empty body is no body, whatever its content type"
    assert [f["path"] for f in empty.json()["error"]["fields"]] == ["ring"]
