"""What the hash-controller suites share: a small cluster (a NodePool, an EC2NodeClass, NodeClaims
with given hash annotations) and one pass of driftwave's drift controller over it, which
re-stamps NodeClaims' hashes as Karpenter's hash controllers do."""

from __future__ import annotations

from typing import Any

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.clock import VirtualClock
from agent.hashing.stamps import SpecMemo
from agent.kube.simulated.cluster import SimulatedCluster
from agent.lifecycle.drift import DriftController
from common.kubemodel import KubeModel, parse_manifest
from tests.support.clouddrift import UNDESCRIBED

Manifest = dict[str, Any]

STATIC_DEPARTURE = (
    "driftwave does not stamp hash annotations on NodePools and EC2NodeClasses: it computes an "
    "object's hash when it checks drift (and stamps NodeClaims with it, as Karpenter does), so "
    "the agent needs no write access to the user's NodePools; `driftwave agent hash` prints "
    "the values Karpenter would stamp, and this test asserts that value"
)


def pool(labels: dict[str, str] | None = None, **spec: Any) -> Manifest:
    """A NodePool ``default`` of the EC2NodeClass ``default``."""
    template: Manifest = {
        "spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                             "name": "default"},
            "requirements": [{"key": "kubernetes.io/arch", "operator": "In",
                              "values": ["amd64"]}],
        }
    }  # fmt: skip
    if labels is not None:
        template["metadata"] = {"labels": labels}
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
            "metadata": {"name": "default"}, "spec": {"template": template, **spec}}  # fmt: skip


def nodeclass(**spec: Any) -> Manifest:
    """An EC2NodeClass ``default`` (an AL2023 alias, tag selectors, a role)."""
    base: Manifest = {
        "role": "KarpenterNodeRole",
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}],
    }
    return {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
            "metadata": {"name": "default"}, "spec": {**base, **spec}}  # fmt: skip


def claim(name: str, annotations: dict[str, str], drifted: bool = False) -> Manifest:
    """A NodeClaim of the NodePool ``default`` carrying ``annotations`` (not yet launched, so
    only its hashes are looked at), with a Drifted condition if ``drifted``."""
    status: Manifest = {}
    if drifted:
        drift = {"type": "Drifted", "status": "True", "reason": "NodePoolDrifted", "message": ""}
        status["conditions"] = [{**drift, "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    return {
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": "default"},
                     "annotations": annotations},
        "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                  "name": "default"}, "requirements": []},
        "status": status,
    }  # fmt: skip


def reconciled(objects: list[Manifest], ca_bundle: str | None = None) -> SimulatedCluster:
    """A cluster of ``objects`` after one pass of the drift controller (hashing with
    ``ca_bundle``)."""
    clock = VirtualClock()
    cluster = SimulatedCluster(clock)
    models: dict[str, type[KubeModel]] = {
        "NodePool": NodePool, "EC2NodeClass": EC2NodeClass, "NodeClaim": NodeClaim,
    }  # fmt: skip
    for obj in objects:
        cluster.create(parse_manifest(models[obj["kind"]], obj))
    controller = DriftController(
        cluster, clock, lambda *_: None, UNDESCRIBED, hashes=SpecMemo(ca_bundle)
    )
    controller.reconcile()
    return cluster


def annotations_of(cluster: SimulatedCluster, name: str) -> dict[str, str]:
    """A NodeClaim's annotations."""
    return dict(cluster.get(NodeClaim, name).metadata.annotations)
