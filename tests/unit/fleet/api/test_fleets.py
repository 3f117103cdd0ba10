"""The fleet routes: applying a Fleet manifest as JSON or YAML, what changed, the fleets and
their clusters, and every way a body can be refused without changing anything."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
import yaml

from fleet.api.bodies import MAX_BODY
from fleet.api.documents import ApplyDocument, ErrorDocument, FleetsDocument
from fleet.documents.clusters import ClustersDocument
from fleet.service.commands.fleets import fleet_names

from .helpers import YAML, Traced, fleet_doc, release_doc


def error_of(response: httpx.Response) -> tuple[str, list[tuple[str, str]]]:
    """The error code and the (path, message) of each field of an error response."""
    error = ErrorDocument.model_validate(response.json()).error
    return error.code, [(f.path, f.message) for f in error.fields]


def test_a_fleet_is_created_then_reapplied_as_yaml_and_changes_are_reported(
    api: httpx.Client,
) -> None:
    created = api.put("/v1/fleets/demo", json=fleet_doc())
    assert created.status_code == 201
    assert created.headers["location"] == "/v1/fleets/demo"
    first = ApplyDocument.model_validate(created.json())
    assert (first.generation, sorted(first.added), first.unchanged) == (
        1,
        ["can-1", "prod-1", "prod-2"],
        False,
    )
    assert first.accounts_added == ["main"]
    assert first.warnings == []

    again = api.put("/v1/fleets/demo", content=yaml.safe_dump(fleet_doc()), headers=YAML)
    assert again.status_code == 200
    assert "location" not in again.headers
    same = ApplyDocument.model_validate(again.json())
    assert (same.unchanged, same.generation) == (True, 1), "a no-op keeps the generation"

    smaller = fleet_doc({"canary": ["can-1"], "prod": ["prod-1"]})
    changed = ApplyDocument.model_validate(api.put("/v1/fleets/demo", json=smaller).json())
    assert (changed.generation, changed.removed, changed.added) == (2, ["prod-2"], [])

    smaller["spec"]["notifications"] = [{"name": "chat", "url": "https://hooks.example/x"}]
    hooked = ApplyDocument.model_validate(api.put("/v1/fleets/demo", json=smaller).json())
    assert (hooked.unchanged, hooked.generation) == (False, 3)
    assert (hooked.webhooks_added, hooked.fleet_changed) == (["chat"], ["notifications"])
    del smaller["spec"]["notifications"]
    unhooked = ApplyDocument.model_validate(api.put("/v1/fleets/demo", json=smaller).json())
    assert (unhooked.unchanged, unhooked.webhooks_removed) == (False, ["chat"])


def test_fleets_and_their_clusters_are_listed(api: httpx.Client) -> None:
    assert FleetsDocument.model_validate(api.get("/v1/fleets").json()).fleets == []
    api.put("/v1/fleets/demo", json=fleet_doc())
    api.put("/v1/fleets/other", json=fleet_doc({"canary": ["o-1"]}, name="other"))
    assert api.get("/v1/fleets").json() == {"fleets": ["demo", "other"]}
    listed = ClustersDocument.model_validate(api.get("/v1/fleets/demo/clusters").json())
    assert listed.fleet == "demo"
    assert [(c.name, c.ring) for c in listed.clusters] == [
        ("can-1", "canary"),
        ("prod-1", "prod"),
        ("prod-2", "prod"),
    ]
    first = listed.clusters[0]
    assert (first.account, first.region, first.endpoint) == (
        "main",
        "us-east-1",
        "https://can-1.agents.invalid",
    )
    assert first.last_seen is None


def test_an_unknown_fleets_clusters_are_404(api: httpx.Client) -> None:
    response = api.get("/v1/fleets/nope/clusters")
    assert response.status_code == 404
    code, _ = error_of(response)
    assert code == "fleet_not_found"
    assert "nope" in response.json()["error"]["message"]


def test_the_path_must_name_the_manifests_fleet(api: httpx.Client, fleet: Traced) -> None:
    response = api.put("/v1/fleets/other", json=fleet_doc())
    assert response.status_code == 422
    code, fields = error_of(response)
    assert code == "invalid_request"
    assert [path for path, _ in fields] == ["metadata.name"]
    assert "'demo'" in fields[0][1]
    assert "'other'" in fields[0][1]
    assert fleet_names(fleet.ctx) == []


def test_an_invalid_fleet_names_each_field_and_stores_nothing(
    api: httpx.Client, fleet: Traced
) -> None:
    doc = fleet_doc()
    doc["spec"]["clusters"][0]["region"] = "mars-1"
    doc["spec"]["accounts"][0]["accountId"] = "123"
    doc["spec"]["surprise"] = True
    response = api.put("/v1/fleets/demo", json=doc)
    assert response.status_code == 422
    code, fields = error_of(response)
    assert code == "invalid_manifest"
    paths = {path for path, _ in fields}
    assert paths == {
        "spec.clusters[0].region",
        "spec.accounts[0].accountId",
        "spec.surprise",
    }
    assert "3 rule(s)" in response.json()["error"]["message"]
    assert fleet_names(fleet.ctx) == []


def test_plain_http_to_an_agent_off_loopback_is_refused_naming_the_field_and_the_rule(
    api: httpx.Client, fleet: Traced
) -> None:
    doc = fleet_doc()
    doc["spec"]["clusters"][1]["agent"]["endpoint"] = "http://prod-1.agents.example:9443"
    response = api.put("/v1/fleets/demo", json=doc)
    assert response.status_code == 422
    code, fields = error_of(response)
    assert code == "invalid_manifest"
    assert [path for path, _ in fields] == ["spec.clusters[1].agent.endpoint"]
    assert "rule: https:// for an agent off loopback" in fields[0][1]
    assert fleet_names(fleet.ctx) == []


def test_a_manifest_of_another_kind_is_refused_at_kind(api: httpx.Client) -> None:
    response = api.put("/v1/fleets/demo", json=release_doc())
    assert response.status_code == 422
    _, fields = error_of(response)
    assert fields[0][0] == "kind"
    assert "expected a driftwave.io/v1alpha1 Fleet" in fields[0][1]


@pytest.mark.parametrize(
    ("content", "content_type", "status", "says"),
    [
        (b'{"kind": ', "application/json", 400, "not JSON"),
        (b'{"a": 1, "a": 2}', "application/json", 400, "duplicate key 'a'"),
        (b"kind: [Fleet", "application/yaml", 400, "not YAML"),
        (b"a: 1\na: 2\n", "application/yaml", 400, "duplicate key"),
        (b"  \n", "application/json", 400, "empty"),
        (b"\xff\xfe{}", "application/json", 400, "not UTF-8"),
        (b"a=b", "application/x-www-form-urlencoded", 415, "application/yaml"),
        (b"{}", "application/json; charset=latin-1", 415, "UTF-8"),
    ],
    ids=["json", "json-duplicate", "yaml", "yaml-duplicate", "empty", "utf8", "form", "charset"],
)
def test_a_malformed_body_is_refused_and_changes_nothing(
    api: httpx.Client,
    fleet: Traced,
    content: bytes,
    content_type: str,
    status: int,
    says: str,
) -> None:
    response = api.put("/v1/fleets/demo", content=content, headers={"Content-Type": content_type})
    assert response.status_code == status
    error = ErrorDocument.model_validate(response.json()).error
    assert error.code == {400: "bad_request", 415: "unsupported_media_type"}[status]
    assert says in error.message
    assert fleet_names(fleet.ctx) == []


def test_a_body_without_content_type_is_read_as_json(api: httpx.Client) -> None:
    response = api.put("/v1/fleets/demo", content=json.dumps(fleet_doc()).encode())
    assert response.status_code == 201


def test_a_json_variant_and_a_yaml_variant_content_type_are_accepted(api: httpx.Client) -> None:
    as_json = json.dumps(fleet_doc()).encode()
    response = api.put(
        "/v1/fleets/demo",
        content=as_json,
        headers={"Content-Type": "application/merge-patch+json; charset=UTF-8"},
    )
    assert response.status_code == 201
    response = api.put(
        "/v1/fleets/demo",
        content=yaml.safe_dump(fleet_doc()),
        headers={"Content-Type": "text/yaml"},
    )
    assert response.status_code == 200


def test_a_body_over_the_limit_is_413(api: httpx.Client, fleet: Traced) -> None:
    response = api.put("/v1/fleets/demo", content=b" " * (MAX_BODY + 1))
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"
    assert response.json()["error"]["message"] == "the request body is over 1048576 bytes"

    def chunks() -> Iterator[bytes]:
        for _ in range(MAX_BODY // 65536 + 2):
            yield b" " * 65536

    streamed = api.put("/v1/fleets/demo", content=chunks())
    assert streamed.status_code == 413
    assert fleet_names(fleet.ctx) == []


def test_a_body_of_exactly_the_limit_is_read(api: httpx.Client, fleet: Traced) -> None:
    """1 MiB (docs/api-reference.md, docs/cli-reference.md) is read whole; one byte more is not."""
    assert MAX_BODY == 1 << 20
    document = json.dumps(fleet_doc()).encode()
    at_limit = document + b" " * (MAX_BODY - len(document))
    response = api.put(
        "/v1/fleets/demo", content=at_limit, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 201, response.text
    over = api.put(
        "/v1/fleets/demo", content=at_limit + b" ", headers={"Content-Type": "application/json"}
    )
    assert over.status_code == 413
    assert fleet_names(fleet.ctx) == ["demo"]


def test_json_numbers_and_strings_keep_their_types_through_validation(api: httpx.Client) -> None:
    doc = fleet_doc()
    doc["spec"]["clusters"][0]["labels"] = {"tier": "yes", "since": "2026-01-01"}
    response = api.put("/v1/fleets/demo", json=doc)
    assert response.status_code == 201, response.text
    clusters = api.get("/v1/fleets/demo/clusters").json()["clusters"]
    assert clusters[0]["labels"] == {"tier": "yes", "since": "2026-01-01"}
