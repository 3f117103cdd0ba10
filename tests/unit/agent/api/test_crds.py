"""The CRD generator lays Karpenter's admission rules (agent/api/crdrules.py) on the models'
schema: every rule at its path, Karpenter's defaults, nothing ``nullable``. That the API server
enforces them as Karpenter's CRDs do is tests/integration/kube/test_crd_admission.py's part."""

from __future__ import annotations

from typing import Any

import pytest

from agent.api.crds import RULES, all_crds, apply_rules, crd_files


def _schemas() -> dict[str, dict[str, Any]]:
    return {
        c["spec"]["names"]["kind"]: c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        for c in all_crds()
    }


def _walk(schema: Any) -> list[dict[str, Any]]:
    if isinstance(schema, list):
        return [n for item in schema for n in _walk(item)]
    if not isinstance(schema, dict):
        return []
    return [schema, *(n for value in schema.values() for n in _walk(value))]


def _at(schema: dict[str, Any], *names: str) -> dict[str, Any]:
    for name in names:
        schema = schema["items"] if name == "[]" else schema["properties"][name]
    return schema


def test_rules_are_set_and_removed_at_their_paths() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "a": {"type": "array", "minItems": 1, "items": {"type": "string"}},
            "m": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    }
    rule = {"message": "m", "rule": "self.size() != 0"}
    apply_rules(
        schema,
        {
            "a": {"minItems": None, "x-kubernetes-validations": [rule]},
            "a[]": {"pattern": "^x$"},
            "m{}": {"maxLength": 3},
            "": {"required": ["a"]},
        },
    )
    assert schema["properties"]["a"] == {
        "type": "array",
        "items": {"type": "string", "pattern": "^x$"},
        "x-kubernetes-validations": [rule],
    }
    assert schema["properties"]["m"]["additionalProperties"] == {"type": "string", "maxLength": 3}
    assert schema["required"] == ["a"]


def test_a_rule_for_a_field_the_schema_lacks_is_an_error() -> None:
    with pytest.raises(KeyError, match=r"'spec\.disruption\.expireAfter'"):
        apply_rules(
            {"properties": {"spec": {"properties": {}}}}, {"spec.disruption.expireAfter": {}}
        )


def test_every_kind_carries_karpenters_cel_rules() -> None:
    counts = {
        kind: sum(len(node.get("x-kubernetes-validations", [])) for node in _walk(schema))
        for kind, schema in _schemas().items()
    }
    assert counts == {"NodePool": 20, "NodeClaim": 10, "EC2NodeClass": 54}, "Karpenter v1.14.1's"
    for schema in _schemas().values():
        for node in _walk(schema):
            for rule in node.get("x-kubernetes-validations", []):
                assert set(rule) == {"message", "rule"}, rule
                assert rule["message"], rule
    assert set(RULES) == set(_schemas())


def test_nothing_is_nullable_and_shared_rules_are_copies() -> None:
    for schema in _schemas().values():
        assert not [n for n in _walk(schema) if "nullable" in n]
    pool = _schemas()["NodePool"]
    taints = _at(pool, "spec", "template", "spec", "taints")
    startup = _at(pool, "spec", "template", "spec", "startupTaints")
    assert taints == startup
    assert taints is not startup


def test_karpenters_defaults() -> None:
    pool, nodeclass = _schemas()["NodePool"], _schemas()["EC2NodeClass"]
    disruption = _at(pool, "spec", "disruption")
    assert disruption["default"] == {"consolidateAfter": "0s"}
    assert disruption["required"] == ["consolidateAfter"]
    assert "default" not in disruption["properties"]["consolidateAfter"]
    assert disruption["properties"]["budgets"]["default"] == [{"nodes": "10%"}]
    assert disruption["properties"]["consolidationPolicy"]["default"] == "WhenEmptyOrUnderutilized"
    assert _at(pool, "spec", "template", "spec", "expireAfter")["default"] == "720h"
    assert _at(pool, "status", "nodes")["default"] == 0
    assert _at(nodeclass, "spec", "metadataOptions")["default"] == {
        "httpEndpoint": "enabled",
        "httpProtocolIPv6": "disabled",
        "httpPutResponseHopLimit": 1,
        "httpTokens": "required",
    }
    assert "required" not in nodeclass
    limits = _at(pool, "spec", "limits")["additionalProperties"]
    assert limits["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    assert limits["x-kubernetes-int-or-string"] is True
    assert limits["pattern"].startswith("^(\\+|-)?")


def test_the_files_spell_every_part_out() -> None:
    for name, text in crd_files().items():
        assert "&id" not in text, f"{name}: a YAML anchor"
