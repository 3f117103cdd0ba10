"""Whether one pod fits on one concrete node, with kube-scheduler's filters and reasons.

These are the checks the simulated cluster's binder and the solver's "existing nodes" pass run,
in kube-scheduler's filter order; the first filter that fails gives the reasons:

1. NodeUnschedulable: a cordoned node (``spec.unschedulable``) takes only pods that tolerate
   ``node.kubernetes.io/unschedulable:NoSchedule`` — ``node(s) were unschedulable``;
2. NodeName: ``spec.nodeName`` names another node — ``node(s) didn't match the requested node
   name``;
3. TaintToleration: the first NoSchedule / NoExecute taint the pod does not tolerate —
   ``node(s) had untolerated taint {key: value}``;
4. NodeAffinity: ``nodeSelector`` and the required node-affinity terms (OR-ed; a term with no
   expressions matches no node; ``matchFields`` on ``metadata.name``) — ``node(s) didn't match
   Pod's node affinity/selector``;
5. NodePorts: a host port another pod on the node holds — ``node(s) didn't have free ports for
   the requested pod ports``;
6. NodeResourcesFit: ``Too many pods``, and ``Insufficient <resource>`` for each resource the
   pod requests (a non-zero amount) beyond what is left of the node's allocatable.

Labels are matched exactly as the API server stores them: kube-scheduler does not normalise
deprecated keys as Karpenter's requirements do. Pod affinity / anti-affinity and topology spread
are not checked here: they depend on the other pods' placement and are the solver's job. Nor are
volumes (VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from agent.api.kube import (
    Node,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodSpec,
    Taint,
)
from agent.catalog.resources import ResourceVector, total
from agent.scheduling.requirement import parse_int
from agent.scheduling.resources import PODS, pod_requests
from agent.scheduling.taints import UNSCHEDULABLE_TAINT, tolerates, untolerated

UNSCHEDULABLE: Final = "node(s) were unschedulable"
NODE_NAME_MISMATCH: Final = "node(s) didn't match the requested node name"
AFFINITY_MISMATCH: Final = "node(s) didn't match Pod's node affinity/selector"
PORTS_IN_USE: Final = "node(s) didn't have free ports for the requested pod ports"
TOO_MANY_PODS: Final = "Too many pods"
_WILDCARD_IP: Final = "0.0.0.0"
_FIRST_RESOURCES: Final = ("cpu", "memory", "ephemeral-storage")

__all__ = [
    "AFFINITY_MISMATCH",
    "NODE_NAME_MISMATCH",
    "PORTS_IN_USE",
    "TOO_MANY_PODS",
    "UNSCHEDULABLE",
    "HostPort",
    "NodeState",
    "fit_reason",
    "fit_reasons",
    "host_ports",
    "matches_node_affinity",
    "resource_reasons",
    "taint_reason",
]


@dataclass(frozen=True, slots=True)
class HostPort:
    """A host port a container binds: IP (``0.0.0.0`` for all), protocol and port."""

    ip: str
    protocol: str
    port: int

    def conflicts(self, other: HostPort) -> bool:
        """Whether two bindings collide: same protocol and port, and the same IP or either on
        all addresses."""
        return (
            self.port == other.port
            and self.protocol == other.protocol
            and (self.ip == other.ip or _WILDCARD_IP in (self.ip, other.ip))
        )


def host_ports(pod: PodSpec) -> frozenset[HostPort]:
    """The host ports a pod's containers bind (``ports[].hostPort`` > 0; hostIP defaults to
    ``0.0.0.0`` and protocol to TCP). Init containers are not counted, as kube-scheduler."""
    out = set()
    for container in pod.containers:
        for port in container.ports or ():
            if not isinstance(port, Mapping):
                continue
            number = port.get("hostPort") or 0
            if isinstance(number, int) and number > 0:
                ip = port.get("hostIP") or _WILDCARD_IP
                out.add(HostPort(str(ip), str(port.get("protocol") or "TCP"), number))
    return frozenset(out)


@dataclass(frozen=True, slots=True)
class NodeState:
    """What the filters need to know about a node: its name, labels, taints, whether it is
    cordoned, its allocatable resources, what its bound pods request (``pods`` included, one per
    pod) and the host ports they hold."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    allocatable: ResourceVector = field(default_factory=ResourceVector)
    requested: ResourceVector = field(default_factory=ResourceVector)
    ports: frozenset[HostPort] = frozenset()

    @classmethod
    def from_node(cls, node: Node, bound: Iterable[PodSpec] = ()) -> NodeState:
        """The state of ``node`` with the pods ``bound`` to it."""
        pods = list(bound)
        allocatable = node.status.allocatable if node.status else {}
        return cls(
            name=node.metadata.name or "",
            labels=dict(node.metadata.labels),
            taints=tuple(node.spec.taints),
            unschedulable=bool(node.spec.unschedulable),
            allocatable=ResourceVector.from_quantities(allocatable),
            requested=total(pod_requests(pod) for pod in pods),
            ports=frozenset(port for pod in pods for port in host_ports(pod)),
        )

    @property
    def remaining(self) -> ResourceVector:
        """Allocatable minus requested (may be negative when the node is overcommitted)."""
        return self.allocatable.subtract(self.requested)

    def with_pod(self, pod: PodSpec, requests: ResourceVector | None = None) -> NodeState:
        """The state after binding ``pod`` (``requests``: its :func:`pod_requests`, if known)."""
        added = requests if requests is not None else pod_requests(pod)
        return NodeState(
            name=self.name,
            labels=self.labels,
            taints=self.taints,
            unschedulable=self.unschedulable,
            allocatable=self.allocatable,
            requested=self.requested.add(added),
            ports=self.ports | host_ports(pod),
        )


