"""core-disruption: which nodes are disruption candidates (Karpenter's "Candidate Filtering" and
the disruption budget counts of pkg/controllers/disruption/suite_test.go)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.api.kube import Deployment, Node, Pod
from agent.api.nodeclaim import NodeClaim
from agent.disruption.candidates import DisruptionClass
from common.kubemodel import parse_manifest
from tests.conformance.karpenter import mirrors
from tests.conformance.test_core_disruption_kit import (
    DND,
    SUITE,
    UP,
    Sim,
    deployment,
    drift_at,
    pdb,
    pool,
)

SUITE = SUITE
FILE = "pkg/controllers/disruption/suite_test.go"
CF = "Candidate Filtering / "


def _one_node(tmp_path: Path, *extra: dict[str, Any], grace: str | None = None) -> Sim:
    template: dict[str, Any] = {"terminationGracePeriod": grace} if grace else {}
    sim = Sim(tmp_path, [pool(**template), deployment("web", 1, "1"), *extra])
    return sim.run(UP)


def _dnd_web(replicas: int = 1) -> dict[str, Any]:
    return deployment("web", replicas, "1", annotations={DND: "true"})


def _with_pod(tmp_path: Path, pod: dict[str, Any], *extra: dict[str, Any]) -> tuple[Sim, str]:
    sim = _one_node(tmp_path, *extra)
    (node,) = [n.metadata.name or "" for n in sim.nodes()]
    sim.add_pod(pod, node)
    return sim, node


def _terminating(sim: Sim, pod: Pod) -> None:
    sim.world.cluster.delete(Pod, pod.metadata.name or "", pod.metadata.namespace or "default")
    found = sim.world.cluster.get(Pod, pod.metadata.name or "", pod.metadata.namespace or "")
    assert found.metadata.deletion_timestamp


def _uninitialize(sim: Sim, claim: NodeClaim) -> None:
    conditions = [c for c in claim.status.conditions if c.type != "Initialized"]
    status = claim.status.model_copy(update={"conditions": conditions})
    sim.world.cluster.update(claim.model_copy(update={"status": status}))
    sim.world.disruption.snapshot()  # the condition memo reads the claim afresh


def _relabel(sim: Sim, node: str, **changes: str | None) -> None:
    obj = sim.world.cluster.get(Node, node)
    labels = {**obj.metadata.labels}
    for key, value in changes.items():
        real = key.replace("__", "/").replace("_", "-").replace("-dot-", ".")
        if value is None:
            labels.pop(real, None)
        else:
            labels[real] = value
    meta = obj.metadata.model_copy(update={"labels": labels})
    sim.world.cluster.update(obj.model_copy(update={"metadata": meta}))


@mirrors(FILE, CF + "should not consider candidates that have do-not-disrupt pods scheduled and no terminationGracePeriod")  # fmt: skip  # noqa: E501
def test_dnd_pod_without_grace_period_holds_the_node(tmp_path: Path) -> None:
    sim = Sim(tmp_path, [pool(), _dnd_web()]).run(UP)
    found, held = sim.candidates("graceful")
    node = sim.node_of("web")
    assert found == set()
    assert DND in held[node]
    assert "web-" in held[node]


@mirrors(FILE, CF + "should not consider candidates that have do-not-disrupt mirror pods scheduled")
def test_dnd_mirror_pod_holds_the_node(tmp_path: Path) -> None:
    sim = _one_node(tmp_path)
    node = sim.node_of("web")
    mirror = {"metadata": {"name": "static-x", "namespace": "kube-system",
                           "annotations": {DND: "true"},
                           "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node,
                                                "uid": "n1", "controller": True}]}}  # fmt: skip
    sim.add_pod(mirror, node)
    found, held = sim.candidates("graceful")
    assert node not in found
    assert "static-x" in held[node]


@mirrors(
    FILE, CF + "should not consider candidates that have do-not-disrupt daemonset pods scheduled"
)
def test_dnd_daemonset_pod_holds_the_node(tmp_path: Path) -> None:
    daemon = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {
                "metadata": {"labels": {"app": "agent"}, "annotations": {DND: "true"}},
                "spec": {"containers": [{"name": "a", "image": "a",
                                         "resources": {"requests": {"cpu": "100m"}}}]},
            },
        },
    }  # fmt: skip
    sim = _one_node(tmp_path, daemon)
    node = sim.node_of("web")
    assert any(p.spec.node_name == node for p in sim.pods("agent"))
    found, held = sim.candidates("graceful")
    assert node not in found
    assert "agent-" in held[node]


@mirrors(FILE, CF + "should consider candidates that have do-not-disrupt pods scheduled with a terminationGracePeriod set for eventual disruption")  # fmt: skip  # noqa: E501
def test_dnd_pod_with_grace_period_is_an_eventual_candidate(tmp_path: Path) -> None:
    sim = Sim(tmp_path, [pool(terminationGracePeriod="5m"), _dnd_web()]).run(UP)
    found, _ = sim.candidates("eventual")
    assert found == {sim.node_of("web")}


@mirrors(FILE, CF + "should consider candidates that have PDB-blocked pods scheduled with a terminationGracePeriod set for eventual disruption")  # fmt: skip  # noqa: E501
def test_pdb_blocked_pod_with_grace_period_is_an_eventual_candidate(tmp_path: Path) -> None:
    sim = _one_node(tmp_path, pdb("web", maxUnavailable=0), grace="5m")
    found, _ = sim.candidates("eventual")
    assert found == {sim.node_of("web")}


@mirrors(FILE, CF + "should not consider candidates that have do-not-disrupt pods scheduled with a terminationGracePeriod set for graceful disruption")  # fmt: skip  # noqa: E501
def test_dnd_pod_with_grace_period_is_no_graceful_candidate(tmp_path: Path) -> None:
    sim = Sim(tmp_path, [pool(terminationGracePeriod="5m"), _dnd_web()]).run(UP)
    found, held = sim.candidates("graceful")
    assert found == set()
    assert DND in held[sim.node_of("web")]


@mirrors(FILE, CF + "should not consider candidates that have PDB-blocked pods scheduled with a terminationGracePeriod set for graceful disruption")  # fmt: skip  # noqa: E501
def test_pdb_blocked_pod_with_grace_period_is_no_graceful_candidate(tmp_path: Path) -> None:
    sim = _one_node(tmp_path, pdb("web", maxUnavailable=0), grace="5m")
    found, held = sim.candidates("graceful")
    assert found == set()
    assert "prevents pod evictions" in held[sim.node_of("web")]


@mirrors(FILE, CF + "should not consider candidates that have do-not-disrupt pods scheduled without a terminationGracePeriod set for eventual disruption")  # fmt: skip  # noqa: E501
def test_dnd_pod_without_grace_period_is_no_eventual_candidate(tmp_path: Path) -> None:
    sim = Sim(tmp_path, [pool(), _dnd_web()]).run(UP)
    found, held = sim.candidates("eventual")
    assert found == set()
    assert DND in held[sim.node_of("web")]


@mirrors(FILE, CF + "should not consider candidates that have PDB-blocked pods scheduled without a terminationGracePeriod set for eventual disruption")  # fmt: skip  # noqa: E501
def test_pdb_blocked_pod_without_grace_period_is_no_eventual_candidate(tmp_path: Path) -> None:
    sim = _one_node(tmp_path, pdb("web", maxUnavailable=0))
    found, held = sim.candidates("eventual")
    assert found == set()
    assert "prevents pod evictions" in held[sim.node_of("web")]


@mirrors(FILE, CF + "should consider candidates that have do-not-disrupt terminating pods")
def test_dnd_terminating_pod_does_not_hold_the_node(tmp_path: Path) -> None:
    sim = _one_node(tmp_path)
    node = sim.node_of("web")
    pod = sim.add_pod(
        {"metadata": {"name": "leaving", "annotations": {DND: "true"}, "finalizers": ["t/hold"]}},
        node,
    )
    assert sim.candidates("graceful")[1].get(node, "").find("leaving") >= 0
    _terminating(sim, pod)
    found, _ = sim.candidates("graceful")
    assert node in found


@mirrors(FILE, CF + "should consider candidates that have do-not-disrupt terminal pods")
def test_dnd_terminal_pods_do_not_hold_the_node(tmp_path: Path) -> None:
    sim = _one_node(tmp_path)
    node = sim.node_of("web")
    for name, phase in (("done", "Succeeded"), ("crashed", "Failed")):
        sim.add_pod({"metadata": {"name": name, "annotations": {DND: "true"}}}, node, phase)
    found, _ = sim.candidates("graceful")
    assert node in found


@mirrors(FILE, CF + "should not consider candidates that have do-not-disrupt on nodes")
def test_dnd_node_is_no_candidate(tmp_path: Path) -> None:
    sim = _one_node(tmp_path)
    node = sim.node_of("web")
    sim.annotate_node(node, {DND: "true"})
    classes: tuple[DisruptionClass, ...] = ("graceful", "eventual")
    for disruption_class in classes:
        found, held = sim.candidates(disruption_class)
        assert node not in found
        assert DND in held[node]


@mirrors(FILE, CF + "should not consider candidates that have multiple PDBs on the same pod")
def test_two_budgets_over_one_pod_hold_the_node(tmp_path: Path) -> None:
    budgets = [pdb("web", minAvailable=0), pdb("web", maxUnavailable="100%")]
    sim = _one_node(tmp_path, *budgets)
    found, held = sim.candidates("graceful")
    assert found == set()
    assert "more than one PodDisruptionBudget" in held[sim.node_of("web")]


@mirrors(FILE, CF + "should not consider candidates that have fully blocking PDBs")
def test_fully_blocking_budget_holds_the_node(tmp_path: Path) -> None:
    sim = _one_node(tmp_path, pdb("web", maxUnavailable=0))
    found, held = sim.candidates("graceful")
    assert found == set()
    assert "prevents pod evictions" in held[sim.node_of("web")]


@mirrors(
    FILE, CF + "should not consider candidates that have fully blocking PDBs on daemonset pods"
)
def test_fully_blocking_budget_on_daemon_pods_holds_the_node(tmp_path: Path) -> None:
    daemon = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {"containers": [{"name": "a", "image": "a",
                                         "resources": {"requests": {"cpu": "100m"}}}]},
            },
        },
    }  # fmt: skip
    sim = _one_node(tmp_path, daemon, pdb("agent", maxUnavailable=0))
    node = sim.node_of("web")
    found, held = sim.candidates("graceful")
    assert node not in found
    assert "agent-" in held[node]


@mirrors(FILE, CF + "should consider candidates that have fully blocking PDBs on mirror pods")
def test_fully_blocking_budget_on_mirror_pods_does_not_hold_the_node(tmp_path: Path) -> None:
    sim = _one_node(tmp_path, pdb("static", maxUnavailable=0))
    node = sim.node_of("web")
    mirror = {"metadata": {"name": "static-x", "labels": {"app": "static"},
                           "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node,
                                                "uid": "n1", "controller": True}]}}  # fmt: skip
    sim.add_pod(mirror, node)
    found, _ = sim.candidates("graceful")
    assert node in found


@mirrors(FILE, CF + "should not consider candidates that have do-not-disrupt pods without a terminationGracePeriod set for graceful disruption")  # fmt: skip  # noqa: E501
def test_dnd_pod_is_no_graceful_candidate(tmp_path: Path) -> None:
    sim = Sim(tmp_path, [pool(), _dnd_web()]).run(UP)
    assert sim.candidates("graceful")[0] == set()
    assert sim.candidates_for("emptiness") == set()


@mirrors(FILE, CF + "should not consider candidates that have fully blocking PDBs without a terminationGracePeriod set for graceful disruption")  # fmt: skip  # noqa: E501
def test_fully_blocking_budget_is_no_graceful_candidate(tmp_path: Path) -> None:
    sim = _one_node(tmp_path, pdb("web", minAvailable="100%"))
    found, held = sim.candidates("graceful")
    assert found == set()
    assert "prevents pod evictions" in held[sim.node_of("web")]


@mirrors(FILE, CF + "should consider candidates that have fully blocking PDBs on terminal pods")
def test_fully_blocking_budget_on_terminal_pods_does_not_hold_the_node(tmp_path: Path) -> None:
    sim = _one_node(tmp_path, pdb("batch", maxUnavailable=0))
    node = sim.node_of("web")
    for name, phase in (("done", "Succeeded"), ("crashed", "Failed")):
        sim.add_pod({"metadata": {"name": name, "labels": {"app": "batch"}}}, node, phase)
    found, _ = sim.candidates("graceful")
    assert node in found


@mirrors(FILE, CF + "should consider candidates that have fully blocking PDBs on terminating pods")
def test_fully_blocking_budget_on_terminating_pods_does_not_hold_the_node(tmp_path: Path) -> None:
    sim = _one_node(tmp_path, pdb("batch", maxUnavailable=0))
    node = sim.node_of("web")
    pod = sim.add_pod(
        {"metadata": {"name": "leaving", "labels": {"app": "batch"}, "finalizers": ["t/hold"]}},
        node,
    )
    assert node not in sim.candidates("graceful")[0]
    _terminating(sim, pod)
    assert node in sim.candidates("graceful")[0]


@mirrors(FILE, CF + "should not consider candidates that has just a Node representation")
def test_a_node_without_nodeclaim_is_no_candidate(tmp_path: Path) -> None:
    sim = _one_node(tmp_path)
    managed = sim.node_of("web")
    stray = sim.world.cluster.get(Node, managed)
    meta = stray.metadata.model_copy(update={"name": "unmanaged", "uid": None})
    sim.world.cluster.create(stray.model_copy(update={"metadata": meta}))
    found, held = sim.candidates("graceful")
    assert found == {managed}
    assert "unmanaged" not in held


@mirrors(FILE, CF + "should not consider candidate that has just a NodeClaim representation")
def test_a_nodeclaim_without_node_is_no_candidate(tmp_path: Path) -> None:
    sim = Sim(tmp_path, [pool(), deployment("web", 1, "1")]).run(5)
    (claim,) = sim.claims()
    assert sim.nodes() == []
    found, held = sim.candidates("graceful")
    assert found == set()
    assert held[claim.name] in ("node is not registered", "node is not initialized")


@mirrors(FILE, CF + "should not consider candidates that are nominated")
def test_a_node_a_pending_pod_is_heading_to_is_no_candidate(tmp_path: Path) -> None:
    sim = _one_node(tmp_path)
    node = sim.node_of("web")
    assert node in sim.candidates("graceful")[0]
    late = deployment("late", 1, "500m")
    sim.world.cluster.create(parse_manifest(Deployment, late))
    sim.world.workloads.reconcile()
    (pod,) = sim.pods("late")
    assert not pod.spec.node_name
    sim.world.provisioner.nominations[f"default/{pod.metadata.name}"] = sim.claim_of(node).name
    found, held = sim.candidates("graceful")
    assert node not in found
    assert held[node] == "node is nominated for a pending pod"
    sim.run(UP + 30)  # the pod binds: the nomination is spent
    assert sim.pods("late")[0].spec.node_name == node
    assert node in sim.candidates("graceful")[0]


@mirrors(FILE, CF + "should not consider candidates that are deleting")
def test_a_deleting_node_is_no_candidate(tmp_path: Path) -> None:
    sim = _one_node(tmp_path)
    node = sim.node_of("web")
    claim = sim.claim_of(node)
    sim.world.cluster.delete(NodeClaim, claim.name)
    found, held = sim.candidates("graceful")
    assert node not in found
    assert held[node] == "node is being deleted"


@mirrors(FILE, CF + "should not consider candidates that are MarkedForDeletion")
def test_a_node_in_a_command_is_no_candidate(tmp_path: Path) -> None:
    sim = Sim(tmp_path, [pool(), deployment("web", 1, "1")], [drift_at("5m")]).run(301)
    (command,) = sim.commands("drift")
    (node,) = command["candidates"]
    assert sim.t < 330  # the replacement is not up yet: the command is still running
    found, held = sim.candidates("eventual")
    assert node not in found
    assert held[node] in ("node is already being disrupted", "node is being deleted")


@mirrors(FILE, CF + "should not consider candidates that are actively being processed in the queue")
def test_a_node_in_the_queue_is_no_candidate_for_any_method(tmp_path: Path) -> None:
    sim = Sim(tmp_path, [pool(), deployment("web", 1, "1")], [drift_at("5m")]).run(301)
    (command,) = sim.commands("drift")
    (node,) = command["candidates"]
    assert node in sim.world.disruption.queue.busy()
    assert sim.candidates_for("drift") == set()
    assert node not in sim.candidates("graceful")[0]


@mirrors(FILE, CF + "should not consider candidates that aren't yet initialized")
def test_an_uninitialized_node_is_no_candidate(tmp_path: Path) -> None:
    sim = _one_node(tmp_path)
    node = sim.node_of("web")
    _uninitialize(sim, sim.claim_of(node))
    found, held = sim.candidates("graceful")
    assert found == set()
    assert held[node] == "node is not initialized"


@mirrors(FILE, CF + "should not consider candidates that are not owned by a NodePool (no karpenter.sh/nodepool label)")  # fmt: skip  # noqa: E501
def test_a_node_without_nodepool_label_is_no_candidate(tmp_path: Path) -> None:
    sim = _one_node(tmp_path)
    node = sim.node_of("web")
    _relabel(sim, node, karpenter_dot_sh__nodepool=None)
    found, held = sim.candidates("graceful")
    assert found == set()
    assert "not found" in held[node]


@mirrors(FILE, CF + "should not consider candidates that are have a non-existent NodePool")
def test_a_node_of_a_missing_nodepool_is_no_candidate(tmp_path: Path) -> None:
    sim = _one_node(tmp_path)
    node = sim.node_of("web")
    _relabel(sim, node, karpenter_dot_sh__nodepool="ghost")
    found, held = sim.candidates("graceful")
    assert found == set()
    assert held[node] == "NodePool ghost not found"


@mirrors(FILE, CF + "should consider candidates that do not have the karpenter.sh/capacity-type label")  # fmt: skip  # noqa: E501
def test_a_node_without_capacity_type_label_is_a_candidate(tmp_path: Path) -> None:
    sim = _one_node(tmp_path)
    node = sim.node_of("web")
    _relabel(sim, node, karpenter_dot_sh__capacity_type=None)
    assert sim.candidates("graceful")[0] == {node}


@mirrors(FILE, CF + "should consider candidates that do not have the topology.kubernetes.io/zone label")  # fmt: skip  # noqa: E501
def test_a_node_without_zone_label_is_a_candidate(tmp_path: Path) -> None:
    sim = _one_node(tmp_path)
    node = sim.node_of("web")
    _relabel(sim, node, topology_dot_kubernetes_dot_io__zone=None)
    assert sim.candidates("graceful")[0] == {node}


@mirrors(FILE, CF + "should consider candidates that do not have the node.kubernetes.io/instance-type label")  # fmt: skip  # noqa: E501
def test_a_node_without_instance_type_label_is_a_candidate(tmp_path: Path) -> None:
    sim = _one_node(tmp_path)
    node = sim.node_of("web")
    _relabel(sim, node, node_dot_kubernetes_dot_io__instance_type=None)
    assert sim.candidates("graceful")[0] == {node}


@mirrors(FILE, CF + "should consider candidates that have an instance type that cannot be resolved")  # fmt: skip  # noqa: E501
def test_a_node_of_an_unknown_instance_type_is_a_candidate(tmp_path: Path) -> None:
    sim = _one_node(tmp_path)
    node = sim.node_of("web")
    _relabel(sim, node, node_dot_kubernetes_dot_io__instance_type="nonexistent.big")
    assert sim.candidates("graceful")[0] == {node}
