"""What the core-scheduling conformance tests share: Karpenter's fake instance types, manifests,
and a provisioning round through driftwave's own cluster view and scheduler.

Karpenter's scheduling tests run against a fake cloud provider whose instance types are few and
simple (:mod:`tests.conformance.test_core_scheduling_catalog` builds the same). :class:`World`
launches from them, holds a simulated cluster (NodePools,
nodes, bound pods, DaemonSets), and :meth:`World.provision` reads it with
:func:`agent.provisioning.view.cluster_view` and places pending pods with
:func:`agent.provisioning.view.simulate`, as the provisioner does. Each new NodeClaim is launched
as Karpenter's fake provider would: its cheapest instance-type option, the offering of the
preferred capacity type (spot before on-demand) in its cheapest zone; the node's labels are that
type's labels, that offering's zone and capacity type, and the claim's single-valued
requirements. :meth:`World.bind` creates those nodes and binds the pods, for tests that provision
again.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agent.api.kube import DaemonSet, Node, Pod
from agent.api.nodepool import NodePool
from agent.catalog import Catalog
from agent.clock import VirtualClock
from agent.cloud.port import InstanceTypeOfferings
from agent.kube.simulated.cluster import SimulatedCluster
from agent.provisioning.view import cluster_view, simulate
from agent.scheduling.plans import NewClaim
from agent.scheduling.pods import shapes_of
from agent.scheduling.requirement import Requirement
from agent.scheduling.scheduler import Result
from agent.scheduling.strategy import Strategy
from agent.scheduling.typetable import TypeTable
from common.kubemodel import parse_manifest
from tests.conformance.test_core_scheduling_catalog import (
    ARCH,
    CAPACITY_TYPE,
    HOSTNAME,
    INSTANCE_TYPE,
    INTEGER,
    NODEPOOL,
    OS,
    SIZE,
    SPECIAL,
    VENDOR_A,
    VENDOR_B,
    ZONE,
    ZONES,
    default_types,
    fake_type,
    numbered_types,
)

SUITE = "core-scheduling"
CAPACITY_TYPES = ["spot", "on-demand", "reserved"]
"""The default test NodePool's capacity types (Karpenter's scheduling suite allows all three)."""
NODE_CLASS_REF = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
_names = itertools.count()


def nodepool(
    name: str = "default",
    *,
    requirements: Iterable[Mapping[str, Any]] | None = None,
    labels: Mapping[str, str] | None = None,
    taints: Iterable[Mapping[str, Any]] = (),
    startup_taints: Iterable[Mapping[str, Any]] = (),
    limits: Mapping[str, Any] | None = None,
    weight: int | None = None,
) -> NodePool:
    """A NodePool; by default it allows every capacity type, as the suite's test NodePool."""
    if requirements is None:
        requirements = [{"key": CAPACITY_TYPE, "operator": "In", "values": CAPACITY_TYPES}]
    spec: dict[str, Any] = {
        "template": {
            "metadata": {"labels": dict(labels or {})},
            "spec": {
                "nodeClassRef": NODE_CLASS_REF,
                "requirements": list(requirements),
                "taints": list(taints),
                "startupTaints": list(startup_taints),
            },
        }
    }
    if limits is not None:
        spec["limits"] = dict(limits)
    if weight is not None:
        spec["weight"] = weight
    return parse_manifest(
        NodePool,
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": name},
            "spec": spec,
        },
    )


