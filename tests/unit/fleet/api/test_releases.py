"""The routes that take a Release: its plan (what the CLI prints, no side effect) and starting
its rollout (201, Location, the rollout's own trace), and what refuses either."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import yaml
from typer.testing import CliRunner

from driftwave.cli.rollout import rollout_app
from fleet.api.documents import ErrorDocument, PlanDocument
from fleet.documents.rollouts import RolloutStarted, RolloutStatus
from fleet.service.reads.rollouts import list_rollouts

from .helpers import YAML, Traced, fleet_doc, release_doc

EXAMPLES = Path(__file__).resolve().parents[4] / "fleet" / "examples"
AT = "2026-01-05T09:00:00Z"
PARENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{PARENT_TRACE}-{PARENT_SPAN}-01"


def audit_count(fleet: Traced) -> int:
    with fleet.ctx.reading() as uow:
        return len(uow.audit.list())


def test_the_plan_is_what_the_cli_prints_and_changes_nothing(
    api: httpx.Client, fleet: Traced, tmp_path: Path
) -> None:
    fleet_text = (EXAMPLES / "fleet.yaml").read_text()
    release = yaml.safe_load((EXAMPLES / "release.yaml").read_text())
    del release["spec"]["strategy"]["rings"][2]["requireApproval"]  # draws a warning
    release_file = tmp_path / "release.yaml"
    release_file.write_text(yaml.safe_dump(release))
    assert api.put("/v1/fleets/payments", content=fleet_text, headers=YAML).status_code == 201
    before = audit_count(fleet)
    response = api.post(f"/v1/plans?at={AT}", content=release_file.read_text(), headers=YAML)
    assert response.status_code == 200, response.text
    document = response.json()
    PlanDocument.model_validate(document)
    warnings = document.pop("warnings")
    assert [w["path"] for w in warnings] == ["spec.strategy.rings[2].requireApproval"]
    arguments = [str(release_file), "--fleet", str(EXAMPLES / "fleet.yaml"), "--at", AT]
    printed = CliRunner().invoke(rollout_app, ["plan", *arguments, "--json"])
    assert printed.exit_code == 0, printed.stderr
    assert document == json.loads(printed.stdout)
    assert warnings[0]["message"] in printed.stderr
    assert list_rollouts(fleet.ctx) == []
    assert audit_count(fleet) == before


def test_the_plan_is_made_at_the_contexts_time_by_default(api: httpx.Client) -> None:
    api.put("/v1/fleets/demo", json=fleet_doc())
    plan = PlanDocument.model_validate(api.post("/v1/plans", json=release_doc()).json())
    assert plan.at == "2026-11-02T09:00:00Z"
    assert [r.name for r in plan.rings] == ["canary", "prod"]
    prod = plan.rings[1]
    assert prod.waits_for_approval
    assert [[c.name for c in w.clusters] for w in prod.waves or []] == [["prod-1"], ["prod-2"]]


def test_a_plan_needs_a_known_fleet_a_fitting_release_and_a_real_time(
    api: httpx.Client,
) -> None:
    unknown = api.post("/v1/plans", json=release_doc())
    assert unknown.status_code == 404
    error = ErrorDocument.model_validate(unknown.json()).error
    assert error.code == "fleet_not_found"
    assert [f.path for f in error.fields] == ["spec.fleet"]
    api.put("/v1/fleets/demo", json=fleet_doc())
    unfit = api.post("/v1/plans", json=release_doc([{"name": "prod"}, {"name": "canary"}]))
    assert unfit.status_code == 422
    fields = ErrorDocument.model_validate(unfit.json()).error.fields
    assert fields[0].path.startswith("spec.strategy.rings")
    assert "order" in fields[0].message
    missing = api.post("/v1/plans", json=release_doc([{"name": "edge"}]))
    assert missing.status_code == 422
    assert missing.json()["error"]["fields"][0]["path"] == "spec.strategy.rings[0].name"
    bad_at = api.post("/v1/plans?at=tomorrow", json=release_doc())
    assert bad_at.status_code == 422
    assert bad_at.json()["error"]["fields"][0]["path"] == "at"


def test_an_invalid_release_names_its_fields(api: httpx.Client, fleet: Traced) -> None:
    api.put("/v1/fleets/demo", json=fleet_doc())
    doc = release_doc([{"name": "canary", "maxConcurrency": 0, "soak": "soon"}])
    for path in ("/v1/plans", "/v1/rollouts"):
        response = api.post(path, json=doc)
        assert response.status_code == 422
        error = ErrorDocument.model_validate(response.json()).error
        assert error.code == "invalid_manifest"
        assert {f.path for f in error.fields} == {
            "spec.strategy.rings[0].maxConcurrency",
            "spec.strategy.rings[0].soak",
        }
    assert list_rollouts(fleet.ctx) == []


def test_a_rollout_starts_as_planned_with_its_location_and_audit(api: httpx.Client) -> None:
    api.put("/v1/fleets/demo", json=fleet_doc())
    response = api.post(
        "/v1/rollouts",
        content=yaml.safe_dump(release_doc()),
        headers=YAML,
    )
    assert response.status_code == 201, response.text
    started = RolloutStarted.model_validate(response.json())
    assert (started.state, started.waves, started.warnings) == ("planned", 3, [])
    # a planned rollout's answer names no rollout it waits for: the fields are absent, not null
    assert sorted(response.json()) == ["id", "state", "traceId", "warnings", "waves"]
    assert response.headers["location"] == f"/v1/rollouts/{started.id}"
    status = RolloutStatus.model_validate(api.get(response.headers["location"]).json())
    assert (status.id, status.state, status.release) == (started.id, "planned", "al2023-v20251216")
    assert status.trace_id == started.trace_id
    audit = api.get(f"/v1/rollouts/{started.id}/audit").json()["entries"]
    assert [(e["action"], e["actor"]) for e in audit] == [("rollout.start", "api-token")]


def test_a_rollout_runs_in_its_own_trace_linked_from_the_request_span(
    api: httpx.Client, fleet: Traced
) -> None:
    api.put("/v1/fleets/demo", json=fleet_doc())
    response = api.post("/v1/rollouts", json=release_doc(), headers={"traceparent": TRACEPARENT})
    started = response.json()
    version, trace_id, span_id, _ = response.headers["traceparent"].split("-")
    assert (version, trace_id) == ("00", PARENT_TRACE)
    server = fleet.server_span("POST /v1/rollouts")
    assert server.parent is not None
    assert f"{server.parent.span_id:016x}" == PARENT_SPAN
    assert f"{server.context.span_id:016x}" == span_id
    assert server.attributes is not None
    assert server.attributes["http.route"] == "/v1/rollouts"
    assert server.attributes["http.response.status_code"] == 201
    assert server.attributes["driftwave.rollout"] == started["id"]
    assert server.attributes["driftwave.rollout.trace_id"] == started["traceId"]
    (root,) = fleet.finished(f"rollout {started['id']}")
    assert root.parent is None
    assert f"{root.context.trace_id:032x}" == started["traceId"]
    with fleet.ctx.reading() as uow:
        assert uow.rollouts.get(started["id"]).root_span_id == f"{root.context.span_id:016x}"
    entry = api.get(f"/v1/rollouts/{started['id']}/audit").json()["entries"][0]
    assert entry["traceId"] == started["traceId"]


def test_the_fleet_apply_span_is_a_child_of_the_request_span(
    api: httpx.Client, fleet: Traced
) -> None:
    api.put("/v1/fleets/demo", json=fleet_doc(), headers={"traceparent": TRACEPARENT})
    server = fleet.server_span("PUT /v1/fleets/{name}")
    (apply,) = fleet.finished("fleet.apply")
    assert f"{server.context.trace_id:032x}" == PARENT_TRACE
    assert apply.parent is not None
    assert apply.parent.span_id == server.context.span_id


def test_a_rollout_of_an_unknown_fleet_is_404_and_creates_nothing(
    api: httpx.Client, fleet: Traced
) -> None:
    response = api.post("/v1/rollouts", json=release_doc())
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "fleet_not_found"
    assert list_rollouts(fleet.ctx) == []
    assert audit_count(fleet) == 0


def test_a_release_name_taken_by_another_release_is_409(api: httpx.Client, fleet: Traced) -> None:
    api.put("/v1/fleets/demo", json=fleet_doc())
    assert api.post("/v1/rollouts", json=release_doc()).status_code == 201
    before = audit_count(fleet)
    other = release_doc([{"name": "canary", "soak": "5m"}])
    response = api.post("/v1/rollouts", json=other)
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "release_conflict"
    assert len(list_rollouts(fleet.ctx)) == 1
    assert audit_count(fleet) == before


@pytest.mark.parametrize("path", ["/v1/plans", "/v1/rollouts"])
def test_a_release_body_must_be_json_or_yaml(api: httpx.Client, path: str) -> None:
    response = api.post(path, content=b"<release/>", headers={"Content-Type": "application/xml"})
    assert response.status_code == 415
    assert api.post(path, content=b"").status_code == 400
