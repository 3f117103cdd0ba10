"""Builders of pod specs and nodes for the scheduling tests, from manifest-shaped dictionaries."""

from __future__ import annotations

from typing import Any

from agent.api.kube import Node, PodSpec


def container(name: str = "app", **fields: Any) -> dict[str, Any]:
    """A container manifest named ``name`` with ``fields`` added."""
    return {"name": name, "image": "pause", **fields}


def resources(
    requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A container's ``resources`` block."""
    out: dict[str, Any] = {}
    if requests is not None:
        out["requests"] = requests
    if limits is not None:
        out["limits"] = limits
    return out


def pod_spec(*containers: dict[str, Any], **spec: Any) -> PodSpec:
    """A pod spec with ``containers`` (one plain container when none) and camelCase ``spec``."""
    return PodSpec.model_validate(
        {"containers": list(containers) or [container()], **spec}, by_alias=True
    )


def required_affinity(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    """An ``affinity`` block with one required node-affinity term per list of expressions."""
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": exprs} for exprs in terms]
            }
        }
    }


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    """A node selector requirement manifest."""
    return {"key": key, "operator": operator, "values": list(values)}


def node(
    name: str = "n1",
    labels: dict[str, str] | None = None,
    allocatable: dict[str, Any] | None = None,
    **spec: Any,
) -> Node:
    """A Node named ``name`` with ``labels``, ``allocatable`` and camelCase ``spec`` fields."""
    return Node.model_validate(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": spec,
            "status": {"allocatable": allocatable or {"cpu": "4", "memory": "16Gi", "pods": 110}},
        },
        by_alias=True,
    )
