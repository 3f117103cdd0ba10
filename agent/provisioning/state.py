"""The cluster as the provisioner sees it: nodes and in-flight NodeClaims as capacity pods can
join, and the pods already running on them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agent.api.kube import Node, Pod
from agent.api.nodeclaim import NodeClaim
from agent.scheduling.plans import ExistingNode
from agent.scheduling.resources import pod_requests, to_base_units
from agent.scheduling.typetable import TypeTable

UNREGISTERED_TAINT = "karpenter.sh/unregistered"


def _vector(table: TypeTable, quantities: dict[str, int | float | str]) -> np.ndarray:
    out = np.zeros(len(table.resources), dtype=np.int64)
    for name, quantity in quantities.items():
        at = table.resource_index.get(name)
        if at is not None:
            out[at] = to_base_units(name, quantity)
    return out


def existing_capacity(
    nodes: Sequence[Node], claims: Sequence[NodeClaim], pods: Sequence[Pod], table: TypeTable
) -> list[ExistingNode]:
    """Nodes (not being deleted) and launched NodeClaims without a node yet, with what their
    bound pods use; ``table`` fixes the resource order."""
    used: dict[str, np.ndarray] = {}
    empty = np.zeros(len(table.resources), dtype=np.int64)
    for pod in pods:
        if pod.spec.node_name:
            vector = _vector(table, dict(pod_requests(pod.spec)))
            used[pod.spec.node_name] = used.get(pod.spec.node_name, empty) + vector
    out: list[ExistingNode] = []
    registered = set()
    for node in nodes:
        if node.metadata.deletion_timestamp:
            continue
        name = node.metadata.name or ""
        registered.add(node.spec.provider_id)
        if node.status is None:
            continue
        allocatable = _vector(table, dict(node.status.allocatable))
        taints = [t for t in node.spec.taints if t.key != UNREGISTERED_TAINT]
        out.append(
            ExistingNode(
                name,
                dict(node.metadata.labels),
                taints,
                allocatable,
                used.get(name, empty),
                pool=node.metadata.labels.get("karpenter.sh/nodepool"),
                unschedulable=bool(node.spec.unschedulable),
            )
        )
    for claim in claims:
        launched = claim.status
        if claim.metadata.deletion_timestamp or not launched.provider_id:
            continue
        if launched.provider_id in registered or launched.node_name:
            continue
        out.append(
            ExistingNode(
                claim.name,
                dict(claim.metadata.labels),
                list(claim.spec.taints or ()),
                _vector(table, dict(launched.allocatable)),
                empty.copy(),
                pool=claim.metadata.labels.get("karpenter.sh/nodepool"),
            )
        )
    return out
