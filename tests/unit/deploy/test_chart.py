"""The agent's Helm chart, rendered (tests/support/helmrender.py: no helm binary can be
installed here) and validated against the Kubernetes 1.31 OpenAPI schemas
(kubernetes-validate); its CRDs equal what the models generate, are structural, and accept the
packaged example manifests; RBAC differs by driver; the container's arguments are ones the real
CLI accepts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from agent.api.crds import INT_OR_STRING, crd_files
from tests.support.helmrender import Chart, TemplateError

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "deploy" / "helm" / "driftwave-agent"
EXAMPLES = ROOT / "agent" / "examples" / "v1"
VALUES = {"clusterName": "prod-1", "region": "us-east-1"}
ROLE = "arn:aws:iam::111122223333:role/driftwave-agent"


def objects(values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return Chart(CHART).objects({**VALUES, **(values or {})})


def by_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def test_the_committed_crds_are_the_generated_ones() -> None:
    committed = {p.name: p.read_text() for p in (CHART / "crds").glob("*.yaml")}
    assert committed == crd_files(), "run `make schemas` after changing a model"


@pytest.mark.parametrize(
    "values",
    [
        {},
        {"driver": "karpenter"},
        {"networkPolicy": {"enabled": False}, "podDisruptionBudget": {"enabled": False}},
        {"interruptionQueue": "https://sqs.us-east-1.amazonaws.com/111122223333/queue",
         "networkPolicy": {"fleetCIDRs": ["10.8.0.0/16", "10.9.0.0/16"]},
         "serviceAccount": {"annotations": {"eks.amazonaws.com/role-arn": ROLE}}},
    ],
)  # fmt: skip
def test_every_object_is_valid_kubernetes(values: dict[str, Any]) -> None:
    docs = objects(values)
    assert len(docs) >= 10
    for doc in docs:
        kubernetes_validate.validate(doc, "1.31", strict=True)


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
    crds = {c["spec"]["names"]["kind"]: c for c in by_kind(objects(), "CustomResourceDefinition")}
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


def rules(docs: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    role = by_kind(docs, "ClusterRole")[0]
    return {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_rbac_follows_the_driver() -> None:
    native, karpenter = rules(objects()), rules(objects({"driver": "karpenter"}))
    for granted in (native, karpenter):
        assert ("karpenter.k8s.aws", "ec2nodeclasses", "patch") in granted
        assert ("", "pods", "watch") in granted
        assert not any(verb in ("*", "escalate", "bind") for _, _, verb in granted)
    assert ("karpenter.sh", "nodeclaims", "create") in native
    assert ("", "nodes", "delete") in native
    assert ("", "pods/eviction", "create") in native
    assert not {r for r in karpenter if r[2] in ("create", "delete")}, "karpenter: no creations"
    assert ("", "pods", "create") not in native, "the agent never makes pods"
    role = by_kind(objects(), "Role")[0]
    lease = next(r for r in role["rules"] if r.get("resourceNames"))
    assert lease["resourceNames"] == ["driftwave-agent"]


def test_the_deployment() -> None:
    deployment = by_kind(objects(), "Deployment")[0]
    spec = deployment["spec"]["template"]["spec"]
    container = spec["containers"][0]
    assert deployment["spec"]["replicas"] == 2
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert "--leader-elect" in container["args"]
    assert container["args"][container["args"].index("--lease-namespace") + 1] == "driftwave"
    with pytest.raises(TemplateError, match="clusterName is required"):
        Chart(CHART).objects({"clusterName": ""})


def test_the_container_arguments_are_the_real_commands() -> None:
    container = by_kind(objects(), "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]
    args = [str(a) for a in container["args"]]
    token = Path(args[args.index("--token-file") + 1])
    args[args.index("--token-file") + 1] = __file__  # a readable file in place of the Secret
    done = subprocess.run(
        [sys.executable, "-m", "driftwave", *args],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert "not running in a cluster" in done.stderr, done.stderr
    assert token == Path("/var/run/driftwave/token")


def test_networkpolicy_and_pdb_can_be_turned_off() -> None:
    docs = objects({"networkPolicy": {"enabled": False}, "podDisruptionBudget": {"enabled": False}})
    assert not by_kind(docs, "NetworkPolicy")
    assert not by_kind(docs, "PodDisruptionBudget")
    policy = by_kind(objects({"networkPolicy": {"fleetCIDRs": ["10.8.0.0/16"]}}), "NetworkPolicy")
    sources = policy[0]["spec"]["ingress"][0]["from"]
    assert {"ipBlock": {"cidr": "10.8.0.0/16"}} in sources
