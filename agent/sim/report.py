"""What a simulation ends with: NodeClaims (where each landed, its subnet and security groups,
why it is drifted if it is, and the labels, annotations, taints and requirements it carries),
pending pods and why, cost, timeline, summary."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from agent.api.conditions import is_true
from agent.api.kube import Node, Pod
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.sim.world import World

IT = "node.kubernetes.io/instance-type"
ZONE = "topology.kubernetes.io/zone"
CAPACITY = "karpenter.sh/capacity-type"


def _state(claim: NodeClaim) -> str:
    for kind in ("Initialized", "Registered", "Launched"):
        if is_true(claim, kind):
            return kind
    return "Pending"


def report(world: World) -> dict[str, Any]:
    """The simulation's outcome as JSON-ready data."""
    pods = world.cluster.list(Pod)
    by_node: dict[str, list[str]] = {}
    for pod in pods:
        if pod.spec.node_name:
            key = f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}"
            by_node.setdefault(pod.spec.node_name, []).append(key)
    claims = []
    for claim in world.cluster.list(NodeClaim):
        labels = claim.metadata.labels
        node = claim.status.node_name
        spec = claim.to_full_manifest()["spec"]
        subnet, groups = world.cloud.network_of(claim)
        drifted = next((c for c in claim.status.conditions if c.type == "Drifted"), None)
        claims.append(
            {
                "name": claim.name,
                "nodePool": labels.get("karpenter.sh/nodepool"),
                "instanceType": labels.get(IT),
                "zone": labels.get(ZONE),
                "capacityType": labels.get(CAPACITY),
                "imageId": claim.status.image_id,
                "subnetId": subnet,
                "securityGroupIds": list(groups or []),
                "drifted": drifted.reason if drifted is not None else None,
                "node": node,
                "state": _state(claim),
                "pods": sorted(by_node.get(node or "", [])),
                # as Karpenter's tests check a claim: what it carries, not only where it landed
                "labels": dict(sorted(labels.items())),
                "annotations": dict(sorted(claim.metadata.annotations.items())),
                "taints": spec.get("taints", []),
                "startupTaints": spec.get("startupTaints", []),
                "requirements": spec.get("requirements", []),
            }
        )
    ready_nodes = {n.metadata.name for n in world.cluster.list(Node)}
    pending = []
    for pod in pods:
        if pod.spec.node_name:
            continue
        key = f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}"
        reason = world.provisioner.pending_reasons.get(key)
        if reason is None:
            planned = world.provisioner.nominations.get(key)
            reason = (
                f"waiting for nodeclaim {planned} to become a Ready node"
                if planned
                else "waiting for the next provisioning batch"
            )
        pending.append({"pod": key, "reason": reason})
    cost = world.cloud.cost_per_hour()
    return {
        "nodeClaims": claims,
        "pendingPods": pending,
        "costPerHour": round(cost, 6),
        "timeline": [asdict(event) for event in world.timeline],
        "summary": {
            "simulatedSeconds": (world.clock.now() - world.start).total_seconds(),
            "nodeClaims": len(claims),
            "nodes": len(ready_nodes),
            "pods": len(pods),
            "scheduledPods": sum(1 for p in pods if p.spec.node_name),
            "pendingPods": len(pending),
            "costPerHour": round(cost, 6),
            **world.metrics.summary([p.name for p in world.cluster.list(NodePool)]),
            "driftHalted": world.disruption.halts.halted(),
        },
    }