def req(key: str, operator: str, *values: str) -> dict[str, Any]:
    """A node selector requirement."""
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def pod(
    name: str | None = None,
    *,
    labels: Mapping[str, str] | None = None,
    requests: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    required: Iterable[Iterable[Mapping[str, Any]]] | None = None,
    preferred: Iterable[tuple[int, Iterable[Mapping[str, Any]]]] = (),
    tolerations: Iterable[Mapping[str, Any]] = (),
    spread: Iterable[Mapping[str, Any]] = (),
    affinity: Iterable[Mapping[str, Any]] = (),
    anti_affinity: Iterable[Mapping[str, Any]] = (),
    preferred_affinity: Iterable[tuple[int, Mapping[str, Any]]] = (),
    preferred_anti_affinity: Iterable[tuple[int, Mapping[str, Any]]] = (),
    node_name: str | None = None,
    namespace: str = "default",
    init_requests: Mapping[str, str] | None = None,
    owner: Mapping[str, Any] | None = None,
) -> Pod:
    """A pod (pending unless ``node_name``) with the given scheduling constraints, in
    manifest terms: ``required`` is a list of node selector terms (each a list of
    requirements), ``preferred`` (weight, requirements) pairs, ``affinity`` and the others pod
    affinity terms."""
    node_affinity: dict[str, Any] = {}
    if required is not None:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [{"matchExpressions": list(term)} for term in required]
        }
    if preferred:
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": weight, "preference": {"matchExpressions": list(term)}}
            for weight, term in preferred
        ]
    pod_affinity: dict[str, Any] = {}
    anti: dict[str, Any] = {}
    if affinity:
        pod_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = list(affinity)
    if preferred_affinity:
        pod_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": w, "podAffinityTerm": t} for w, t in preferred_affinity
        ]
    if anti_affinity:
        anti["requiredDuringSchedulingIgnoredDuringExecution"] = list(anti_affinity)
    if preferred_anti_affinity:
        anti["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": w, "podAffinityTerm": t} for w, t in preferred_anti_affinity
        ]
    affinity_block: dict[str, Any] = {}
    if node_affinity:
        affinity_block["nodeAffinity"] = node_affinity
    if pod_affinity:
        affinity_block["podAffinity"] = pod_affinity
    if anti:
        affinity_block["podAntiAffinity"] = anti
    extended = {k: v for k, v in (requests or {}).items() if k not in ("cpu", "memory")}
    resources: dict[str, Any] = {"requests": dict(requests or {})}
    if extended:
        resources["limits"] = extended  # resources that cannot be overcommitted need limits
    spec: dict[str, Any] = {
        "containers": [{"name": "app", "image": "pause", "resources": resources}],
        "nodeSelector": dict(node_selector or {}),
        "tolerations": list(tolerations),
        "topologySpreadConstraints": list(spread),
    }
    if init_requests:
        spec["initContainers"] = [
            {"name": "init", "image": "pause", "resources": {"requests": dict(init_requests)}}
        ]
    if affinity_block:
        spec["affinity"] = affinity_block
    if node_name:
        spec["nodeName"] = node_name
    metadata: dict[str, Any] = {
        "name": name or f"pod-{next(_names)}",
        "namespace": namespace,
        "labels": dict(labels or {}),
        "uid": f"uid-{next(_names)}",
    }
    if owner:
        metadata["ownerReferences"] = [owner]
    return Pod.model_validate(
        {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}, by_alias=True
    )


def pods(count: int, **options: Any) -> list[Pod]:
    """``count`` identical pods."""
    return [pod(**options) for _ in range(count)]


