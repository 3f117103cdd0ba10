"""The simulated binder: its choices, and its watch-fed index staying what a fresh read gives."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from agent.api.kube import Node, Pod
from agent.clock import VirtualClock
from agent.kube.simulated.binder import Binder, is_ready
from agent.kube.simulated.cluster import SimulatedCluster
from agent.scheduling.fit import NodeState, fit_reasons
from agent.scheduling.resources import pod_requests


def _node(name: str, cpu: str = "4", *, ready: bool = True, **spec: Any) -> Node:
    return Node.model_validate(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"zone": "a" if name < "n5" else "b"}},
            "spec": spec,
            "status": {
                "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": 4},
                "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            },
        }
    )


def _pod(name: str, cpu: str = "1", **spec: Any) -> Pod:
    container: dict[str, Any] = {"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}
    if spec.pop("port", None):
        container["ports"] = [{"containerPort": 80, "hostPort": 80}]
    return Pod.model_validate(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [container], **spec},
        }
    )


def _placed(cluster: SimulatedCluster) -> dict[str, str | None]:
    return {p.metadata.name or "": p.spec.node_name for p in cluster.list(Pod)}


def _reference(cluster: SimulatedCluster, nominated: dict[str, str]) -> dict[str, str | None]:
    """Where the binder must put the pending pods, worked out from a fresh read of everything:
    oldest first, the nominated node if the pod fits there, else (for a pod without pod
    constraints) the node with the least free cpu that fits, ties by name."""
    pods = cluster.list(Pod)
    placed = {p.metadata.name or "": p.spec.node_name for p in pods}
    nodes = [n for n in cluster.list(Node) if is_ready(n) and not n.metadata.deletion_timestamp]
    states = {
        n.metadata.name or "": NodeState.from_node(
            n, [p.spec for p in pods if p.spec.node_name == n.metadata.name]
        )
        for n in nodes
    }
    pending = [p for p in pods if not p.spec.node_name and not p.metadata.deletion_timestamp]
    pending.sort(key=lambda p: (p.metadata.creation_timestamp or "", p.metadata.name or ""))
    for pod in pending:
        planned = states.get(nominated.get(f"default/{pod.metadata.name}", ""))
        fitting = [s for s in states.values() if not fit_reasons(pod.spec, s)]
        if planned is not None and not fit_reasons(pod.spec, planned):
            choice: NodeState | None = planned
        elif pod.spec.topology_spread_constraints:
            choice = None
        else:
            choice = min(fitting, key=lambda s: (_free_cpu(s), s.name), default=None)
        if choice is not None:
            placed[pod.metadata.name or ""] = choice.name
            states[choice.name] = choice.with_pod(pod.spec, pod_requests(pod.spec))
    return placed


def _free_cpu(state: NodeState) -> int:
    return state.allocatable.get("cpu", 0) - state.requested.get("cpu", 0)


def _change(cluster: SimulatedCluster, clock: VirtualClock, rng: random.Random, step: int) -> None:
    """One random change: a pod or node comes, goes or changes."""
    roll = rng.random()
    pods, nodes = cluster.list(Pod), cluster.list(Node)
    if roll < 0.45:
        spec: dict[str, Any] = {"port": rng.random() < 0.15}
        if rng.random() < 0.15:
            spec["nodeSelector"] = {"zone": "b"}
        if rng.random() < 0.1:
            spread = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
            spec["topologySpreadConstraints"] = [spread]
        cluster.create(_pod(f"p{step}", rng.choice(["500m", "1", "2"]), **spec))
    elif roll < 0.6 and pods:
        pod = rng.choice(pods)
        cluster.delete(Pod, pod.metadata.name or "", "default")
    elif roll < 0.75:
        name = f"n{rng.randrange(8)}"
        if name in {n.metadata.name for n in nodes}:
            cluster.delete(Node, name)
        else:
            cluster.create(_node(name, rng.choice(["2", "4"]), ready=rng.random() < 0.8))
    elif roll < 0.9 and nodes:
        node = rng.choice(nodes)
        spec_changes = {"unschedulable": rng.random() < 0.3}
        ready = _node("x", ready=rng.random() < 0.7)
        cluster.update(
            node.model_copy(
                update={"spec": node.spec.model_copy(update=spec_changes), "status": ready.status}
            )
        )
    clock.advance(timedelta(seconds=rng.choice([0, 1])))  # equal timestamps: ties by name


def _nominate(cluster: SimulatedCluster, rng: random.Random) -> dict[str, str]:
    """Some pending pods planned on some node (maybe not Ready, maybe full)."""
    nodes = [n.metadata.name or "" for n in cluster.list(Node)]
    pending = [p.metadata.name for p in cluster.list(Pod) if not p.spec.node_name]
    if not nodes:
        return {}
    return {f"default/{name}": rng.choice(nodes) for name in pending if rng.random() < 0.4}


def test_the_binder_binds_as_a_fresh_read_of_the_cluster_would() -> None:
    for seed in range(6):
        rng = random.Random(seed)
        clock = VirtualClock()
        cluster = SimulatedCluster(clock)
        for index in range(3):  # some objects exist before the binder: it reads them first
            cluster.create(_node(f"n{index}"))
            cluster.create(_pod(f"early{index}"))
        binder = Binder(cluster)
        for step in range(150):
            _change(cluster, clock, rng, step)
            if rng.random() < 0.3:
                nominated = _nominate(cluster, rng)
                wanted = _reference(cluster, nominated)
                binder.bind_pending(nominated)
                assert _placed(cluster) == wanted


def test_the_fullest_node_that_fits_wins_and_ties_go_by_name() -> None:
    cluster = SimulatedCluster(VirtualClock())
    binder = Binder(cluster)
    for name in ("n3", "n2", "n1"):
        cluster.create(_node(name))
    cluster.create(_pod("a", "3"))
    assert binder.bind_pending() == 1
    assert _placed(cluster)["a"] == "n1"  # three empty nodes: the first by name
    cluster.create(_pod("b", "1"))
    cluster.create(_pod("c", "1"))
    binder.bind_pending()
    assert _placed(cluster) == {"a": "n1", "b": "n1", "c": "n2"}


def test_a_nominated_node_comes_first_and_pods_with_spread_bind_only_there() -> None:
    cluster = SimulatedCluster(VirtualClock())
    binder = Binder(cluster)
    cluster.create(_node("n1"))
    cluster.create(_node("n2"))
    spread = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
    cluster.create(_pod("free"))
    cluster.create(_pod("spread", topologySpreadConstraints=[spread]))
    assert binder.bind_pending({"default/free": "n2"}) == 1
    assert _placed(cluster) == {"free": "n2", "spread": None}
    assert binder.bind_pending({"default/spread": "n1"}) == 1
    assert _placed(cluster)["spread"] == "n1"


def test_room_freed_by_a_deleted_pod_and_nodes_leaving_ready_are_seen() -> None:
    cluster = SimulatedCluster(VirtualClock())
    binder = Binder(cluster)
    cluster.create(_node("n1", "2"))
    cluster.create(_pod("big", "2"))
    binder.bind_pending()
    cluster.create(_pod("next", "2"))
    assert binder.bind_pending() == 0
    cluster.delete(Pod, "big", "default")
    assert binder.bind_pending() == 1
    node = cluster.get(Node, "n1")
    cluster.update(node.model_copy(update={"status": _node("n1", "2", ready=False).status}))
    cluster.create(_pod("late", "500m"))
    assert binder.bind_pending() == 0  # the only node is no longer Ready
