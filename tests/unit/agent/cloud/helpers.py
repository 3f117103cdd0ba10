"""Builders for the cloud tests: NodeClaims, NodePools and EC2NodeClasses (ready or not)."""

from __future__ import annotations

from typing import Any

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclaim import NodeClaim
from agent.api.nodeclass_status import EC2NodeClassStatus
from agent.api.nodepool import NodePool
from agent.cloud.simulated import AMICatalog, resolve_amis
from common.kubemodel import Condition, parse_manifest

NODE_CLASS_REF = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
CAPACITY_TYPE = "karpenter.sh/capacity-type"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
ZONE = "topology.kubernetes.io/zone"


def req(key: str, operator: str, *values: str) -> dict[str, Any]:
    """One requirement as a manifest writes it."""
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def claim(
    *requirements: dict[str, Any],
    name: str = "claim-a",
    requests: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> NodeClaim:
    """A NodeClaim with these requirements (and optional requests, labels, spec fields)."""
    body: dict[str, Any] = {"nodeClassRef": NODE_CLASS_REF, "requirements": list(requirements)}
    if requests is not None:
        body["resources"] = {"requests": requests}
    body.update(spec)
    metadata: dict[str, Any] = {"name": name}
    if labels is not None:
        metadata["labels"] = labels
    return parse_manifest(
        NodeClaim,
        {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": metadata, "spec": body},
    )


def nodepool() -> NodePool:
    """The smallest valid NodePool."""
    return parse_manifest(
        NodePool,
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": "default"},
            "spec": {
                "template": {
                    "spec": {
                        "nodeClassRef": NODE_CLASS_REF,
                        "requirements": [req("a.io/b", "Exists")],
                    }
                }
            },
        },
    )


def nodeclass(*terms: dict[str, Any], ami_family: str | None = None) -> EC2NodeClass:
    """An EC2NodeClass selecting AMIs with ``terms`` (default: the al2023@latest alias)."""
    spec: dict[str, Any] = {
        "role": "KarpenterNodeRole",
        "amiSelectorTerms": list(terms) or [{"alias": "al2023@latest"}],
        "subnetSelectorTerms": [{"id": "subnet-0abc"}],
        "securityGroupSelectorTerms": [{"id": "sg-0abc"}],
    }
    if ami_family is not None:
        spec["amiFamily"] = ami_family
    return parse_manifest(
        EC2NodeClass,
        {
            "apiVersion": "karpenter.k8s.aws/v1",
            "kind": "EC2NodeClass",
            "metadata": {"name": "default"},
            "spec": spec,
        },
    )


def ready(
    amis: AMICatalog,
    *terms: dict[str, Any],
    kubernetes_version: str = "1.30",
    ami_family: str | None = None,
) -> EC2NodeClass:
    """A node class whose status holds the AMIs its terms resolve to, and Ready=True."""
    plain = nodeclass(*terms, ami_family=ami_family)
    status = EC2NodeClassStatus(
        amis=resolve_amis(amis, plain, kubernetes_version),
        conditions=[Condition(type="Ready", status="True")],
    )
    return plain.model_copy(update={"status": status})
