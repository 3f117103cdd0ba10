"""The cluster as the provisioner sees it: nodes and in-flight NodeClaims as capacity pods can
join, and the pods already running on them.

As Karpenter's ``ExistingNode``, each keeps room for the DaemonSet pods that will run on it but
are not bound yet (those whose template tolerates its taints and fits its labels), and a node
whose NodeClaim is not initialized is scheduled against without its startup taints and the
well-known ephemeral ones (they go away once it is ready), so pods planned on it stay there.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np

from agent.api.kube import DaemonSet, Node, Pod, Taint
from agent.api.nodeclaim import NodeClaim
from agent.catalog.resources import to_base_units
from agent.scheduling.plans import ExistingNode, NodeMemo
from agent.scheduling.pods import PodShape, shape_of
from agent.scheduling.taints import effective_node_taints, untolerated
from agent.scheduling.typetable import TypeTable
from common.kubemodel import ObjectMeta

UNREGISTERED_TAINT = "karpenter.sh/unregistered"
NODEPOOL_LABEL = "karpenter.sh/nodepool"


def _parse(table: TypeTable, quantities: Mapping[str, Any]) -> np.ndarray:
    """Written quantities as a vector in ``table``'s resource order."""
    out = np.zeros(len(table.resources), dtype=np.int64)
    for name, quantity in quantities.items():
        at = table.resource_index.get(name)
        if at is not None:
            out[at] = to_base_units(name, quantity)
    return out


def _base_vector(table: TypeTable, amounts: Mapping[str, int]) -> np.ndarray:
    """Amounts already in base units; resources no type offers are left out."""
    out = np.zeros(len(table.resources), dtype=np.int64)
    for name, amount in amounts.items():
        at = table.resource_index.get(name)
        if at is not None:
            out[at] = amount
    return out


def _initialized(claim: NodeClaim) -> bool:
    return any(c.type == "Initialized" and c.status == "True" for c in claim.status.conditions)


def _reserve_daemons(
    node: ExistingNode, daemons: Sequence[PodShape], bound: np.ndarray, table: TypeTable
) -> None:
    """Add to ``node.used`` what its DaemonSet pods will request beyond those bound already."""
    wanted = np.zeros(len(table.resources), dtype=np.int64)
    for shape in daemons:
        if untolerated(shape.tolerations, node.taints):
            continue
        if not any(node.requirements.is_compatible(alt) for alt in shape.alternatives):
            continue
        wanted = wanted + _base_vector(table, shape.requests)
    node.used = node.used + np.maximum(wanted - bound, 0)


