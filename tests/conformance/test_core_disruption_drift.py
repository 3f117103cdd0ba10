"""core-disruption: drift, as Karpenter's pkg/controllers/disruption/drift_test.go asserts it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
    scale,
)

SUITE = SUITE
FILE = "pkg/controllers/disruption/drift_test.go"
B = "Drift / Budgets / "
D = "Drift / Drift / "
DRIFT = 300.0
"""When ``drift_at("5m")`` drifts the nodes."""


def _drifting(tmp_path: Path, manifests: list[dict[str, Any]], *more: dict[str, Any]) -> Sim:
    return Sim(tmp_path, manifests, [drift_at("5m"), *more]).run(DRIFT - 1)


def _tainted(sim: Sim) -> set[str]:
    return {
        n.metadata.name or ""
        for n in sim.nodes()
        if any(t.key == "karpenter.sh/disrupted" for t in n.spec.taints)
    }


@mirrors(FILE, B + "should only consider 3 nodes allowed to be disrupted because of budgets")
def test_budget_caps_drift_at_three_of_ten_nodes(tmp_path: Path) -> None:
    budget = {"consolidateAfter": "Never", "budgets": [{"nodes": "30%"}]}
    sim = _drifting(tmp_path, [pool(disruption=budget), deployment("web", 10, "3", spread=True)])
    assert len(sim.nodes()) == 10
    sim.run(DRIFT)
    assert len(sim.commands("drift")) == 3
    assert len(_tainted(sim)) == 3


@mirrors(FILE, B + "should disrupt 3 nodes, taking into account commands in progress")
def test_budget_counts_the_commands_already_running(tmp_path: Path) -> None:
    budget = {"consolidateAfter": "Never", "budgets": [{"nodes": "30%"}]}
    sim = _drifting(tmp_path, [pool(disruption=budget), deployment("web", 10, "3", spread=True)])
    sim.run(DRIFT)
    first = {n for c in sim.commands("drift") for n in c["candidates"]}
    assert len(first) == 3
    sim.run(DRIFT + 15)  # the replacements are still booting: no further command
    assert len(sim.commands("drift")) == 3
    in_flight = sim.world.disruption.queue.busy()
    assert first <= in_flight


@mirrors(FILE, B + "should respect budgets for multiple nodepools")
def test_each_nodepool_spends_its_own_drift_budget(tmp_path: Path) -> None:
    one = {"consolidateAfter": "Never", "budgets": [{"nodes": "1"}]}
    manifests: list[dict[str, Any]] = []
    for name in ("a", "b", "c"):
        manifests += [pool(name, one), deployment(f"w{name}", 2, "3", on=name, spread=True)]
    sim = _drifting(tmp_path, manifests)
    assert len(sim.nodes()) == 6
    sim.run(DRIFT)
    pools = [c["nodepools"][0] for c in sim.commands("drift")]
    assert sorted(pools) == ["a", "b", "c"]


@mirrors(FILE, D + "should continue to the next drifted node if the first cannot reschedule all pods")  # fmt: skip  # noqa: E501
def test_drift_skips_a_node_whose_pods_fit_nowhere(tmp_path: Path) -> None:
    sim = _drifting(tmp_path, [pool(), deployment("web", 2, "1", spread=True)])
    big, small = sorted({p.spec.node_name or "" for p in sim.pods("web")})
    huge = {"metadata": {"name": "huge"},
            "spec": {"containers": [{"name": "c", "image": "c",
                                     "resources": {"requests": {"cpu": "150"}}}]}}  # fmt: skip
    sim.add_pod(huge, big)
    sim.run(DRIFT)
    assert sim.disrupted() == {small}
    assert big in sim.world.disruption.drift.unschedulable


@mirrors(FILE, D + "should ignore nodes without the drifted status condition")
def test_nodes_that_did_not_drift_are_left_alone(tmp_path: Path) -> None:
    sim = Sim(tmp_path, [pool(), deployment("web", 2, "3", spread=True)]).run(1800)
    assert sim.commands() == []
    assert sim.candidates_for("drift") == set()


@mirrors(FILE, D + "should ignore nodes with the drifted status condition set to false")
def test_nodes_of_a_pinned_class_are_not_drifted_and_left_alone(tmp_path: Path) -> None:
    sim = _drifting(tmp_path, [pool(nodeclass="pinned"), deployment("web", 2, "3", spread=True)])
    sim.run(1800)
    assert all(
        not any(c.type == "Drifted" and c.status == "True" for c in claim.status.conditions)
        for claim in sim.claims()
    )
    assert sim.commands() == []


@mirrors(FILE, D + "should ignore nodes with the karpenter.sh/do-not-disrupt annotation set to true")  # fmt: skip  # noqa: E501
def test_drift_spares_a_node_annotated_do_not_disrupt(tmp_path: Path) -> None:
    sim = _drifting(tmp_path, [pool(), deployment("web", 2, "3", spread=True)])
    held, other = sorted(n.metadata.name or "" for n in sim.nodes())
    sim.annotate_node(held, {DND: "true"})
    sim.run(1200)
    assert sim.disrupted() == {other}
    assert held in {n.metadata.name for n in sim.nodes()}


@mirrors(FILE, D + "should delete drifted nodes with the karpenter.sh/do-not-disrupt annotation set to false")  # fmt: skip  # noqa: E501
def test_do_not_disrupt_false_on_a_node_does_not_hold_it(tmp_path: Path) -> None:
    sim = _drifting(tmp_path, [pool(), deployment("web", 1, "3")])
    (node,) = [n.metadata.name or "" for n in sim.nodes()]
    sim.annotate_node(node, {DND: "false"})
    sim.run(1200)
    assert sim.disrupted() == {node}
    assert node not in {n.metadata.name for n in sim.nodes()}


@mirrors(FILE, D + "should not create replacements for drifted nodes that have pods with the karpenter.sh/do-not-disrupt annotation set to true")  # fmt: skip  # noqa: E501
def test_drift_holds_a_node_with_a_do_not_disrupt_pod(tmp_path: Path) -> None:
    keep = deployment("keep", 1, "3", annotations={DND: "true"})
    sim = _drifting(tmp_path, [pool(), keep])
    claims = {c.name for c in sim.claims()}
    sim.run(1200)
    assert sim.commands() == []
    assert {c.name for c in sim.claims()} == claims


@mirrors(FILE, D + "should not create replacements for drifted nodes that have pods with the karpenter.sh/do-not-disrupt annotation set to true when the NodePool's TerminationGracePeriod is not nil")  # fmt: skip  # noqa: E501
def test_with_grace_period_a_do_not_disrupt_pod_gets_no_replacement(tmp_path: Path) -> None:
    keep = deployment("keep", 1, "3", annotations={DND: "true"})
    sim = _drifting(tmp_path, [pool(terminationGracePeriod="10m"), keep])
    claims = {c.name for c in sim.claims()}
    sim.run(DRIFT + 60)
    (command,) = sim.commands("drift")
    assert command["replacements"] == []
    assert {c.name for c in sim.claims()} == claims  # nothing launched for the pod
    assert [p.spec.node_name for p in sim.pods("keep")] == [sim.node_of("keep")]


@mirrors(FILE, D + "should not create replacements for drifted nodes that have pods with the blocking PDBs when the NodePool's TerminationGracePeriod is not nil")  # fmt: skip  # noqa: E501
def test_with_grace_period_a_pod_under_a_blocking_pdb_gets_no_replacement(tmp_path: Path) -> None:
    guarded = [deployment("guarded", 1, "3"), pdb("guarded", maxUnavailable=0)]
    sim = _drifting(tmp_path, [pool(terminationGracePeriod="10m"), *guarded])
    claims = {c.name for c in sim.claims()}
    sim.run(DRIFT + 60)
    (command,) = sim.commands("drift")
    assert command["replacements"] == []
    assert {c.name for c in sim.claims()} == claims
    assert not sim.events("Evicted")


@mirrors(FILE, D + "should not drift nodes with pods that have a duration-based do-not-disrupt annotation that is still active")  # fmt: skip  # noqa: E501
def test_a_do_not_disrupt_duration_holds_drift_until_it_runs_out(tmp_path: Path) -> None:
    keep = deployment("keep", 1, "3", annotations={DND: "10m"})
    sim = _drifting(tmp_path, [pool(), keep])
    started = min(p.status.start_time or "" for p in sim.pods("keep") if p.status)
    assert started
    sim.run(500)  # the pod has run about 8 minutes
    assert sim.commands() == []
    sim.run(900)
    (command,) = sim.commands("drift")
    assert 600 <= command["t"] <= 700  # within a minute of the 10 minutes' end


@mirrors(FILE, D + "should drift nodes with pods that have an invalid do-not-disrupt annotation format")  # fmt: skip  # noqa: E501
def test_an_unreadable_do_not_disrupt_value_is_ignored(tmp_path: Path) -> None:
    odd = deployment("odd", 1, "3", annotations={DND: "soon"})
    sim = _drifting(tmp_path, [pool(), odd]).run(DRIFT)
    assert len(sim.commands("drift")) == 1


@mirrors(FILE, D + "should not drift nodes until the longest duration-based do-not-disrupt grace period expires across multiple pods")  # fmt: skip  # noqa: E501
def test_the_longest_do_not_disrupt_duration_on_a_node_decides(tmp_path: Path) -> None:
    short = deployment("short", 1, "1", annotations={DND: "8m"})
    long = deployment("long", 1, "1", annotations={DND: "15m"})
    sim = _drifting(tmp_path, [pool(), short, long])
    assert len(sim.nodes()) == 1
    sim.run(700)  # past 8 minutes, before 15
    assert sim.commands() == []
    sim.run(1200)
    (command,) = sim.commands("drift")
    assert 900 <= command["t"] <= 1000


@mirrors(FILE, D + "should replace drifted nodes")
def test_drift_replaces_a_node_its_pods_need(tmp_path: Path) -> None:
    sim = _drifting(tmp_path, [pool(), deployment("web", 1, "3")])
    (old,) = [n.metadata.name or "" for n in sim.nodes()]
    sim.run(1200)
    (command,) = sim.commands("drift")
    assert command["candidates"] == [old]
    assert len(command["replacements"]) == 1
    (claim,) = sim.claims()
    assert claim.name == command["replacements"][0]
    assert sim.summary()["podsLost"] == 0


@mirrors(FILE, D + "should delete drifted nodes")
def test_drift_deletes_a_node_whose_pods_fit_elsewhere(tmp_path: Path) -> None:
    stable = pool("stable", nodeclass="pinned", types=("m6i.2xlarge",))
    room = deployment("room", 1, "1", on="stable")
    sim = _drifting(tmp_path, [pool(weight=10), stable, deployment("web", 1, "1")],
                    {"at": "2m", "apply": room})  # fmt: skip
    drifted = sim.node_of("web")
    assert sim.claim_of(drifted).metadata.labels["karpenter.sh/nodepool"] == "default"
    sim.run(1200)
    (command,) = sim.commands("drift")
    assert command["candidates"] == [drifted]
    assert command["replacements"] == []
    assert sim.node_of("web") == sim.node_of("room")


@mirrors(FILE, D + "should delete drifted nodes when they are empty and consolidation is disabled")  # fmt: skip  # noqa: E501
def test_drift_deletes_an_empty_node_without_replacement(tmp_path: Path) -> None:
    sim = _drifting(
        tmp_path, [pool(), deployment("web", 2, "3", spread=True)], scale("web", 1, "3m")
    )
    assert len(sim.nodes()) == 2
    empty = next(
        n.metadata.name for n in sim.nodes() if n.metadata.name not in {sim.node_of("web")}
    )
    sim.run(DRIFT)
    by_node = {c["candidates"][0]: c for c in sim.commands("drift")}
    assert by_node[empty]["replacements"] == []


@mirrors(FILE, D + "should drift empty nodes before non-empty nodes")
def test_drift_takes_empty_nodes_first(tmp_path: Path) -> None:
    one = {"consolidateAfter": "Never", "budgets": [{"nodes": "1"}]}
    sim = _drifting(
        tmp_path, [pool(disruption=one), deployment("web", 2, "3", spread=True)],
        scale("web", 1, "3m"),
    )  # fmt: skip
    busy = sim.node_of("web")
    (empty,) = [n.metadata.name for n in sim.nodes() if n.metadata.name != busy]
    sim.run(DRIFT)
    first = sim.commands("drift")[0]
    assert first["candidates"] == [empty]


@mirrors(FILE, D + "should delete drifted nodes when they are empty and consolidatable")
def test_an_empty_drifted_node_goes_by_drift_or_emptiness(tmp_path: Path) -> None:
    when_empty = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30m"}
    sim = _drifting(
        tmp_path, [pool(disruption=when_empty), deployment("web", 2, "3", spread=True)],
        scale("web", 1, "3m"),
    )  # fmt: skip
    busy = sim.node_of("web")
    (empty,) = [n.metadata.name for n in sim.nodes() if n.metadata.name != busy]
    sim.run(DRIFT + 60)
    assert empty in sim.disrupted()
    assert empty not in {n.metadata.name for n in sim.nodes()}


@mirrors(FILE, D + "should untaint nodes when drift replacement fails")
def test_a_failed_replacement_untaints_the_candidate(tmp_path: Path) -> None:
    fault = {"at": "4m", "fault": {"insufficientCapacity": {"for": "2h"}}}
    sim = _drifting(tmp_path, [pool(), deployment("web", 1, "3")], fault)
    (node,) = [n.metadata.name or "" for n in sim.nodes()]
    sim.run(DRIFT + 15 * 60)
    failed = sim.events("DisruptionFailed")
    assert failed
    tainted = [e["t"] for e in sim.events("Tainted") if e["object"] == f"node/{node}"]
    untainted = [e["t"] for e in sim.events("Untainted") if e["object"] == f"node/{node}"]
    assert tainted == untainted  # each failed command gave the node back at once
    assert _tainted(sim) == set()
    assert node in {n.metadata.name for n in sim.nodes()}
    assert sim.pods("web")[0].spec.node_name == node


@mirrors(FILE, D + "can replace drifted nodes with multiple nodes")
def test_drift_may_replace_one_node_with_several(tmp_path: Path) -> None:
    smaller = {"at": "3m", "apply": pool(types=("m6i.xlarge",))}
    sim = Sim(tmp_path, [pool(types=("m6i.2xlarge",)), deployment("web", 2, "3")], [smaller])
    sim.run(UP)
    (old,) = [n.metadata.name or "" for n in sim.nodes()]
    sim.run(1200)
    (command,) = sim.commands("drift")
    assert command["candidates"] == [old]
    assert len(command["replacements"]) == 2
    assert sim.summary()["podsLost"] == 0


@mirrors(FILE, D + "should drift one non-empty node at a time, starting with the earliest drift")
def test_drift_takes_the_earliest_drifted_node_first(tmp_path: Path) -> None:
    closed = {"consolidateAfter": "Never", "budgets": [{"nodes": "0"}]}
    opened = {"at": "10m", "apply": pool(disruption={"consolidateAfter": "Never",
                                                     "budgets": [{"nodes": "1"}]})}  # fmt: skip
    sim = _drifting(tmp_path, [pool(disruption=closed), deployment("web", 2, "3", spread=True)],
                    opened)  # fmt: skip
    sim.run(DRIFT + 30)
    assert sim.commands() == []
    first, second = sorted(n.metadata.name or "" for n in sim.nodes())
    sim.drifted_since(second, "2026-01-01T00:05:00Z")
    sim.drifted_since(first, "2026-01-01T00:05:10Z")
    sim.run(600)
    assert [c["candidates"] for c in sim.commands("drift")] == [[second]]
