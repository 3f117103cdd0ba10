"""A wave's pace: its NodePools' Drifted budgets counted as Karpenter counts them, whether it
waits on one, the nodes remaining and the ETA (agent.service.pacing)."""

from __future__ import annotations

from agent.api.nodepool import Budget, NodePool
from common.wire.waves import WaveDocument

from .helpers import NEWEST, STEP, alias, rig, wire


def _budget(r: object, nodes: str) -> None:
    world = r.world  # type: ignore[attr-defined]
    for pool in world.cluster.list(NodePool):
        disruption = pool.spec.disruption.model_copy(update={"budgets": [Budget(nodes=nodes)]})
        spec = pool.spec.model_copy(update={"disruption": disruption})
        world.cluster.update(pool.model_copy(update={"spec": spec}))


def test_each_report_counts_the_budget_as_karpenter_does_until_the_wave_converges() -> None:
    r = rig(nodes=12)
    _budget(r, "1")
    r.service.apply_wave("wave-1", alias(NEWEST))
    seen_waiting = False
    for _ in range(400):
        wave = r.service.wave("wave-1")
        WaveDocument.model_validate(wire(wave), extra="forbid")
        progress = wave.progress
        for pool in progress.budgets:
            assert pool.limit == 1
            assert pool.disrupting <= 1, pool
            assert pool.allowed == max(0, 1 - pool.disrupting)
            assert pool.waiting_on_budget is (pool.drifted_waiting > 0 and pool.allowed == 0)
        seen_waiting = seen_waiting or progress.waiting_on_budget
        if wave.phase != "progressing":
            break
        assert progress.remaining is not None
        assert progress.remaining > 0
        assert progress.eta_seconds is not None
        assert progress.eta_seconds > 0
        r.sim.step(STEP)
    assert wave.phase == "converged"
    assert seen_waiting
    assert wave.progress.remaining == 0
    assert wave.progress.eta_seconds == 0
    assert wave.progress.eta_basis == "measured"


def test_a_budget_that_allows_nothing_holds_the_wave_with_no_eta() -> None:
    r = rig(nodes=6)
    _budget(r, "0")
    r.service.apply_wave("wave-1", alias(NEWEST))
    for _ in range(5):
        r.sim.step(STEP)
    progress = r.service.wave("wave-1").progress
    assert progress.remaining is not None
    assert progress.remaining > 0
    assert progress.eta_seconds is None
    assert progress.waiting_on_budget is True
    assert all(p.limit == 0 and p.allowed == 0 for p in progress.budgets)
