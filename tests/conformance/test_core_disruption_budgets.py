"""core-disruption: NodePool disruption budgets as consolidation spends them (the "Budgets"
context of Karpenter's pkg/controllers/disruption/consolidation_test.go).

Karpenter's "should not mark ... consolidated" cases check that a pass blocked by a budget does
not record the cluster as consolidated, so the next pass tries again. Here a budget that forbids
everything for the first ten minutes (a schedule) stands for the blocking budget: once it ends,
with nothing else changing in the cluster, the nodes must be disrupted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conformance.karpenter import mirrors
from tests.conformance.test_core_disruption_kit import SUITE, Sim, deployment, pool, scale

SUITE = SUITE
FILE = "pkg/controllers/disruption/consolidation_test.go"
B = "Consolidation / Budgets / "
OPENS = 600.0
"""When the blocking budget window (00:00 for 10 minutes) ends."""


def _blocked(policy: str = "WhenEmptyOrUnderutilized") -> dict[str, Any]:
    closed = {"nodes": "0", "schedule": "0 0 * * *", "duration": "10m"}
    return {"consolidationPolicy": policy, "consolidateAfter": "30s",
            "budgets": [closed, {"nodes": "100%"}]}  # fmt: skip


def _empty_nodes(tmp_path: Path, pools: tuple[str, ...]) -> Sim:
    manifests: list[dict[str, Any]] = []
    events = []
    for name in pools:
        manifests += [pool(name, _blocked()), deployment(f"w{name}", 2, "3", on=name, spread=True)]
        events.append(scale(f"w{name}", 0, "2m"))
    return Sim(tmp_path, manifests, events).run(150)


def _underused_nodes(tmp_path: Path, pools: tuple[str, ...]) -> Sim:
    """Per NodePool, three xlarge nodes left with one 1-cpu pod each (they fit on one)."""
    manifests: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    for name in pools:
        manifests += [pool(name, _blocked(), types=("m6i.xlarge",)),
                      deployment(f"big{name}", 3, "2500m", on=name, spread=True)]  # fmt: skip
        events += [{"at": "2m", "apply": deployment(f"small{name}", 3, "1", on=name)},
                   scale(f"big{name}", 0, "3m")]  # fmt: skip
    return Sim(tmp_path, manifests, events).run(179)


def _check_waits_then_acts(sim: Sim, methods: set[str], pools: int) -> None:
    before = len(sim.nodes())
    sim.run(OPENS - 5)
    assert sim.commands() == []  # the budget forbids it
    assert len(sim.nodes()) == before
    sim.run(OPENS + 120)
    commands = sim.commands()
    assert commands
    assert min(c["t"] for c in commands) >= OPENS
    assert {c["method"] for c in commands} & methods
    assert len({p for c in commands for p in c["nodepools"]}) == pools


@mirrors(FILE, B + "should not mark empty node consolidated if the candidates can't be disrupted due to budgets with one nodepool")  # fmt: skip  # noqa: E501
def test_empty_nodes_held_by_a_budget_go_when_it_ends(tmp_path: Path) -> None:
    sim = _empty_nodes(tmp_path, ("a",))
    _check_waits_then_acts(sim, {"emptiness"}, 1)
    assert sim.nodes() == []


@mirrors(FILE, B + "should not mark empty node consolidated if all candidates can't be disrupted due to budgets with many nodepools")  # fmt: skip  # noqa: E501
def test_empty_nodes_of_many_pools_held_by_budgets_go_when_they_end(tmp_path: Path) -> None:
    sim = _empty_nodes(tmp_path, ("a", "b", "c"))
    _check_waits_then_acts(sim, {"emptiness"}, 3)
    assert sim.nodes() == []


MULTI = {"multi-node-consolidation"}
SINGLE = {"single-node-consolidation", "multi-node-consolidation"}


@mirrors(FILE, B + "should not mark multi node consolidated if the candidates can't be disrupted due to budgets with one nodepool")  # fmt: skip  # noqa: E501
def test_multi_node_consolidation_held_by_a_budget_acts_when_it_ends(tmp_path: Path) -> None:
    sim = _underused_nodes(tmp_path, ("a",))
    _check_waits_then_acts(sim, MULTI, 1)
    assert len(sim.nodes()) == 1


@mirrors(FILE, B + "should not mark multi node consolidated if all candidates can't be disrupted due to budgets with many nodepools")  # fmt: skip  # noqa: E501
def test_multi_node_consolidation_of_many_pools_acts_when_budgets_end(tmp_path: Path) -> None:
    sim = _underused_nodes(tmp_path, ("a", "b"))
    _check_waits_then_acts(sim, MULTI, 2)
    assert len(sim.nodes()) == 2


@mirrors(FILE, B + "should not mark single node consolidated if the candidates can't be disrupted due to budgets with one nodepool")  # fmt: skip  # noqa: E501
def test_single_node_consolidation_held_by_a_budget_acts_when_it_ends(tmp_path: Path) -> None:
    manifests = [pool("a", _blocked(), types=("m6i.large", "m6i.2xlarge")),
                 deployment("big", 1, "6", on="a")]  # fmt: skip
    events = [{"at": "2m", "apply": deployment("small", 1, "1", on="a")}, scale("big", 0, "3m")]
    sim = Sim(tmp_path, manifests, events).run(179)
    _check_waits_then_acts(sim, SINGLE, 1)
    (claim,) = sim.claims()
    assert claim.metadata.labels["node.kubernetes.io/instance-type"] == "m6i.large"


@mirrors(FILE, B + "should not mark single node consolidated if all candidates can't be disrupted due to budgets with many nodepools")  # fmt: skip  # noqa: E501
def test_single_node_consolidation_of_many_pools_acts_when_budgets_end(tmp_path: Path) -> None:
    manifests: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    for name in ("a", "b"):
        manifests += [pool(name, _blocked(), types=("m6i.large", "m6i.2xlarge")),
                      deployment(f"big{name}", 1, "6", on=name)]  # fmt: skip
        events += [{"at": "2m", "apply": deployment(f"small{name}", 1, "1", on=name)},
                   scale(f"big{name}", 0, "3m")]  # fmt: skip
    sim = Sim(tmp_path, manifests, events).run(179)
    _check_waits_then_acts(sim, SINGLE, 2)
    types = {c.metadata.labels["node.kubernetes.io/instance-type"] for c in sim.claims()}
    assert types == {"m6i.large"}


@mirrors(FILE, B + "should allow 2 nodes from each nodePool to be deleted")
def test_consolidation_takes_half_of_each_pool_rounded_up(tmp_path: Path) -> None:
    manifests: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    half = {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "30s",
            "budgets": [{"nodes": "50%"}]}  # fmt: skip
    for name in ("a", "b"):
        manifests += [pool(name, half), deployment(f"w{name}", 3, "3", on=name, spread=True)]
        events.append(scale(f"w{name}", 0, "2m"))
    sim = Sim(tmp_path, manifests, events).run(119)
    assert len(sim.nodes()) == 6
    sim.run(260)
    first = sim.commands()[0]
    per_pool: dict[str, int] = {}
    for event in sim.events("Disrupted"):
        if event["command"] == int(first["object"].split("/")[1]):
            per_pool[event["nodepool"]] = per_pool.get(event["nodepool"], 0) + 1
    assert per_pool == {"a": 2, "b": 2}
