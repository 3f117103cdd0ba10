"""The fleet's Helm chart and Grafana dashboard, the parts that need no helm binary: the values
schema is a valid JSON Schema describing every value, accepting the chart's values once a
database and a broker are named, and refusing them before; every expression of the dashboard
(panels and variables) reads metrics the fleet's or the agent's code exports, and every metric
they export has a panel. Helm itself lints, renders and installs the chart in
tests/integration/deploy/."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.support.promql import exported_metrics, metric_names, unexported

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "deploy" / "helm" / "driftwave-fleet"
DASHBOARD = ROOT / "deploy" / "grafana" / "driftwave.json"
NAMED = {
    "database": {"url": "postgresql://driftwave:pw@db:5432/driftwave"},
    "broker": {"existingSecret": "driftwave-broker"},
}


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    return exported_metrics(tmp_path_factory.mktemp("metrics"))


def merged(values: dict[str, Any], more: dict[str, Any]) -> dict[str, Any]:
    out = dict(values)
    for key, value in more.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) else value
    return out


def test_the_values_schema_accepts_the_chart_values_once_the_database_is_named() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    validator = jsonschema.Draft7Validator(schema)
    refused = sorted(".".join(map(str, e.absolute_path)) for e in validator.iter_errors(values))
    assert refused == ["broker", "database"], "the operator names the database and the broker"
    validator.validate(merged(values, NAMED))
    assert set(schema["properties"]) - {"global"} == set(values), "every value is described"


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def expressions(board: dict[str, Any]) -> list[str]:
    """Every PromQL expression of the dashboard: the panels' targets, and the metric of each
    ``label_values(metric, label)`` variable."""
    found = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    for variable in board["templating"]["list"]:
        if variable["type"] == "query":
            query = variable["query"]["query"]
            matched = re.fullmatch(r"label_values\((\w+), *(\w+)\)", query)
            assert matched, f"variable {variable['name']}: {query}"
            found.append(matched.group(1))
    return found


def test_every_dashboard_expression_reads_an_exported_metric(exported: set[str]) -> None:
    board = dashboard()
    exprs = expressions(board)
    assert len(exprs) >= 20
    assert unexported(exprs, exported) == {}
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    for panel in board["panels"]:
        if panel["type"] != "row":
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}


def test_every_exported_metric_has_a_panel(exported: set[str]) -> None:
    used = {name for expr in expressions(dashboard()) for name in metric_names(expr)}
    shown = {name for name in exported if not name.endswith("_created")}
    assert shown - used == set()


def test_metric_names_reads_what_promql_selects() -> None:
    expr = (
        'sum by (state) (max without (instance, pod) (driftwave_rollouts{state="halted"} '
        'offset 1h)) or vector(0) > time() - x_seconds{a=~"$v"}[$__rate_interval]'
    )
    assert metric_names(expr) == {"driftwave_rollouts", "x_seconds"}
    assert unexported(["nope_total + driftwave_rollouts"], {"driftwave_rollouts"}) == {
        "nope_total + driftwave_rollouts": {"nope_total"}
    }
