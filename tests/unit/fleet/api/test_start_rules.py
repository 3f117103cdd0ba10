"""``POST /v1/rollouts`` under the rollout rules: one live rollout per cluster (409
``clusters_held``, or queued with ``queue: true``), one live or queued rollout per release (409
``release_live``, queue or not), a release selecting no cluster (422, as for a plan); and
``approve`` naming its ring. A refusal stores nothing."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import yaml

from fleet.api.documents import ErrorDocument
from fleet.documents.rollouts import RolloutStarted, RolloutStatus

from .helpers import YAML, Traced, fleet_doc, release_doc


def applied(api: httpx.Client) -> httpx.Client:
    assert api.put("/v1/fleets/demo", json=fleet_doc()).status_code in (200, 201)
    return api


def stored(fleet: Traced) -> tuple[int, int, int]:
    """Releases, rollouts and audit rows in the database."""
    with fleet.ctx.reading() as uow:
        return len(uow.releases.list()), len(uow.rollouts.list()), len(uow.audit.list())


def started(response: httpx.Response) -> RolloutStarted:
    assert response.status_code == 201, response.text
    return RolloutStarted.model_validate(response.json())


def refusal(response: httpx.Response, status: int, code: str) -> Any:
    assert response.status_code == status, response.text
    error = ErrorDocument.model_validate(response.json()).error
    assert error.code == code
    return error


def test_a_start_on_held_clusters_is_409_naming_the_rollout_and_clusters(
    api: httpx.Client, fleet: Traced
) -> None:
    first = started(applied(api).post("/v1/rollouts", json=release_doc())).id
    before = stored(fleet)
    response = api.post("/v1/rollouts", json=release_doc(release="v20251118"))
    error = refusal(response, 409, "clusters_held")
    assert f"held by live rollout {first} (release al2023-v20251216, planned)" in error.message
    assert "can-1, prod-1, prod-2" in error.message
    assert [(f.path, f.message) for f in error.fields] == [
        (f"rollouts.{first}", "can-1, prod-1, prod-2")
    ]
    assert stored(fleet) == before


def test_queue_true_stores_the_rollout_queued_behind_the_live_one(
    api: httpx.Client, fleet: Traced
) -> None:
    first = started(applied(api).post("/v1/rollouts", json=release_doc())).id
    fleet.clock.advance(60)
    body = {"release": release_doc(release="v20251118"), "queue": True}
    queued = started(api.post("/v1/rollouts", json=body))
    assert (queued.state, queued.queued_behind) == ("queued", first)
    assert queued.reason is not None
    assert queued.reason.startswith(f"waiting for rollout {first} to end")
    status = RolloutStatus.model_validate(api.get(f"/v1/rollouts/{queued.id}").json())
    assert (status.state, status.queued_behind, status.reason) == ("queued", first, queued.reason)
    listed = api.get("/v1/rollouts").json()["rollouts"]
    assert [(r["state"], r["queuedBehind"]) for r in listed] == [
        ("planned", None),
        ("queued", first),
    ]
    aborted = api.post(f"/v1/rollouts/{queued.id}/abort")
    assert aborted.json() == {"id": queued.id, "state": "aborted"}


def test_the_start_request_is_read_from_yaml_too_and_queue_false_is_refused(
    api: httpx.Client,
) -> None:
    started(applied(api).post("/v1/rollouts", json=release_doc()))
    body = {"release": release_doc(release="v20251118"), "queue": False}
    refusal(api.post("/v1/rollouts", json=body), 409, "clusters_held")
    body["queue"] = True
    queued = started(api.post("/v1/rollouts", content=yaml.safe_dump(body), headers=YAML))
    assert queued.state == "queued"


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"release": "not a manifest", "queue": True}, "release"),
        ({"release": {}, "queue": "yes"}, "queue"),
        ({"release": {}, "queued": True}, "queued"),
    ],
    ids=["release-not-an-object", "queue-not-a-boolean", "unknown-field"],
)
def test_an_invalid_start_request_is_422_naming_the_field(
    api: httpx.Client, fleet: Traced, body: dict[str, Any], path: str
) -> None:
    applied(api)
    before = stored(fleet)
    error = refusal(api.post("/v1/rollouts", json=body), 422, "invalid_request")
    assert path in [f.path for f in error.fields]
    assert stored(fleet) == before


@pytest.mark.parametrize("queue", [False, True], ids=["plain", "queue"])
def test_the_same_release_twice_is_409_even_queued(
    api: httpx.Client, fleet: Traced, queue: bool
) -> None:
    first = started(applied(api).post("/v1/rollouts", json=release_doc())).id
    before = stored(fleet)
    response = api.post("/v1/rollouts", json={"release": release_doc(), "queue": queue})
    error = refusal(response, 409, "release_live")
    assert f"already being rolled out by rollout {first} (planned)" in error.message
    assert stored(fleet) == before


def test_a_release_selecting_no_cluster_is_refused_like_its_plan(
    api: httpx.Client, fleet: Traced
) -> None:
    nowhere = release_doc()
    nowhere["spec"]["clusters"] = {"matchLabels": {"tier": "db"}}
    planned = refusal(applied(api).post("/v1/plans", json=nowhere), 422, "invalid_manifest")
    before = stored(fleet)
    for body in (nowhere, {"release": nowhere, "queue": True}):
        start = refusal(api.post("/v1/rollouts", json=body), 422, "invalid_manifest")
        assert start.message == planned.message
        assert [(f.path, f.message) for f in start.fields] == [
            (
                "spec.clusters.matchLabels",
                "tier=db selects no cluster of fleet 'demo' in rings canary, prod: the release "
                "would roll nothing (rule: a release rolls at least one cluster)",
            )
        ]
    assert stored(fleet) == before


def test_approve_refuses_a_ring_not_waiting_naming_the_state(api: httpx.Client) -> None:
    rid = started(applied(api).post("/v1/rollouts", json=release_doc())).id
    error = refusal(
        api.post(f"/v1/rollouts/{rid}/approve", json={"ring": "canary"}), 409, "command_refused"
    )
    assert error.message == (
        f"rollout {rid} is planned: it is not waiting for an approval (no ring waits, so ring "
        "canary cannot be approved)"
    )
    missing = refusal(api.post(f"/v1/rollouts/{rid}/approve", json={}), 422, "invalid_request")
    assert [f.path for f in missing.fields] == ["ring"]
