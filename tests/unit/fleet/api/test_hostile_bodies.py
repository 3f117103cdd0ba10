"""Hostile requests to the fleet API, in process: a YAML alias bomb posted with a viewer token
is refused at once (413, naming the limit) with the process's memory unchanged; an explicit tag
that does not fit is a 400 naming the line; text a database cannot store (NUL, unpaired
surrogates) is a 422 naming the field or parameter; a token put in ``credentialsRef`` is never
echoed in the 422 body."""

from __future__ import annotations

import json
import resource
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from common.auth import hash_token
from fleet.api.app import create_app
from fleet.api.rbac import AccessControl, Grant
from tests.unit.common.test_yamlsafe import laughs

from .helpers import RINGS, STRATEGY, fleet_doc, release_doc, traced_context

VIEWER = {"Authorization": "Bearer viewer-token"}
ADMIN = {"Authorization": "Bearer admin-token"}
YAML = {"Content-Type": "application/yaml"}
SECRET = "dw_4f9a8c7e6b5d4c3b2a1f0e9d8c7b6a59"


@pytest.fixture
def http(tmp_path: Path) -> Iterator[TestClient]:
    access = AccessControl(
        {
            hash_token("viewer-token"): Grant("vera", "viewer"),
            hash_token("admin-token"): Grant("root", "admin"),
        }
    )
    with TestClient(create_app(traced_context(tmp_path).ctx, access=access)) as client:
        yield client


def test_an_alias_bomb_posted_by_a_viewer_is_413_and_costs_no_memory(http: TestClient) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    response = http.post("/v1/plans", content=laughs(12), headers={**VIEWER, **YAML})
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert response.status_code == 413, response.text
    error = response.json()["error"]
    assert error["code"] == "payload_too_large"
    assert "aliases expand to more than 100000 nodes (limit: alias expansion)" in error["message"]
    assert grown_kib < 50_000


def test_a_value_that_does_not_fit_its_tag_is_400_naming_the_line(http: TestClient) -> None:
    body = "apiVersion: driftwave.io/v1alpha1\nkind: Release\nspec:\n  soak: !!float x\n"
    response = http.post("/v1/plans", content=body, headers={**VIEWER, **YAML})
    assert response.status_code == 400, response.text
    assert "line 4, column 9: the value cannot be read as !!float" in response.text


def fleet_with(**changes: Any) -> dict[str, Any]:
    doc = fleet_doc(RINGS)
    doc["spec"].update(changes)
    return doc


@pytest.mark.parametrize("bad", ["\x00", "\ud800"])
def test_unstorable_text_in_a_freeze_reason_is_422_naming_it(http: TestClient, bad: str) -> None:
    freeze = {"start": "2026-01-01T00:00:00Z", "end": "2026-01-02T00:00:00Z", "reason": f"a{bad}"}
    body = json.dumps(fleet_with(freezes=[freeze]))
    response = http.put("/v1/fleets/demo", content=body, headers=ADMIN)
    assert response.status_code == 422, response.text
    (field,) = response.json()["error"]["fields"]
    assert field["path"] == "spec.freezes[0].reason"
    assert "U+0000 or unpaired surrogates" in field["message"]
    assert http.get("/v1/fleets", headers=ADMIN).json()["fleets"] == []


def test_a_nul_in_a_yaml_manifest_name_is_422_naming_it(http: TestClient) -> None:
    body = 'apiVersion: driftwave.io/v1alpha1\nkind: Fleet\nmetadata: {name: "de\\0mo"}\nspec: {}\n'
    response = http.put("/v1/fleets/demo", content=body, headers={**ADMIN, **YAML})
    assert response.status_code == 422, response.text
    assert response.json()["error"]["fields"][0]["path"] == "metadata.name"


@pytest.mark.parametrize(
    "path", ["/v1/fleets/de%00mo/clusters", "/v1/rollouts/r%00x", "/v1/rollouts/r%00x/audit"]
)
def test_a_nul_in_a_path_is_422_naming_the_parameter(http: TestClient, path: str) -> None:
    response = http.get(path, headers=VIEWER)
    assert response.status_code == 422, response.text
    assert "U+0000" in response.json()["error"]["message"]


def test_a_token_in_credentials_ref_is_not_in_the_422_body(http: TestClient) -> None:
    doc = fleet_doc(RINGS)
    doc["spec"]["clusters"][0]["agent"]["credentialsRef"] = SECRET
    for body, headers in ((json.dumps(doc), ADMIN), (json.dumps(doc), {**ADMIN, **YAML})):
        response = http.put("/v1/fleets/demo", content=body, headers=headers)
        assert response.status_code == 422, response.text
        assert "spec.clusters[0].agent.credentialsRef" in response.text
        assert SECRET not in response.text
        assert SECRET[:8] not in response.text


def test_plans_still_work_for_a_viewer(http: TestClient) -> None:
    assert http.put("/v1/fleets/demo", json=fleet_doc(RINGS), headers=ADMIN).status_code == 201
    response = http.post("/v1/plans", json=release_doc(STRATEGY), headers=VIEWER)
    assert response.status_code == 200, response.text
