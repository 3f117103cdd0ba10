"""The strategy entry point: driftwave's plan is never dearer than Karpenter's order on small
batches, and the second plan is made on copies."""

from __future__ import annotations

import time

import numpy as np
import pytest

from agent.scheduling import strategy as strategy_module
from agent.scheduling.plans import ExistingNode
from agent.scheduling.scheduler import OverBudget, Scheduler
from agent.scheduling.strategy import make_scheduler, solve
from agent.scheduling.verify import violations
from tests.unit.agent.scheduling.test_mix import pods as mixed_pods
from tests.unit.agent.scheduling.test_mix import pool
from tests.unit.agent.scheduling.test_verify import _mixed
from tests.unit.agent.scheduling.test_verify import pool as synthetic_pool


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("count", [5, 40, 150])
def test_small_batches_cost_no_more_than_karpenters_order(seed: int, count: int) -> None:
    placed = _mixed(seed, count)
    theirs = Scheduler([synthetic_pool()]).solve(placed)
    ours = solve([synthetic_pool()], placed)
    assert violations(ours, placed) == []
    assert len(ours.errors) <= len(theirs.errors)
    assert ours.hourly_cost <= theirs.hourly_cost + 1e-9


def test_above_the_portfolio_size_only_driftwaves_plan_is_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    placed = mixed_pods(cpu_heavy=30, memory_heavy=30)
    monkeypatch.setattr(strategy_module, "PORTFOLIO_MAX_PODS", 10)
    alone = make_scheduler([pool()], placed).solve(placed)
    assert solve([pool()], placed).hourly_cost == pytest.approx(alone.hourly_cost)


def test_solving_leaves_the_callers_state_as_it_was() -> None:
    placed = mixed_pods(cpu_heavy=4, memory_heavy=4)
    plan = pool()
    plan.remaining = np.array([10**6, 10**15, 10**4], dtype=np.int64)
    size = plan.table.alloc[0]
    node = ExistingNode("node-a", {}, [], size.copy(), np.zeros_like(size))
    result = solve([plan], placed, [node], strategy="driftwave")
    assert result.scheduled == len(placed)
    assert result.existing["node-a"]
    assert node.pods == []
    assert not node.used.any()
    assert plan.remaining.tolist() == [10**6, 10**15, 10**4]


def test_a_topology_copy_counts_on_its_own() -> None:
    from agent.scheduling.pods import LabelMatcher, PodShape, SpreadConstraint
    from agent.scheduling.requirements import Requirements
    from agent.scheduling.topology import Topology

    zone = "topology.kubernetes.io/zone"
    spread = SpreadConstraint(zone, 1, LabelMatcher((("app", "a"),)), True)
    shape = PodShape(
        namespace="default",
        labels={"app": "a"},
        requests={"cpu": 100},
        alternatives=[Requirements()],
        spread=(spread,),
    )
    original = Topology({zone: ["zone-a", "zone-b"]})
    original.owned(shape)
    original.record(shape, {zone: "zone-a"})
    twin = original.copy()
    twin.record(shape, {zone: "zone-b"}, amount=3)
    (group,) = original.groups
    (copied,) = twin.groups
    assert group.counts == {"zone-a": 1, "zone-b": 0}
    assert copied.counts == {"zone-a": 1, "zone-b": 3}
    assert twin.owned(shape)[0][0] is copied
    assert twin.signature(shape) == original.signature(shape)


def test_a_veto_stops_the_solve_at_the_placement_a_full_solve_makes() -> None:
    from agent.scheduling.scheduler import Veto, Vetoed

    placed = mixed_pods(cpu_heavy=4, memory_heavy=4)
    plan = pool()
    size = plan.table.alloc[0]
    nodes = [
        ExistingNode("node-a", {}, [], size.copy(), np.zeros_like(size)),
        ExistingNode("node-b", {}, [], size.copy(), np.zeros_like(size)),
    ]
    full = solve([plan], placed, nodes, strategy="karpenter")
    on_b = {ref.key for ref in full.existing.get("node-b", [])}
    assert on_b, full.existing  # the full solve puts some pods on node-b
    watched = sorted(on_b)[0]
    with pytest.raises(Vetoed) as stopped:
        solve(
            [plan],
            placed,
            nodes,
            strategy="karpenter",
            veto=Veto(frozenset({"node-b"}), frozenset({watched})),
        )
    assert (stopped.value.node, stopped.value.pod) == ("node-b", watched)
    # A veto on pods the full solve places elsewhere changes nothing.
    elsewhere = frozenset(ref.key for ref in full.existing.get("node-a", []))
    kept = solve(
        [plan], placed, nodes, strategy="karpenter", veto=Veto(frozenset({"node-b"}), elsewhere)
    )
    assert {k: [r.key for r in v] for k, v in kept.existing.items()} == {
        k: [r.key for r in v] for k, v in full.existing.items()
    }
    with pytest.raises(ValueError, match="Karpenter's order"):
        solve([plan], placed, nodes, strategy="driftwave", veto=Veto(frozenset(), frozenset()))


def test_karpenters_order_past_its_budget_raises_over_budget() -> None:
    placed = _mixed(1, 150)
    scheduler = Scheduler([synthetic_pool()])
    with pytest.raises(OverBudget):
        scheduler.solve(placed, budget=20)
    assert scheduler.candidates.tries == 21  # counted per try, checked before each pod


def test_the_plan_does_not_depend_on_how_busy_the_machine_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The second solve's budget is counted in tries, not timed: with a clock that jumps an
    hour at every reading (a machine busy with other work), the batch still gets Karpenter's
    order's plan, cheaper here than driftwave's own."""
    placed = _mixed(8, 40)
    own = make_scheduler([synthetic_pool()], placed).solve(placed)
    calm = solve([synthetic_pool()], placed)
    assert calm.hourly_cost < own.hourly_cost - 1e-9
    hour = iter(range(0, 10**9, 3600))
    monkeypatch.setattr(time, "perf_counter", lambda: float(next(hour)))
    monkeypatch.setattr(time, "process_time", lambda: float(next(hour)))
    busy = solve([synthetic_pool()], placed)
    assert busy.hourly_cost == pytest.approx(calm.hourly_cost)
    assert sorted(len(c.pods) for c in busy.claims) == sorted(len(c.pods) for c in calm.claims)
