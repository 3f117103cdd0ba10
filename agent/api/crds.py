"""CustomResourceDefinitions of Karpenter's v1 kinds, generated from driftwave's models.

The agent's Helm chart installs these CRDs (``deploy/helm/driftwave-agent/crds``) on clusters
that do not run Karpenter; they serve the same groups, kinds, versions and field names as
Karpenter's own, so Karpenter's manifests (and ``kubectl`` habits) carry over and a cluster can
move between Karpenter and driftwave. The schema is the models' JSON Schema made structural, as
the API server requires: references inlined, ``null`` alternatives dropped (the API server prunes
a ``null`` as it does under Karpenter's CRDs, which mark nothing ``nullable``), integer-or-string
quantities marked ``x-kubernetes-int-or-string``, ``const`` as a one-value ``enum``, ``metadata``
left to the API server.

On that shape the generator lays Karpenter's admission rules (:mod:`agent.api.crdrules`,
:mod:`agent.api.nodeclass_crdrules`): its patterns, its CEL rules (``x-kubernetes-validations``)
with their messages, its object and list defaults (budgets ``[{nodes: 10%}]``, ``metadataOptions``,
...), list and map types and formats. The API server then refuses what Karpenter's CRDs refuse,
with the same messages, and stores what they accept with the same defaults
(``tests/integration/kube/test_crd_admission.py`` checks both on a real API server).
``driftwave validate`` checks the same rules and some of Karpenter's runtime checks before a
manifest reaches a cluster.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import yaml

from agent.api.crdrules import NODECLAIM, NODEPOOL, Rules
from agent.api.kinds import KARPENTER_KINDS
from agent.api.nodeclass_crdrules import EC2NODECLASS
from agent.api.schemas import schema_for
from common.kubemodel import KubeModel

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
RULES: dict[str, Rules] = {
    "NodePool": NODEPOOL,
    "NodeClaim": NODECLAIM,
    "EC2NodeClass": EC2NODECLASS,
}
INT_OR_STRING = [{"type": "integer"}, {"type": "string"}]
_PATH_PART = re.compile(r"[^.\[\]{}]+|\[\]|\{\}")


def structural(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> dict[str, Any]:
    """A JSON Schema (pydantic's) as a structural OpenAPI v3 schema (module docstring)."""
    defs = schema.get("$defs", {}) if defs is None else defs
    if "$ref" in schema:
        target = defs[schema["$ref"].rsplit("/", 1)[-1]]
        merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        return structural(merged, defs)
    if "anyOf" in schema:
        options = [o for o in schema["anyOf"] if o.get("type") != "null"]
        rest = {k: v for k, v in schema.items() if k != "anyOf"}
        if len(options) == 1:
            return structural({**options[0], **rest}, defs)
        if {o.get("type") for o in options} == {"integer", "string"}:
            pattern = {"pattern": rest["pattern"]} if "pattern" in rest else {}
            return {
                **_plain(rest),
                "anyOf": INT_OR_STRING,
                **pattern,
                "x-kubernetes-int-or-string": True,
            }
        return {**_plain(rest), "x-kubernetes-preserve-unknown-fields": True}
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


def apply_rules(schema: dict[str, Any], rules: Rules) -> dict[str, Any]:
    """``schema`` with ``rules`` laid on it (:mod:`agent.api.crdrules`): each path's keywords set,
    or removed where the rule gives ``None``. A path the schema lacks is an error (a renamed
    field must not silently lose its rules)."""
    for path, keywords in rules.items():
        node = schema
        for part in _PATH_PART.findall(path):
            step = {"[]": "items", "{}": "additionalProperties"}.get(part)
            try:
                node = node[step] if step else node["properties"][part]
            except KeyError:
                raise KeyError(f"CRD rule path {path!r}: the schema has no {part!r}") from None
        for key, value in keywords.items():
            if value is None:
                node.pop(key, None)
            else:
                node[key] = copy.deepcopy(value)
    return schema


def crd(api_version: str, kind: str, model: type[KubeModel]) -> dict[str, Any]:
    """The CustomResourceDefinition of one kind."""
    group, _, version = api_version.partition("/")
    schema = structural(schema_for(model))
    properties = schema.get("properties", {})
    properties["metadata"] = {"type": "object"}
    properties["apiVersion"] = {"type": "string"}
    properties["kind"] = {"type": "string"}
    schema["type"] = "object"
    apply_rules(schema, RULES[kind])
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


class _Dumper(yaml.SafeDumper):
    """Writes a part the schema repeats (a shared enum, a shared rule) out in full each time,
    never as a YAML anchor and alias, so the files read as Karpenter's do."""

    def ignore_aliases(self, data: Any) -> bool:  # noqa: ARG002 - the same answer for every part
        return True


def crd_files() -> dict[str, str]:
    """File name → YAML text of each CRD, as the chart's ``crds/`` folder holds them."""
    header = (
        "# Generated by `make schemas` from driftwave's models (agent/api/crds.py). Do not edit.\n"
    )
    return {
        f"{c['spec']['group']}_{c['spec']['names']['plural']}.yaml": header
        + yaml.dump(c, Dumper=_Dumper, sort_keys=False, width=100)
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
