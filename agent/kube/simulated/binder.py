"""A kube-scheduler stand-in for the simulated cluster: pending pods bind to nodes that fit.

For each pending pod (oldest first) it filters the Ready nodes with the scheduling framework's
filters of :func:`agent.scheduling.fit.fit_reasons` (cordon, taints, node affinity, resources,
host ports), then prefers the node Karpenter planned for the pod, else the fullest node that
fits: the one with the least free cpu that fits (bin-packing, so that the simulation does not
undo the provisioner's plan). Pod affinity, anti-affinity and topology spread are not checked
here: a pod with any of them waits until the provisioner has planned it, and then binds only
where it was planned.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Iterable, Iterator, Mapping

from agent.api.kube import Node, Pod
from agent.kube.port import Cluster
from agent.scheduling.fit import NodeState, fit_reasons
from agent.scheduling.resources import ResourceVector, pod_requests, total


def is_ready(node: Node) -> bool:
    """Whether the node reports Ready=True."""
    conditions = node.status.conditions if node.status else []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


class Binder:
    """See the module docstring."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._requests: dict[str, ResourceVector] = {}
        """Pod uid → its requests (a pod's requests never change once it exists)."""

    def _requests_of(self, pod: Pod) -> ResourceVector:
        uid = pod.metadata.uid
        if not uid:
            return pod_requests(pod.spec)
        found = self._requests.get(uid)
        if found is None:
            found = self._requests[uid] = pod_requests(pod.spec)
        return found

    def _state(self, node: Node, bound: list[Pod]) -> NodeState:
        """The node with its bound pods, their requests read from the cache."""
        if not all(_no_ports(p) for p in bound):
            return NodeState.from_node(node, [p.spec for p in bound])
        empty = NodeState.from_node(node, [])
        return dataclasses.replace(empty, requested=total(self._requests_of(p) for p in bound))

    def bind_pending(self, nominated: Mapping[str, str] | None = None) -> int:
        """Bind every pending pod that fits somewhere; return how many were bound.

        ``nominated`` maps ``namespace/name`` to the node Karpenter planned for the pod.
        """
        nominated = nominated or {}
        pods = self.cluster.list(Pod)
        pending = [p for p in pods if not p.spec.node_name and not p.metadata.deletion_timestamp]
        if not pending:
            return 0
        nodes = [
            n for n in self.cluster.list(Node) if is_ready(n) and not n.metadata.deletion_timestamp
        ]
        if not nodes:
            return 0
        bound_specs: dict[str, list[Pod]] = {}
        for pod in pods:
            if pod.spec.node_name:
                bound_specs.setdefault(pod.spec.node_name, []).append(pod)
        if len(self._requests) > 2 * len(pods) + 1000:
            live = {p.metadata.uid for p in pods}
            self._requests = {uid: r for uid, r in self._requests.items() if uid in live}
        states = {
            n.metadata.name or "": self._state(n, bound_specs.get(n.metadata.name or "", []))
            for n in nodes
        }
        bound = 0
        pending.sort(key=lambda p: (p.metadata.creation_timestamp or "", p.metadata.name or ""))
        order = _FreeCpuOrder(states.values())
        for pod in pending:
            requests = self._requests_of(pod)
            key = f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}"
            planned = states.get(nominated.get(key, ""))
            choice = None
            if planned is not None and _fits(pod, requests, planned):
                choice = planned
            elif not _has_pod_constraints(pod):
                choice = next(
                    (s for s in order.with_room(requests, states) if _fits(pod, requests, s)),
                    None,
                )
            if choice is None:
                continue
            self.cluster.bind(
                pod.metadata.name or "", pod.metadata.namespace or "default", choice.name
            )
            states[choice.name] = choice.with_pod(pod.spec, requests)
            order.update(states[choice.name])
            bound += 1
        return bound


class _FreeCpuOrder:
    """Nodes by free cpu, least first (ties by name): the fullest node with room comes first."""

    def __init__(self, states: Iterable[NodeState]) -> None:
        self._free: dict[str, int] = {}
        self._order: list[tuple[int, str]] = []
        for state in states:
            self._free[state.name] = _free_cpu(state)
        self._order = sorted((free, name) for name, free in self._free.items())

    def with_room(
        self, requests: Mapping[str, int], states: Mapping[str, NodeState]
    ) -> Iterator[NodeState]:
        """The nodes with at least the pod's cpu free, fullest first."""
        start = bisect.bisect_left(self._order, (requests.get("cpu", 0), ""))
        for _, name in self._order[start:]:
            yield states[name]

    def update(self, state: NodeState) -> None:
        """``state`` took a pod: move it to its new place."""
        old = self._free[state.name]
        self._order.pop(bisect.bisect_left(self._order, (old, state.name)))
        self._free[state.name] = new = _free_cpu(state)
        bisect.insort(self._order, (new, state.name))


def _free_cpu(state: NodeState) -> int:
    return state.allocatable.get("cpu", 0) - state.requested.get("cpu", 0)


def _fits(pod: Pod, requests: Mapping[str, int], state: NodeState) -> bool:
    return _room(requests, state) and not fit_reasons(pod.spec, state, requests=requests)


def _no_ports(pod: Pod) -> bool:
    return not any(container.ports for container in pod.spec.containers)


def _has_pod_constraints(pod: Pod) -> bool:
    """Whether the pod's placement depends on other pods (affinity, anti-affinity, spread)."""
    affinity = pod.spec.affinity
    if pod.spec.topology_spread_constraints:
        return True
    return affinity is not None and (
        affinity.pod_affinity is not None or affinity.pod_anti_affinity is not None
    )


def _room(requests: Mapping[str, int], state: NodeState) -> bool:
    """A quick look at cpu, memory and pod count before the full filters (same answer, faster)."""
    for name in ("cpu", "memory"):
        amount = requests.get(name, 0)
        if amount > 0 and amount > state.allocatable.get(name, 0) - state.requested.get(name, 0):
            return False
    return state.requested.get("pods", 0) < state.allocatable.get("pods", 0)