def _bound_usage(
    pods: Sequence[Pod], table: TypeTable, shapes: Sequence[PodShape] | None
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Per node: what its bound pods request, and what its DaemonSet pods among them do."""
    bound = [pod for pod in pods if pod.spec.node_name]
    if shapes is None:
        shapes = [shape_of(pod) for pod in bound]
    names = [pod.spec.node_name or "" for pod in bound]
    counts = Counter(zip(names, map(id, shapes), strict=True))
    by_id = {id(shape): shape for shape in shapes}
    vectors = {at: _base_vector(table, shape.requests) for at, shape in by_id.items()}
    used: dict[str, np.ndarray] = {}
    daemon_used: dict[str, np.ndarray] = {}
    for (node, at), count in counts.items():
        amount = vectors[at] * count
        used[node] = used[node] + amount if node in used else amount
        if by_id[at].daemon:
            daemon_used[node] = daemon_used[node] + amount if node in daemon_used else amount
    return used, daemon_used


def existing_capacity(
    nodes: Sequence[Node],
    claims: Sequence[NodeClaim],
    pods: Sequence[Pod],
    table: TypeTable,
    daemons: Sequence[PodShape] = (),
    shapes: Sequence[PodShape] | None = None,
    known: NodeMemo | None = None,
) -> list[ExistingNode]:
    """Nodes (not being deleted) and launched NodeClaims without a node yet, with what their
    bound pods use plus room for the ``daemons`` (DaemonSet pod templates) that will run there;
    ``table`` fixes the resource order. ``shapes``, when given, are the bound pods' shapes in the
    order of ``pods``' bound ones (their requests are then not computed again); ``known``
    remembers nodes' requirements from one call to the next."""
    used, daemon_used = _bound_usage(pods, table, shapes)
    empty = np.zeros(len(table.resources), dtype=np.int64)
    by_provider = {c.status.provider_id or "": c for c in claims if c.status.provider_id}
    out: list[ExistingNode] = []
    registered = set()
    for node in nodes:
        if node.metadata.deletion_timestamp:
            continue
        registered.add(node.spec.provider_id)
        name = node.metadata.name or ""
        owner = by_provider.get(node.spec.provider_id or "")
        found = node_existing(
            node, owner, used.get(name, empty), daemon_used.get(name, empty), table, daemons, known
        )
        if found is not None:
            out.append(found)
    for claim in claims:
        if claim.status.provider_id not in registered:
            found = claim_existing(claim, table, daemons)
            if found is not None:
                out.append(found)
    return out


def node_existing(
    node: Node,
    owner: NodeClaim | None,
    used: np.ndarray,
    daemon_used: np.ndarray,
    table: TypeTable,
    daemons: Sequence[PodShape] = (),
    known: NodeMemo | None = None,
) -> ExistingNode | None:
    """One node of :func:`existing_capacity` (None: being deleted, or no status yet): ``owner``
    is its NodeClaim, ``used`` what its bound pods request, ``daemon_used`` what its DaemonSet
    pods among them do."""
    if node.metadata.deletion_timestamp or node.status is None:
        return None
    name = node.metadata.name or ""
    quantities = node.status.allocatable
    if known is None:
        allocatable = _parse(table, quantities)
    else:
        allocatable = known.vector(name, quantities, table, partial(_parse, table, quantities))
    taints: list[Taint] = [t for t in node.spec.taints if t.key != UNREGISTERED_TAINT]
    if owner is not None and not _initialized(owner):
        startup = owner.spec.startup_taints or ()
        taints = effective_node_taints(taints, initialized=False, startup_taints=startup)
    existing = ExistingNode(
        name,
        node.metadata.labels,
        taints,
        allocatable,
        used,
        pool=node.metadata.labels.get("karpenter.sh/nodepool"),
        unschedulable=bool(node.spec.unschedulable),
        known=known,
    )
    _reserve_daemons(existing, daemons, daemon_used, table)
    return existing


def claim_existing(
    claim: NodeClaim, table: TypeTable, daemons: Sequence[PodShape] = ()
) -> ExistingNode | None:
    """One NodeClaim of :func:`existing_capacity`: launched, not being deleted and without a
    node (the caller checks that no node not being deleted has its provider ID); else None."""
    launched = claim.status
    if claim.metadata.deletion_timestamp or not launched.provider_id or launched.node_name:
        return None
    empty = np.zeros(len(table.resources), dtype=np.int64)
    existing = ExistingNode(
        claim.name,
        dict(claim.metadata.labels),
        list(claim.spec.taints or ()),
        _parse(table, launched.allocatable),
        empty,
        pool=claim.metadata.labels.get("karpenter.sh/nodepool"),
    )
    _reserve_daemons(existing, daemons, empty, table)
    return existing


def bound_usage(
    pods: Sequence[Pod], table: TypeTable, shapes: Sequence[PodShape] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """What ``pods`` (bound to one node) request, and what the DaemonSet pods among them do."""
    empty = np.zeros(len(table.resources), dtype=np.int64)
    used, daemon_used = _bound_usage(pods, table, shapes)
    name = pods[0].spec.node_name or "" if pods else ""
    return used.get(name, empty), daemon_used.get(name, empty)


def running_capacity(
    nodes: Sequence[Node],
    claims: Sequence[NodeClaim],
    table: TypeTable,
    known: NodeMemo | None = None,
) -> dict[str, tuple[str, np.ndarray]]:
    """Node (or launched NodeClaim without a node yet) name → its NodePool and capacity (in
    ``table``'s resource order), for the nodes of a NodePool that are not being deleted: what
    its ``limits`` count, as Karpenter counts them (capacity, not allocatable; a node missing a
    resource in its capacity takes its claim's). ``known`` remembers the vectors from one call
    to the next."""
    out: dict[str, tuple[str, np.ndarray]] = {}
    by_provider = {c.status.provider_id: c for c in claims if c.status.provider_id}
    registered: set[str] = set()
    for node in nodes:
        if node.metadata.deletion_timestamp or node.status is None:
            continue
        if node.spec.provider_id:
            registered.add(node.spec.provider_id)
        found = node_running(node, by_provider.get(node.spec.provider_id or ""), table, known)
        if found is not None:
            out[node.metadata.name or ""] = found
    for claim in claims:
        if claim.status.provider_id not in registered:
            found = claim_running(claim, table, known)
            if found is not None:
                out[claim.name] = found
    return out


def _vector(
    name: str, quantities: Mapping[str, Any], table: TypeTable, known: NodeMemo | None
) -> np.ndarray:
    if known is None:
        return _parse(table, quantities)
    compute = partial(_parse, table, quantities)
    return known.vector(name, quantities, table, compute, which="capacity")


def node_running(
    node: Node, owner: NodeClaim | None, table: TypeTable, known: NodeMemo | None = None
) -> tuple[str, np.ndarray] | None:
    """One node of :func:`running_capacity` (``owner``: its NodeClaim); None when it is being
    deleted, has no status yet or belongs to no NodePool."""
    if node.metadata.deletion_timestamp or node.status is None:
        return None
    capacity = _vector(node.metadata.name or "", node.status.capacity, table, known)
    if owner is not None:
        claimed = _vector(owner.name, owner.status.capacity, table, known)
        capacity = np.where(capacity == 0, claimed, capacity)
    pool = node.metadata.labels.get(NODEPOOL_LABEL)
    if not pool and owner is not None:
        pool = owner.metadata.labels.get(NODEPOOL_LABEL)
    return (pool, capacity) if pool else None


def claim_running(
    claim: NodeClaim, table: TypeTable, known: NodeMemo | None = None
) -> tuple[str, np.ndarray] | None:
    """One NodeClaim of :func:`running_capacity`: launched, not being deleted, without a node
    (the caller checks that no node with a status, not being deleted, has its provider ID) and
    of a NodePool; else None."""
    launched = claim.status
    if claim.metadata.deletion_timestamp or not launched.provider_id or launched.node_name:
        return None
    pool = claim.metadata.labels.get(NODEPOOL_LABEL)
    return (pool, _vector(claim.name, launched.capacity, table, known)) if pool else None


def daemon_template(daemonset: DaemonSet) -> Pod:
    """The pod a DaemonSet runs on every node it selects, for reserving room on new nodes."""
    return Pod(
        metadata=ObjectMeta(
            name=f"{daemonset.metadata.name}-template",
            namespace=daemonset.metadata.namespace,
            labels=dict(daemonset.spec.template.metadata.labels),
        ),
        spec=daemonset.spec.template.spec,
        api_version="v1",
        kind="Pod",
    )
