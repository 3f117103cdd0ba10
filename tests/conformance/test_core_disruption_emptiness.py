"""core-disruption: emptiness, as Karpenter's pkg/controllers/disruption/emptiness_test.go
asserts it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.api.kube import Pod
from tests.conformance.karpenter import mirrors
from tests.conformance.test_core_disruption_kit import (
    DND,
    SUITE,
    Sim,
    deployment,
    drift_at,
    pool,
    scale,
)

SUITE = SUITE
FILE = "pkg/controllers/disruption/emptiness_test.go"
B = "Emptiness / Budgets / "
E = "Emptiness / Emptiness / "
TOP = "Emptiness / "
EMPTIED = 180.0
"""When :func:`_emptied` scales the Deployment down."""


def _when_empty(after: str = "0s", nodes: str = "100%") -> dict[str, Any]:
    return {"consolidationPolicy": "WhenEmpty", "consolidateAfter": after,
            "budgets": [{"nodes": nodes}]}  # fmt: skip


def _emptied(
    tmp_path: Path, count: int, keep: int = 0, *, after: str = "0s", nodes: str = "100%"
) -> Sim:
    """``count`` nodes (one pod each), of which all but ``keep`` are emptied at 3 minutes."""
    manifests = [
        pool(disruption=_when_empty(after, nodes)),
        deployment("web", count, "3", spread=True),
    ]
    return Sim(tmp_path, manifests, [scale("web", keep, "3m")]).run(EMPTIED - 1)


def _names(sim: Sim) -> set[str]:
    return {n.metadata.name or "" for n in sim.nodes()}


def _emptiness_taken(sim: Sim) -> set[str]:
    return {n for c in sim.commands("emptiness") for n in c["candidates"]}


@mirrors(FILE, B + "should allow all empty nodes to be disrupted")
def test_a_full_budget_lets_every_empty_node_go(tmp_path: Path) -> None:
    sim = _emptied(tmp_path, 10)
    before = _names(sim)
    assert len(before) == 10
    sim.run(EMPTIED + 120)
    assert _emptiness_taken(sim) == before
    assert len(sim.commands("emptiness")) == 1  # one command for all
    assert sim.nodes() == []


@mirrors(FILE, B + "should allow no empty nodes to be disrupted")
def test_a_zero_budget_keeps_every_empty_node(tmp_path: Path) -> None:
    sim = _emptied(tmp_path, 10, nodes="0")
    before = _names(sim)
    sim.run(EMPTIED + 300)
    assert sim.commands() == []
    assert _names(sim) == before


@mirrors(FILE, B + "should only allow 3 empty nodes to be disrupted")
def test_a_budget_of_three_takes_three_empty_nodes(tmp_path: Path) -> None:
    sim = _emptied(tmp_path, 10, nodes="3")
    sim.run(EMPTIED + 60)
    first = sim.commands("emptiness")[0]
    assert len(first["candidates"]) == 3


def _pools(tmp_path: Path, nodes: str) -> Sim:
    manifests: list[dict[str, Any]] = []
    events = []
    for name in ("a", "b", "c"):
        manifests += [pool(name, _when_empty("30s", nodes)),
                      deployment(f"w{name}", 3, "3", on=name, spread=True)]  # fmt: skip
        events.append(scale(f"w{name}", 0, "3m"))
    return Sim(tmp_path, manifests, events).run(EMPTIED - 1)


@mirrors(FILE, B + "should allow 2 nodes from each nodePool to be deleted")
def test_half_of_three_rounds_up_to_two_per_nodepool(tmp_path: Path) -> None:
    sim = _pools(tmp_path, "50%")
    assert len(sim.nodes()) == 9
    sim.run(EMPTIED + 60)
    first = sim.commands("emptiness")[0]
    per_pool: dict[str, int] = {}
    for node in first["candidates"]:
        name = next(c for c in sim.world.timeline if c.type == "Disrupted"
                    and c.object == f"node/{node}").details["nodepool"]  # fmt: skip
        per_pool[name] = per_pool.get(name, 0) + 1
    assert per_pool == {"a": 2, "b": 2, "c": 2}


@mirrors(FILE, B + "should allow all nodes from each nodePool to be deleted")
def test_a_full_budget_in_each_nodepool_empties_them_all(tmp_path: Path) -> None:
    sim = _pools(tmp_path, "100%")
    sim.run(EMPTIED + 60)
    assert len(sim.commands("emptiness")[0]["candidates"]) == 9
    assert sim.nodes() == []


@mirrors(FILE, E + "can delete empty nodes")
def test_an_empty_node_is_deleted(tmp_path: Path) -> None:
    sim = _emptied(tmp_path, 1)
    (node,) = _names(sim)
    sim.run(EMPTIED + 60)
    assert _emptiness_taken(sim) == {node}
    assert sim.nodes() == []
    assert sim.commands("emptiness")[0]["replacements"] == []


@mirrors(FILE, E + "can delete empty and drifted nodes")
def test_an_empty_drifted_node_is_deleted(tmp_path: Path) -> None:
    manifests = [pool(disruption=_when_empty("10m")), deployment("web", 1, "3")]
    sim = Sim(tmp_path, manifests, [scale("web", 0, "3m"), drift_at("4m")]).run(239)
    (node,) = _names(sim)
    sim.run(400)
    assert node in sim.disrupted()
    assert sim.nodes() == []
    assert sim.claims() == []  # no replacement for an empty node


@mirrors(FILE, E + "should ignore nodes without the consolidatable status condition")
def test_an_empty_node_waits_until_it_is_consolidatable(tmp_path: Path) -> None:
    sim = _emptied(tmp_path, 1, after="20m")
    (node,) = _names(sim)
    sim.run(EMPTIED + 600)
    assert sim.candidates_for("emptiness") == set()
    assert _names(sim) == {node}


@mirrors(FILE, E + "should ignore nodes with the karpenter.sh/do-not-disrupt annotation")
def test_emptiness_spares_a_node_annotated_do_not_disrupt(tmp_path: Path) -> None:
    sim = _emptied(tmp_path, 2)
    held, other = sorted(_names(sim))
    sim.annotate_node(held, {DND: "true"})
    sim.run(EMPTIED + 120)
    assert _emptiness_taken(sim) == {other}
    assert _names(sim) == {held}


@mirrors(FILE, E + "should delete nodes with the karpenter.sh/do-not-disrupt annotation set to false")  # fmt: skip  # noqa: E501
def test_do_not_disrupt_false_does_not_hold_an_empty_node(tmp_path: Path) -> None:
    sim = _emptied(tmp_path, 1)
    (node,) = _names(sim)
    sim.annotate_node(node, {DND: "false"})
    sim.run(EMPTIED + 60)
    assert _emptiness_taken(sim) == {node}


@mirrors(FILE, E + "should ignore nodes that have pods")
def test_emptiness_ignores_nodes_with_pods(tmp_path: Path) -> None:
    sim = _emptied(tmp_path, 2, keep=1)
    sim.run(EMPTIED + 120)
    busy = sim.node_of("web")
    assert busy not in _emptiness_taken(sim)
    assert _names(sim) == {busy}


@mirrors(FILE, E + "should ignore nodes with the consolidatable status condition set to false")
def test_a_node_emptied_recently_is_not_consolidatable_yet(tmp_path: Path) -> None:
    sim = _emptied(tmp_path, 1, after="5m")
    (node,) = _names(sim)
    sim.run(EMPTIED + 200)  # 200 s of the 300 s
    assert sim.commands() == []
    sim.run(EMPTIED + 400)
    assert _emptiness_taken(sim) == {node}


@mirrors(FILE, TOP + "can delete multiple empty nodes")
def test_several_empty_nodes_go_in_one_command(tmp_path: Path) -> None:
    sim = _emptied(tmp_path, 2)
    both = _names(sim)
    sim.run(EMPTIED + 60)
    (command,) = sim.commands("emptiness")
    assert set(command["candidates"]) == both


@mirrors(FILE, TOP + "considers pending pods when consolidating")
def test_emptiness_keeps_a_node_with_a_pod_while_another_pod_is_pending(tmp_path: Path) -> None:
    huge = deployment("huge", 1, "62")
    sim = Sim(tmp_path, [pool(disruption=_when_empty()), deployment("web", 1, "1"), huge])
    sim.run(600)
    (node,) = _names(sim)
    assert sim.node_of("web") == node
    assert all(not p.spec.node_name for p in sim.pods("huge"))
    assert sim.commands() == []
    assert _names(sim) == {node}


@mirrors(FILE, TOP + "will consider a node with a DaemonSet pod as empty")
def test_a_node_with_only_daemon_pods_is_empty(tmp_path: Path) -> None:
    daemon = {"metadata": {"name": "agent-x", "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "d1",
         "controller": True}]}}  # fmt: skip
    manifests = [pool(disruption=_when_empty()), deployment("web", 1, "3")]
    sim = Sim(tmp_path, manifests, [scale("web", 0, "3m")]).run(EMPTIED - 1)
    (node,) = _names(sim)
    sim.add_pod(daemon, node)
    sim.run(EMPTIED + 60)
    assert _emptiness_taken(sim) == {node}


@mirrors(FILE, TOP + "will consider a node with terminating Deployment pods as empty")
def test_a_node_with_only_terminating_deployment_pods_is_empty(tmp_path: Path) -> None:
    manifests = [pool(disruption=_when_empty()), deployment("web", 1, "3")]
    sim = Sim(tmp_path, manifests, [scale("web", 0, "3m")]).run(EMPTIED - 1)
    (node,) = _names(sim)
    leaving = {"metadata": {"name": "old-x", "finalizers": ["t/hold"], "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "old", "uid": "r1",
         "controller": True}]}}  # fmt: skip
    pod = sim.add_pod(leaving, node)
    sim.world.cluster.delete(Pod, pod.metadata.name or "", "default")
    sim.run(EMPTIED + 60)
    assert _emptiness_taken(sim) == {node}


@mirrors(FILE, TOP + "will not consider a node with a terminating StatefulSet pod as empty")
def test_a_node_with_a_terminating_statefulset_pod_is_not_empty(tmp_path: Path) -> None:
    manifests = [pool(disruption=_when_empty()), deployment("web", 1, "3")]
    sim = Sim(tmp_path, manifests, [scale("web", 0, "3m")]).run(EMPTIED - 1)
    (node,) = _names(sim)
    leaving = {"metadata": {"name": "db-0", "finalizers": ["t/hold"], "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": "s1",
         "controller": True}]}}  # fmt: skip
    pod = sim.add_pod(leaving, node)
    sim.world.cluster.delete(Pod, pod.metadata.name or "", "default")
    sim.run(EMPTIED + 120)
    assert sim.commands("emptiness") == []
    assert _names(sim) == {node}


@mirrors(FILE, TOP + "should wait for the node TTL for empty nodes before consolidating")
def test_emptiness_waits_for_consolidate_after(tmp_path: Path) -> None:
    sim = _emptied(tmp_path, 1, after="2m")
    (node,) = _names(sim)
    sim.run(EMPTIED + 100)
    assert sim.commands() == []
    sim.run(EMPTIED + 200)
    (command,) = sim.commands("emptiness")
    assert command["candidates"] == [node]
    assert command["t"] >= EMPTIED + 120
