"""The agent's Helm chart, the parts that need no helm binary: its CRDs equal what the models
generate, are structural, and accept the packaged example manifests; its values schema is a
valid JSON Schema that accepts the chart's own values. Helm itself lints, renders and installs
the chart in tests/integration/deploy/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from agent.api.crds import INT_OR_STRING, crd_files

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "deploy" / "helm" / "driftwave-agent"
EXAMPLES = ROOT / "agent" / "examples" / "v1"


def committed_crds() -> dict[str, dict[str, Any]]:
    """The committed CRDs by kind (what helm installs from the chart's crds/)."""
    found = [yaml.safe_load(p.read_text()) for p in sorted((CHART / "crds").glob("*.yaml"))]
    return {c["spec"]["names"]["kind"]: c for c in found}


def test_the_committed_crds_are_the_generated_ones() -> None:
    committed = {p.name: p.read_text() for p in (CHART / "crds").glob("*.yaml")}
    assert committed == crd_files(), "run `make schemas` after changing a model"


def structural_problems(schema: dict[str, Any], path: str = "") -> list[str]:
    problems = []
    for bad in ("$ref", "anyOf", "const", "$defs", "nullable"):
        if bad in schema and not (bad == "anyOf" and schema["anyOf"] == INT_OR_STRING):
            problems.append(f"{path}: {bad}")
    if "anyOf" in schema and not schema.get("x-kubernetes-int-or-string"):
        problems.append(f"{path}: anyOf without x-kubernetes-int-or-string")
    if not (
        {"type", "x-kubernetes-int-or-string", "x-kubernetes-preserve-unknown-fields"} & set(schema)
    ):
        problems.append(f"{path}: no type")
    if "properties" in schema and "additionalProperties" in schema:
        problems.append(f"{path}: properties and additionalProperties")
    for name, sub in (schema.get("properties") or {}).items():
        problems += structural_problems(sub, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        problems += structural_problems(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        problems += structural_problems(schema["additionalProperties"], f"{path}{{}}")
    return problems


def as_json_schema(schema: Any) -> Any:
    """OpenAPI's ``nullable`` and int-or-string as JSON Schema, to validate examples with."""
    if isinstance(schema, list):
        return [as_json_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: as_json_schema(v) for k, v in schema.items() if not k.startswith("x-kubernetes")}
    out.pop("nullable", None)
    if schema.get("x-kubernetes-int-or-string"):
        out["type"] = ["integer", "string"]
    if schema.get("nullable") and "type" in out:
        out["type"] = [*([out["type"]] if isinstance(out["type"], str) else out["type"]), "null"]
    return out


def test_crds_are_structural_and_accept_the_examples() -> None:
    crds = committed_crds()
    assert set(crds) == {"NodePool", "NodeClaim", "EC2NodeClass"}
    for kind, crd in crds.items():
        version = crd["spec"]["versions"][0]
        assert crd["spec"]["scope"] == "Cluster"
        assert version["subresources"] == {"status": {}}
        assert structural_problems(version["schema"]["openAPIV3Schema"]) == [], kind
    checked = 0
    for path in sorted(EXAMPLES.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc or doc.get("kind") not in crds:
                continue
            schema = as_json_schema(
                crds[doc["kind"]]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
            )
            jsonschema.validate(doc, schema)
            checked += 1
    assert checked >= 5
    bad = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "x"},
           "spec": {"template": {"spec": {"requirements": "all"}}}}  # fmt: skip
    schema = as_json_schema(crds["NodePool"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


def test_the_values_schema_accepts_the_chart_values() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    validator = jsonschema.Draft7Validator(schema)
    with pytest.raises(jsonschema.ValidationError, match="does not match"):
        validator.validate(values)  # clusterName has no default: the operator names it
    validator.validate({**values, "clusterName": "prod-1"})
    assert set(schema["properties"]) - {"global"} == set(values), "every value is described"
