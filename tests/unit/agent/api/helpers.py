"""Builders of minimal valid Karpenter v1 manifests, and helpers that parse them or read the issues
they are refused with.

Tests take a fresh minimal manifest, change one field with :func:`with_field` (or
:func:`without_field`), and check that the result parses, or that it is refused with exactly one
issue at the expected path whose message names the rule.
"""

from __future__ import annotations

import copy
import re
from typing import Any, TypeVar

import pytest

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from common.kubemodel import FieldIssue, KubeModel, ManifestInvalid, parse_manifest

M = TypeVar("M", bound=KubeModel)

NODE_CLASS_REF: dict[str, str] = {
    "group": "karpenter.k8s.aws",
    "kind": "EC2NodeClass",
    "name": "default",
}
ARCH_AMD64: dict[str, Any] = {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}

REQS = "spec.template.spec.requirements"
"""Path of a NodePool's requirements."""
TEMPLATE = "spec.template.spec"
"""Path of a NodePool's NodeClaim template spec."""


def nodepool(**spec: Any) -> dict[str, Any]:
    """The smallest valid NodePool (one requirement); ``spec`` keys are added to its spec."""
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "default"},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": dict(NODE_CLASS_REF),
                    "requirements": [copy.deepcopy(ARCH_AMD64)],
                }
            },
            **copy.deepcopy(spec),
        },
    }


def ec2nodeclass(**spec: Any) -> dict[str, Any]:
    """The smallest valid EC2NodeClass (an AL2023 alias and a role); ``spec`` keys are added."""
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "role": "KarpenterNodeRole-demo",
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
            **copy.deepcopy(spec),
        },
    }


def nodeclaim(**spec: Any) -> dict[str, Any]:
    """The smallest valid NodeClaim (one requirement); ``spec`` keys are added to its spec."""
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": "default-x7k2p"},
        "spec": {
            "nodeClassRef": dict(NODE_CLASS_REF),
            "requirements": [copy.deepcopy(ARCH_AMD64)],
            **copy.deepcopy(spec),
        },
    }


_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _steps(path: str) -> list[str | int]:
    return [name if name else int(index) for name, index in _STEP.findall(path)]


def _parent(doc: dict[str, Any], path: str) -> tuple[Any, str | int]:
    *head, last = _steps(path)
    node: Any = doc
    for step in head:
        node = node[step] if isinstance(step, int) else node.setdefault(step, {})
    return node, last


def with_field(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``doc`` with the field at ``path`` (``spec.a.b[0].c``) set to ``value``.

    Missing mappings on the way are created; list indexes must exist.
    """
    out = copy.deepcopy(doc)
    parent, last = _parent(out, path)
    parent[last] = copy.deepcopy(value)
    return out


def without_field(doc: dict[str, Any], path: str) -> dict[str, Any]:
    """A copy of ``doc`` without the field at ``path``."""
    out = copy.deepcopy(doc)
    parent, last = _parent(out, path)
    del parent[last]
    return out


def requirement(key: str, operator: str, *values: str, **extra: Any) -> dict[str, Any]:
    """A requirement manifest; ``values`` is left out when none are given."""
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    out.update(extra)
    return out


def nodepool_with_requirements(*requirements: dict[str, Any]) -> dict[str, Any]:
    """A minimal NodePool whose requirements are exactly ``requirements``."""
    return with_field(nodepool(), REQS, list(requirements))


def accepted(model: type[M], data: Any) -> M:
    """Parse ``data``; it must be accepted and dump back to exactly the input."""
    try:
        parsed = parse_manifest(model, data)
    except ManifestInvalid as exc:
        pytest.fail(f"refused a valid manifest: {exc}")
    assert parsed.to_manifest() == data
    return parsed


def issues(model: type[KubeModel], data: Any) -> list[FieldIssue]:
    """The issues ``data`` is refused with; fails the test if it is accepted."""
    with pytest.raises(ManifestInvalid) as caught:
        parse_manifest(model, data)
    return caught.value.issues


def refused(model: type[KubeModel], data: Any, path: str, *fragments: str) -> FieldIssue:
    """Check that ``data`` is refused with one issue, at ``path``, whose message has ``fragments``.

    Returns the issue for further checks.
    """
    found = issues(model, data)
    assert [issue.path for issue in found] == [path], found
    for fragment in fragments:
        assert fragment in found[0].message, (fragment, found[0].message)
    return found[0]


def pool_ok(data: dict[str, Any]) -> NodePool:
    """Parse a NodePool manifest that must be valid (and round-trip)."""
    return accepted(NodePool, data)


def pool_refused(data: dict[str, Any], path: str, *fragments: str) -> FieldIssue:
    """A NodePool refused with one issue at ``path`` naming the rule."""
    return refused(NodePool, data, path, *fragments)


def nodeclass_ok(data: dict[str, Any]) -> EC2NodeClass:
    """Parse an EC2NodeClass manifest that must be valid (and round-trip)."""
    return accepted(EC2NodeClass, data)


def nodeclass_refused(data: dict[str, Any], path: str, *fragments: str) -> FieldIssue:
    """An EC2NodeClass refused with one issue at ``path`` naming the rule."""
    return refused(EC2NodeClass, data, path, *fragments)


def claim_ok(data: dict[str, Any]) -> NodeClaim:
    """Parse a NodeClaim manifest that must be valid (and round-trip)."""
    return accepted(NodeClaim, data)


def claim_refused(data: dict[str, Any], path: str, *fragments: str) -> FieldIssue:
    """A NodeClaim refused with one issue at ``path`` naming the rule."""
    return refused(NodeClaim, data, path, *fragments)