def taint_reason(pod: PodSpec, taints: Iterable[Taint]) -> str | None:
    """kube-scheduler's reason for the first NoSchedule / NoExecute taint ``pod`` does not
    tolerate, or None."""
    for taint in untolerated(pod.tolerations, taints):
        return f"node(s) had untolerated taint {{{taint.key}: {taint.value or ''}}}"
    return None


def matches_node_affinity(pod: PodSpec, node_name: str, labels: Mapping[str, str]) -> bool:
    """Whether a node with ``labels`` satisfies the pod's nodeSelector and required node
    affinity, as kube-scheduler matches them."""
    if any(labels.get(key) != value for key, value in pod.node_selector.items()):
        return False
    affinity = pod.affinity.node_affinity if pod.affinity else None
    required = affinity.required_during_scheduling_ignored_during_execution if affinity else None
    if required is None:
        return True
    return any(_term_matches(term, node_name, labels) for term in required.node_selector_terms)


def resource_reasons(requests: Mapping[str, int], node: NodeState) -> list[str]:
    """NodeResourcesFit's reasons: ``Too many pods`` when the node holds its allocatable number
    of pods, then ``Insufficient <name>`` (cpu, memory, ephemeral-storage, then the others by
    name) for each non-zero request larger than what is left."""
    reasons = []
    if node.requested.get(PODS, 0) + 1 > node.allocatable.get(PODS, 0):
        reasons.append(TOO_MANY_PODS)
    names = [n for n in _FIRST_RESOURCES if n in requests]
    names += sorted(n for n in requests if n not in _FIRST_RESOURCES and n != PODS)
    for name in names:
        amount = requests[name]
        left = node.allocatable.get(name, 0) - node.requested.get(name, 0)
        if amount > 0 and amount > left:
            reasons.append(f"Insufficient {name}")
    return reasons


def fit_reasons(
    pod: PodSpec, node: NodeState, *, requests: Mapping[str, int] | None = None
) -> list[str]:
    """Why ``pod`` cannot be bound to ``node``: the reasons of the first failing filter (see the
    module docstring), or an empty list when it fits. ``requests``: the pod's
    :func:`pod_requests`, to avoid computing them again."""
    if node.unschedulable and not tolerates(pod.tolerations, UNSCHEDULABLE_TAINT):
        return [UNSCHEDULABLE]
    if pod.node_name and pod.node_name != node.name:
        return [NODE_NAME_MISMATCH]
    reason = taint_reason(pod, node.taints)
    if reason:
        return [reason]
    if not matches_node_affinity(pod, node.name, node.labels):
        return [AFFINITY_MISMATCH]
    if node.ports:
        wanted = host_ports(pod)
        if any(w.conflicts(held) for w in wanted for held in node.ports):
            return [PORTS_IN_USE]
    return resource_reasons(requests if requests is not None else pod_requests(pod), node)


def fit_reason(
    pod: PodSpec, node: NodeState, *, requests: Mapping[str, int] | None = None
) -> str | None:
    """:func:`fit_reasons` joined with ``", "`` as kube-scheduler prints them, or None when the
    pod fits."""
    reasons = fit_reasons(pod, node, requests=requests)
    return ", ".join(reasons) if reasons else None


def _term_matches(term: NodeSelectorTerm, node_name: str, labels: Mapping[str, str]) -> bool:
    if not term.match_expressions and not term.match_fields:
        return False
    return all(_label_matches(r, labels) for r in term.match_expressions) and all(
        _field_matches(r, node_name) for r in term.match_fields
    )


def _label_matches(requirement: NodeSelectorRequirement, labels: Mapping[str, str]) -> bool:
    value = labels.get(requirement.key)
    operator = requirement.operator
    if operator == "In":
        return value is not None and value in requirement.values
    if operator == "NotIn":
        return value is None or value not in requirement.values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    have = parse_int(value) if value is not None else None
    want = parse_int(requirement.values[0]) if len(requirement.values) == 1 else None
    if have is None or want is None:
        return False
    return have > want if operator == "Gt" else have < want


def _field_matches(requirement: NodeSelectorRequirement, node_name: str) -> bool:
    if requirement.key != "metadata.name":
        return False
    inside = node_name in requirement.values
    return inside if requirement.operator == "In" else not inside
