"""CustomResourceDefinitions of Karpenter's v1 kinds, generated from driftwave's models.

The agent's Helm chart installs these CRDs (``deploy/helm/driftwave-agent/crds``) on clusters
that do not run Karpenter; they serve the same groups, kinds, versions and field names as
Karpenter's own, so Karpenter's manifests (and ``kubectl`` habits) carry over and a cluster can
move between Karpenter and driftwave. The schema is the models' JSON Schema made structural, as
the API server requires: references inlined, ``null`` alternatives turned into ``nullable``,
integer-or-string quantities marked ``x-kubernetes-int-or-string``, ``const`` as a one-value
``enum``, ``metadata`` left to the API server. Karpenter's CEL rules are not carried: driftwave
checks them itself (``driftwave validate``), and the API server only checks the schema.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from agent.api.base import KubeModel
from agent.api.manifests import KARPENTER_KINDS
from agent.api.schemas import schema_for

DROPPED = {"title", "$defs", "discriminator"}
PRINTER_COLUMNS: dict[str, list[dict[str, Any]]] = {
    "NodePool": [
        {
            "name": "NodeClass",
            "type": "string",
            "jsonPath": ".spec.template.spec.nodeClassRef.name",
        },
        {"name": "Nodes", "type": "string", "jsonPath": ".status.resources.nodes"},
        {
            "name": "Ready",
            "type": "string",
            "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
        },
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ],
    "NodeClaim": [
        {
            "name": "Type",
            "type": "string",
            "jsonPath": ".metadata.labels.node\\.kubernetes\\.io/instance-type",
        },
        {
            "name": "Capacity",
            "type": "string",
            "jsonPath": ".metadata.labels.karpenter\\.sh/capacity-type",
        },
        {
            "name": "Zone",
            "type": "string",
            "jsonPath": ".metadata.labels.topology\\.kubernetes\\.io/zone",
        },
        {"name": "Node", "type": "string", "jsonPath": ".status.nodeName"},
        {
            "name": "Ready",
            "type": "string",
            "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
        },
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ],
    "EC2NodeClass": [
        {
            "name": "Ready",
            "type": "string",
            "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
        },
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ],
}
PLURALS = {"NodePool": "nodepools", "NodeClaim": "nodeclaims", "EC2NodeClass": "ec2nodeclasses"}
CATEGORIES = {"NodePool": ["karpenter"], "NodeClaim": ["karpenter"], "EC2NodeClass": ["karpenter"]}


def structural(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> dict[str, Any]:
    """A JSON Schema (pydantic's) as a structural OpenAPI v3 schema (module docstring)."""
    defs = schema.get("$defs", {}) if defs is None else defs
    if "$ref" in schema:
        target = defs[schema["$ref"].rsplit("/", 1)[-1]]
        merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        return structural(merged, defs)
    if "anyOf" in schema:
        options = [o for o in schema["anyOf"] if o.get("type") != "null"]
        nullable = len(options) != len(schema["anyOf"])
        rest = {k: v for k, v in schema.items() if k != "anyOf"}
        if len(options) == 1:
            out = structural({**options[0], **rest}, defs)
        elif {o.get("type") for o in options} == {"integer", "string"}:
            out = {**_plain(rest), "x-kubernetes-int-or-string": True}
        else:
            out = {**_plain(rest), "x-kubernetes-preserve-unknown-fields": True}
        if nullable:
            out["nullable"] = True
            if out.get("default", 0) is None:
                del out["default"]
        return out
    result: dict[str, Any] = {}
    for key, value in schema.items():
        if key in DROPPED or (key == "default" and value is None):
            continue
        if key == "const":
            result["enum"] = [value]
        elif key == "properties":
            result["properties"] = {name: structural(sub, defs) for name, sub in value.items()}
        elif key == "items":
            result["items"] = structural(value, defs)
        elif key == "additionalProperties":
            if isinstance(value, dict) and "properties" not in schema:
                result["additionalProperties"] = structural(value, defs)
        else:
            result[key] = value
    if "type" not in result and "x-kubernetes-int-or-string" not in result:
        if "properties" in result:
            result["type"] = "object"
        elif "enum" in result and all(isinstance(v, str) for v in result["enum"]):
            result["type"] = "string"
        else:
            result["x-kubernetes-preserve-unknown-fields"] = True
    return result


def _plain(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k in ("description",)}


def crd(api_version: str, kind: str, model: type[KubeModel]) -> dict[str, Any]:
    """The CustomResourceDefinition of one kind."""
    group, _, version = api_version.partition("/")
    schema = structural(schema_for(model))
    properties = schema.get("properties", {})
    properties["metadata"] = {"type": "object"}
    properties["apiVersion"] = {"type": "string"}
    properties["kind"] = {"type": "string"}
    schema["type"] = "object"
    plural = PLURALS[kind]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                "categories": CATEGORIES[kind],
            },
            "scope": "Cluster",
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": PRINTER_COLUMNS[kind],
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


def all_crds() -> list[dict[str, Any]]:
    """The CRDs of every Karpenter kind driftwave serves."""
    return [crd(api, kind, model) for (api, kind), model in sorted(KARPENTER_KINDS.items())]


def crd_files() -> dict[str, str]:
    """File name → YAML text of each CRD, as the chart's ``crds/`` folder holds them."""
    header = (
        "# Generated by `make schemas` from driftwave's models (agent/api/crds.py). Do not edit.\n"
    )
    return {
        f"{c['spec']['group']}_{c['spec']['names']['plural']}.yaml": header
        + yaml.safe_dump(c, sort_keys=False, width=100)
        for c in all_crds()
    }


def write_crds(folder: Path) -> list[Path]:
    """Write the CRDs into ``folder``; the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in crd_files().items():
        path = folder / name
        path.write_text(text)
        written.append(path)
    return written
