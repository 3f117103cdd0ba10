"""The scheduler's gate: a wave's steps, as the workers recorded them, judged by
:func:`fleet.domain.gates.evaluate` against the ring's policy.

A step's state and the agent's last report (the wave's progress when it converged, and the
observation after the soak) become one :class:`ClusterObservation` per cluster. A real cluster's
times are the fleet's (when the worker saw the wave applied and converged), never the agent's
clock; a simulated cluster's are read on its own clock, counted back at its nominal speed
(:mod:`fleet.service.steps.clocks`), so a busy machine that slows the simulation does not fail its
convergence. Clusters of the same ring that failed in earlier waves use up the failure budget
too.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from fleet.domain.gates import ClusterObservation, Observations, StepPhase, evaluate
from fleet.domain.json import JSONObject, JSONValue
from fleet.domain.machine import StepState
from fleet.service.scheduling.views import GateOutcome, Readings, RolloutView, StepView, WaveView
from fleet.service.steps.clocks import step_time

_PHASES: dict[StepState, StepPhase] = {
    StepState.PENDING: "pending",
    StepState.DISPATCHED: "applying",
    StepState.PROGRESSING: "converging",
    StepState.CONVERGED: "converged",
    StepState.VERIFYING: "converged",
    StepState.VERIFIED: "converged",
    StepState.FAILED: "failed",
    StepState.TIMED_OUT: "failed",
    StepState.UNREACHABLE: "unreachable",
    StepState.SKIPPED: "removed",
    StepState.CANCELLED: "removed",
}


def observe(step: StepView, now: datetime) -> ClusterObservation:
    """What the gate knows about one cluster's step."""
    result = step.result or {}
    kept = result.get("progress")
    progress: Mapping[str, JSONValue] = kept if isinstance(kept, Mapping) else {}
    if step.state is StepState.VERIFIED and "pendingPods" not in progress:
        return ClusterObservation(
            step.cluster, "unreachable", message="no observation after the soak"
        )
    converged = step.state in (StepState.CONVERGED, StepState.VERIFYING, StepState.VERIFIED)
    timed = step_time(step, now, converged=converged)
    failures = progress.get("launchFailures")
    registrations = progress.get("registrationFailures")
    if isinstance(failures, int) and isinstance(registrations, int):
        failures += registrations
    observed = step.state in (StepState.VERIFIED, StepState.FAILED)
    pending = progress.get("pendingPods") if observed else None
    return ClusterObservation(
        cluster=step.cluster,
        phase=_PHASES[step.state],
        elapsed=timed.elapsed if timed is not None and not converged else None,
        time_to_converge=timed.elapsed if timed is not None and converged else None,
        clock=timed.note if timed is not None else "",
        pending_pods=int(pending) if isinstance(pending, int) else None,
        launch_failures=failures if isinstance(failures, int) else None,
        drift_halted=bool(progress.get("driftHalted")),
        message=str(result.get("reason") or step.error or ""),
    )


def _prior_failures(view: RolloutView, wave: WaveView) -> int:
    failed = {StepState.FAILED, StepState.TIMED_OUT}
    if view.on_unreachable == "fail":
        failed.add(StepState.UNREACHABLE)
    return sum(
        1
        for earlier in view.ring_waves(wave.ring_index)
        if earlier.index < wave.index
        for step in earlier.steps
        if step.state in failed or step.rollback is not None
    )


def gate(
    view: RolloutView, wave: WaveView, readings: Readings | None, now: datetime
) -> GateOutcome:
    """The gate of ``wave`` (see :data:`fleet.service.scheduling.advance.Gate`)."""
    ring = view.rings[wave.ring_index]
    observations = Observations(
        clusters=[observe(step, now) for step in wave.steps],
        ring_size=ring.size,
        prior_failures=_prior_failures(view, wave),
        metrics=list((readings or {}).values()),
        approved=ring.name in view.approvals or not ring.require_approval,
    )
    result = evaluate(ring.spec.policy(view.on_unreachable), observations)
    checks: list[JSONObject] = [
        {
            "name": c.name,
            "passed": c.passed,
            "pending": c.pending,
            "observed": c.observed,
            "threshold": c.threshold,
            "message": c.message,
            "scope": c.scope,
        }
        for c in result.checks
    ]
    passed = None if result.pending else result.passed
    return GateOutcome(passed, checks, result.failed_clusters)
