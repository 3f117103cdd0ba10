"""The JSON Schemas in deploy/schemas are the ones the models produce (regenerate: make schemas)."""

from __future__ import annotations

import json
from pathlib import Path

from agent.api.nodepool import NodePool
from agent.api.schemas import schema_for, write_schemas

ROOT = Path(__file__).resolve().parents[4]


def test_checked_in_schemas_are_current(tmp_path: Path) -> None:
    for fresh in write_schemas(tmp_path):
        checked_in = ROOT / "deploy" / "schemas" / fresh.name
        assert checked_in.exists(), f"run make schemas: {fresh.name} is missing"
        assert json.loads(checked_in.read_text()) == json.loads(fresh.read_text()), (
            f"run make schemas: {fresh.name} is stale"
        )


def test_schema_uses_camel_case_and_refuses_unknown_fields() -> None:
    schema = schema_for(NodePool)
    spec = schema["$defs"]["NodePoolSpec"]
    assert spec["additionalProperties"] is False
    assert "template" in spec["properties"]
    assert "consolidateAfter" in schema["$defs"]["Disruption"]["properties"]