def spread(
    key: str,
    labels: Mapping[str, str],
    *,
    max_skew: int = 1,
    schedule_anyway: bool = False,
    min_domains: int | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A topology spread constraint over ``key`` selecting ``labels``."""
    out: dict[str, Any] = {
        "topologyKey": key,
        "maxSkew": max_skew,
        "whenUnsatisfiable": "ScheduleAnyway" if schedule_anyway else "DoNotSchedule",
        "labelSelector": {"matchLabels": dict(labels)},
        **extra,
    }
    if min_domains is not None:
        out["minDomains"] = min_domains
    return out


def term(key: str, labels: Mapping[str, str], **extra: Any) -> dict[str, Any]:
    """A pod (anti-)affinity term over ``key`` selecting ``labels``."""
    return {"topologyKey": key, "labelSelector": {"matchLabels": dict(labels)}, **extra}


def node(
    name: str,
    labels: Mapping[str, str],
    *,
    allocatable: Mapping[str, str] | None = None,
    capacity: Mapping[str, str] | None = None,
    taints: Iterable[Mapping[str, Any]] = (),
    unschedulable: bool = False,
) -> Node:
    """A node (of no NodePool unless ``labels`` name one) with room as given."""
    room = dict(allocatable or {"cpu": "3900m", "memory": "4086Mi", "pods": "5"})
    return Node.model_validate(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {HOSTNAME: name, **labels}},
            "spec": {
                "providerID": f"fake:///{name}",
                "taints": list(taints),
                "unschedulable": unschedulable,
            },
            "status": {"allocatable": room, "capacity": dict(capacity or room)},
        },
        by_alias=True,
    )


@dataclass
class Launched:
    """One new NodeClaim as the fake provider would launch it."""

    claim: NewClaim
    labels: dict[str, str]
    instance_type: str


@dataclass
class Outcome:
    """A provisioning round's result, by pod name."""

    result: Result
    launched: list[Launched] = field(default_factory=list)
    placed: dict[str, dict[str, str]] = field(default_factory=dict)
    """Pod name → the labels of the node it goes to (new or existing)."""
    on_existing: dict[str, str] = field(default_factory=dict)
    """Pod name → the existing node it goes to."""

    def scheduled(self, one: Pod) -> bool:
        """Whether ``one`` was placed."""
        return one.metadata.name in self.placed

    def node(self, one: Pod) -> dict[str, str]:
        """The labels of the node ``one`` goes to (it must have been placed)."""
        assert self.scheduled(one), self.result.errors.get(f"default/{one.metadata.name}")
        return self.placed[one.metadata.name or ""]

    def host(self, one: Pod) -> str:
        """The name of the node ``one`` goes to."""
        return self.node(one)[HOSTNAME]

    def hosts(self, some: Iterable[Pod]) -> set[str]:
        """The nodes ``some`` go to."""
        return {self.host(one) for one in some}

    def skew(self, key: str, some: Iterable[Pod] | None = None) -> list[int]:
        """Pods (of ``some``, or all placed) per domain of ``key``, sorted."""
        names = {p.metadata.name for p in some} if some is not None else set(self.placed)
        counts: dict[str, int] = {}
        for name, labels in self.placed.items():
            if name in names and key in labels:
                counts[labels[key]] = counts.get(labels[key], 0) + 1
        return sorted(counts.values())

    @property
    def claims(self) -> int:
        """New NodeClaims."""
        return len(self.launched)


class World:
    """A simulated cluster with Karpenter's fake instance types (see the module docstring)."""

    def __init__(self, types: Sequence[InstanceTypeOfferings] | None = None) -> None:
        self.types = list(types) if types is not None else default_types()
        self.catalog = Catalog(
            [t.instance_type for t in self.types],
            on_demand={t.instance_type.name: t.offerings[0].price for t in self.types},
            zones=ZONES,
        )
        self.cluster = SimulatedCluster(VirtualClock())
        self._nodes = itertools.count(1)

    def apply(self, *objects: NodePool | Pod | Node | DaemonSet) -> World:
        """Create ``objects`` in the cluster."""
        for obj in objects:
            self.cluster.create(obj)
        return self

    def update(self, obj: NodePool) -> World:
        """Replace a NodePool (Karpenter's tests change the NodePool between rounds)."""
        self.cluster.update(obj)
        return self

    def provision(self, *pending: Pod, strategy: Strategy = "driftwave") -> Outcome:
        """Where ``pending`` go, as the provisioner would place them now."""
        refs = shapes_of(pending)
        view = cluster_view(self.cluster, self.catalog, refs, lambda _pool: self.types)
        result = simulate(view, refs, strategy=strategy)
        outcome = Outcome(result)
        for name, placed in result.existing.items():
            labels = view.domains(name)
            for ref in placed:
                outcome.placed[ref.name] = labels
                outcome.on_existing[ref.name] = name
        for claim in result.claims:
            launched = _launch(claim)
            outcome.launched.append(launched)
            for ref in claim.pods:
                outcome.placed[ref.name] = launched.labels
        return outcome

    def bind(self, outcome: Outcome, *placed: Pod) -> None:
        """Create the nodes ``outcome`` launched and bind ``placed`` (pods of that round) to
        where they went, as Karpenter's tests do between rounds."""
        names: dict[int, str] = {}
        for launched in outcome.launched:
            name = f"node-{next(self._nodes)}"
            names[id(launched)] = name
            instance = next(
                t.instance_type
                for t in self.types
                if t.instance_type.name == launched.instance_type
            )
            labels = {**launched.labels, HOSTNAME: name}
            room, size = _quantities(instance.allocatable), _quantities(instance.capacity)
            self.cluster.create(node(name, labels, allocatable=room, capacity=size))
            launched.labels[HOSTNAME] = name
        for one in placed:
            where = outcome.host(one)
            self.cluster.create(
                one.model_copy(update={"spec": one.spec.model_copy(update={"node_name": where})})
            )

    def skew(self, key: str, labels: Mapping[str, str] | None = None) -> list[int]:
        """Bound pods (with ``labels``, if given) per domain of ``key`` of their nodes, sorted,
        as Karpenter's tests measure skew."""
        nodes = {n.metadata.name: n.metadata.labels for n in self.cluster.list(Node)}
        counts: dict[str, int] = {}
        for one in self.cluster.list(Pod):
            where = nodes.get(one.spec.node_name or "")
            if where is None or key not in where:
                continue
            if one.metadata.namespace != "default":
                continue  # Karpenter's tests measure skew in their own namespace
            if one.status is not None and one.status.phase in ("Failed", "Succeeded"):
                continue
            if labels and any(one.metadata.labels.get(k) != v for k, v in labels.items()):
                continue
            counts[where[key]] = counts.get(where[key], 0) + 1
        return sorted(counts.values())

    def round(self, *pending: Pod, strategy: Strategy = "driftwave") -> Outcome:
        """Provision ``pending`` and bind the ones placed (one of Karpenter's
        ``ExpectProvisioned`` calls)."""
        outcome = self.provision(*pending, strategy=strategy)
        self.bind(outcome, *(one for one in pending if outcome.scheduled(one)))
        return outcome


def _quantities(amounts: Mapping[str, int]) -> dict[str, str]:
    """Base units as quantities (CPU in millicores)."""
    return {key: f"{value}m" if key == "cpu" else str(value) for key, value in amounts.items()}


def _offering(
    table: TypeTable, row: int, zone: Requirement | None, capacity_type: Requirement | None
) -> tuple[str, str] | None:
    """The offering the fake provider launches for type ``row``, as Karpenter's fake cloud
    provider picks one: capacity type by preference (reserved > spot > on-demand), then the
    cheapest allowed zone; None when none is available."""
    zones, caps = table.offering_axes(zone, capacity_type)
    for preferred in ("reserved", "spot", "on-demand"):
        if preferred not in table.capacity_types or not caps[table.capacity_types.index(preferred)]:
            continue
        prices = np.where(zones, table.price[row, :, table.capacity_types.index(preferred)], np.inf)
        cheapest = int(np.argmin(prices))
        if np.isfinite(prices[cheapest]):
            return table.zones[cheapest], preferred
    return None


def _launch(claim: NewClaim) -> Launched:
    """The node the fake provider would launch for ``claim``."""
    table = claim.pool.table
    name, _ = claim.options()[0]
    row = table.index[name]
    zone = claim.requirements.get(ZONE)
    capacity = claim.requirements.get(CAPACITY_TYPE)
    choice = _offering(table, row, zone, capacity)
    assert choice is not None, f"no offering for {name}"
    labels = dict(table.types[row].labels)
    labels[ZONE], labels[CAPACITY_TYPE] = choice[0], choice[1]
    labels.update(
        (requirement.key, next(iter(requirement.values)))
        for requirement in claim.requirements.values()
        if not requirement.complement and len(requirement.values) == 1
    )
    labels[HOSTNAME] = claim.hostname
    return Launched(claim, labels, name)


__all__ = [
    "ARCH",
    "CAPACITY_TYPE",
    "HOSTNAME",
    "INSTANCE_TYPE",
    "INTEGER",
    "NODEPOOL",
    "OS",
    "SIZE",
    "SPECIAL",
    "SUITE",
    "VENDOR_A",
    "VENDOR_B",
    "ZONE",
    "ZONES",
    "World",
    "default_types",
    "fake_type",
    "node",
    "nodepool",
    "numbered_types",
    "pod",
    "pods",
    "req",
    "spread",
    "term",
]
