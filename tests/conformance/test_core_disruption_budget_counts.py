"""core-disruption: how many of a NodePool's nodes count for its disruption budgets, and how
many are disrupting (the "BuildDisruptionBudgetMapping" cases of Karpenter's
pkg/controllers/disruption/suite_test.go)."""

from __future__ import annotations

from pathlib import Path

from agent.api.nodeclaim import NodeClaim
from agent.disruption.candidates import pool_nodes
from common.kubemodel import Condition
from tests.conformance.karpenter import mirrors
from tests.conformance.test_core_disruption_candidates import _uninitialize
from tests.conformance.test_core_disruption_kit import SUITE, UP, Sim, deployment, pool

SUITE = SUITE
FILE = "pkg/controllers/disruption/suite_test.go"

BD = "BuildDisruptionBudgetMapping / "


def _three_nodes(tmp_path: Path) -> Sim:
    sim = Sim(tmp_path, [pool(disruption={"consolidateAfter": "Never",
                                          "budgets": [{"nodes": "100%"}]}),
                         deployment("web", 3, "3", spread=True)])  # fmt: skip
    return sim.run(UP)


def _counts(sim: Sim) -> tuple[int, int]:
    context = sim.world.disruption.context()
    nodes = pool_nodes(context.snapshot, context.busy)["default"]
    return nodes.total, nodes.disrupting


@mirrors(FILE, BD + "should not consider nodes that are not managed as part of disruption count")
def test_unmanaged_nodes_are_not_counted(tmp_path: Path) -> None:
    sim = _three_nodes(tmp_path)
    stray = sim.nodes()[0]
    labels = {**stray.metadata.labels}
    meta = stray.metadata.model_copy(update={"name": "unmanaged", "uid": None, "labels": labels})
    sim.world.cluster.create(stray.model_copy(update={"metadata": meta}))
    assert _counts(sim) == (3, 0)


@mirrors(FILE, BD + "should not consider nodes that are not initialized as part of disruption count")  # fmt: skip  # noqa: E501
def test_uninitialized_nodes_are_not_counted(tmp_path: Path) -> None:
    sim = _three_nodes(tmp_path)
    _uninitialize(sim, sim.claims()[0])
    assert _counts(sim) == (2, 0)


@mirrors(FILE, BD + "should not consider nodes that have the terminating status condition as part of disruption count")  # fmt: skip  # noqa: E501
def test_nodes_terminating_their_instance_are_not_counted(tmp_path: Path) -> None:
    sim = _three_nodes(tmp_path)
    claim = sim.claims()[0]
    terminating = Condition(type="InstanceTerminating", status="True", reason="Terminating",
                            message="", last_transition_time="2026-01-01T00:02:00Z")  # fmt: skip
    status = claim.status.model_copy(update={"conditions": [*claim.status.conditions, terminating]})
    sim.world.cluster.update(claim.model_copy(update={"status": status}))
    assert _counts(sim) == (2, 0)


@mirrors(FILE, BD + "should consider not ready nodes to the disruption count")
def test_not_ready_nodes_count_as_disrupting(tmp_path: Path) -> None:
    sim = _three_nodes(tmp_path)
    node = sim.nodes()[0]
    assert node.status is not None
    conditions = [
        c.model_copy(update={"status": "False"}) if c.type == "Ready" else c
        for c in node.status.conditions
    ]
    status = node.status.model_copy(update={"conditions": conditions})
    sim.world.cluster.update(node.model_copy(update={"status": status}))
    assert _counts(sim) == (3, 1)


@mirrors(FILE, BD + "should consider nodes with a deletion timestamp set and MarkedForDeletion to the disruption count")  # fmt: skip  # noqa: E501
def test_deleting_nodes_count_as_disrupting(tmp_path: Path) -> None:
    sim = _three_nodes(tmp_path)
    sim.world.cluster.delete(NodeClaim, sim.claims()[0].name)
    assert _counts(sim) == (3, 1)
    budgets = sim.world.disruption.budgets(sim.world.disruption.context(), "Drifted")
    assert budgets["default"] == 2


@mirrors(FILE, BD + "should not return a negative disruption value")
def test_allowed_disruptions_are_never_negative(tmp_path: Path) -> None:
    sim = Sim(tmp_path, [pool(disruption={"consolidateAfter": "Never",
                                          "budgets": [{"nodes": "1"}]}),
                         deployment("web", 3, "3", spread=True)]).run(UP)  # fmt: skip
    for claim in sim.claims()[:2]:
        sim.world.cluster.delete(NodeClaim, claim.name)
    assert _counts(sim) == (3, 2)
    budgets = sim.world.disruption.budgets(sim.world.disruption.context(), "Drifted")
    assert budgets["default"] == 0
