"""``GET /v1/clusters/{name}/history`` (a cluster's steps across rollouts, read as
``driftwave cluster history`` reads them through a context) and ``GET /v1/auth/config`` (where a
command line signs in; no authentication). Over a real API on loopback and its own database."""

from __future__ import annotations

from pathlib import Path

import httpx
from fastapi.testclient import TestClient

from fleet.api.app import create_app
from fleet.api.discovery import AuthDiscovery, SignIn
from fleet.api.documents import ErrorDocument
from fleet.documents.history import ClusterHistory

from .helpers import TOKEN_HASHES, Traced, fleet_doc, release_doc, traced_context


def test_a_clusters_history_is_read_its_fleet_named_when_two_fleets_have_it(
    api: httpx.Client,
) -> None:
    for name in ("east", "west"):
        assert api.put(f"/v1/fleets/{name}", json=fleet_doc(name=name)).status_code == 201
    started = api.post("/v1/rollouts", json=release_doc(fleet="east"))
    assert started.status_code == 201, started.text

    ambiguous = api.get("/v1/clusters/can-1/history")
    assert ambiguous.status_code == 409
    error = ErrorDocument.model_validate(ambiguous.json()).error
    assert (error.code, error.message) == (
        "cluster_ambiguous",
        "cluster 'can-1' is in fleets east, west: name one with --fleet",
    )
    found = api.get("/v1/clusters/can-1/history", params={"fleet": "east"})
    assert found.status_code == 200, found.text
    history = ClusterHistory.model_validate(found.json())
    assert (history.cluster, history.fleet, history.observed) == ("can-1", "east", None)
    (step,) = history.steps
    assert (step.rollout, step.ring, step.wave) == (started.json()["id"], "canary", 1)
    quiet = ClusterHistory.model_validate(
        api.get("/v1/clusters/can-1/history", params={"fleet": "west"}).json()
    )
    assert quiet.steps == []


def test_an_unknown_cluster_or_fleet_is_404_and_a_token_is_required(api: httpx.Client) -> None:
    api.put("/v1/fleets/east", json=fleet_doc(name="east"))
    unknown = api.get("/v1/clusters/nope/history")
    assert unknown.status_code == 404
    assert unknown.json()["error"] == {
        "code": "cluster_not_found",
        "message": "cluster 'nope' is in no fleet (fleets searched: east)",
        "fields": [],
    }
    assert api.get("/v1/clusters/can-1/history", params={"fleet": "x"}).status_code == 404
    bare = httpx.get(f"{api.base_url}/v1/clusters/can-1/history")
    assert bare.status_code == 401


def test_auth_config_answers_where_to_sign_in_without_a_token(tmp_path: Path) -> None:
    fleet: Traced = traced_context(tmp_path)
    sign_in = SignIn("https://sso.example.com", "driftwave-cli")
    with TestClient(create_app(fleet.ctx, token_hashes=TOKEN_HASHES, sign_in=sign_in)) as http:
        answer = http.get("/v1/auth/config")
    assert answer.status_code == 200
    assert answer.json() == {
        "oidc": {"issuer": "https://sso.example.com", "clientId": "driftwave-cli"}
    }
    with TestClient(create_app(fleet.ctx, token_hashes=TOKEN_HASHES)) as http:
        tokens_only = AuthDiscovery.model_validate(http.get("/v1/auth/config").json())
    assert tokens_only.oidc is None
