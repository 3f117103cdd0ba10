"""Gates: whether a wave's results allow the rollout to go on, and failure-budget arithmetic.

:func:`evaluate` reads what the agents reported for each cluster of a wave (and, optionally,
metric readings and whether the ring was approved) against a ring's gate policy. Each cluster
is judged on its own: a cluster that failed its step, did not converge within
``convergenceTimeout``, was left with more pending pods or launch failures than allowed, had
drift halted, or was unreachable (with ``onUnreachable: fail``) counts once against the ring's
failure budget. Removed clusters, and unreachable ones under ``onUnreachable: skip``, are
skipped. The gate passes when the failures of the ring so far fit the budget, every metric is
within its bounds and, where required, the ring was approved. Data that is not in yet makes a
check *pending*, never failed; a failed check wins over pending ones.

Metric queries are not run here: callers pass :class:`MetricReading` values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

from fleet.domain.errors import StrategyError
from fleet.domain.fields import percent_of
from fleet.domain.waits import span

StepPhase = Literal[
    "pending", "applying", "converging", "converged", "failed", "unreachable", "removed"
]
"""Where a cluster's wave step stands for its gate, from the step's state (not the wave's phase
on the cluster, :class:`common.wire.phases.Phase`)."""
IN_PROGRESS: frozenset[str] = frozenset({"pending", "applying", "converging"})
OnUnreachable = Literal["fail", "skip"]
Scope = Literal["cluster", "wave"]


def failure_budget(spec: int | str, ring_size: int) -> int:
    """How many clusters of a ring of ``ring_size`` may fail: a count, or ``"N%"`` of the ring
    rounded down (``"10%"`` of 5 clusters is 0)."""
    if isinstance(spec, int) and not isinstance(spec, bool):
        if spec < 0:
            raise StrategyError(f"failure budget {spec} is negative (rule: count >= 0)")
        return spec
    percent = percent_of(spec) if isinstance(spec, str) else None
    if percent is None or percent > 100:
        raise StrategyError(
            f"failure budget {spec!r} is not a count or a percentage 0%-100% (rule: count or N%)"
        )
    return ring_size * percent // 100


@dataclass(frozen=True)
class MetricBound:
    """A metric gate: the reading named ``name`` must be within ``min``..``max`` (either open)."""

    name: str
    max: float | None = None
    min: float | None = None
    source: str = ""
    """Where the reading comes from, for messages (a URL and query)."""


@dataclass(frozen=True)
class GateSpec:
    """A ring's gate thresholds (the manifest's ``gates``), with the manifest's defaults."""

    convergence_timeout: timedelta = timedelta(minutes=30)
    max_pending_pods: int = 0
    max_launch_failures: int = 0
    metrics: tuple[MetricBound, ...] = ()


@dataclass(frozen=True)
class GatePolicy:
    """Everything a wave of a ring is judged by: thresholds, budget, approval, unreachables."""

    gates: GateSpec = field(default_factory=GateSpec)
    failure_budget: int | str = 0
    """A count or ``"N%"`` of the ring's clusters (see :func:`failure_budget`)."""
    require_approval: bool = False
    on_unreachable: OnUnreachable = "fail"


@dataclass(frozen=True)
class ClusterObservation:
    """What is known about one cluster's step in the wave; None means not reported yet."""

    cluster: str
    phase: StepPhase
    elapsed: timedelta | None = None
    """Time since the step started (to detect a convergence timeout while still converging)."""
    time_to_converge: timedelta | None = None
    clock: str = ""
    """Whose clock the times were read on, for messages (empty: the fleet's; a simulated
    cluster's own: `` (on the cluster's clock: 20h50m simulated at 600x)``)."""
    pending_pods: int | None = None
    launch_failures: int | None = None
    """The longest streak of launch/registration failures seen during the step."""
    drift_halted: bool = False
    """The agent halted drift replacement (e.g. after repeated launch failures)."""
    message: str = ""


@dataclass(frozen=True)
class MetricReading:
    """The value a metric gate's query returned (or the error it met), read after the soak."""

    name: str
    value: float | None = None
    error: str | None = None
    at: datetime | None = None


@dataclass(frozen=True)
class Observations:
    """A wave's results, with what the gate needs to know about its ring."""

    clusters: Sequence[ClusterObservation]
    ring_size: int
    prior_failures: int = 0
    """Clusters of the same ring that failed in earlier waves (they use up budget too)."""
    metrics: Sequence[MetricReading] = ()
    approved: bool = False


@dataclass(frozen=True)
class Check:
    """One criterion: whether it passed, the worst observed value and the threshold.

    ``scope`` "cluster": a per-cluster criterion; the clusters breaking it count against the
    failure budget (the ``failureBudget`` check decides). ``scope`` "wave": decides the gate.
    """

    name: str
    passed: bool
    observed: float | None
    threshold: float | None
    message: str
    pending: bool = False
    scope: Scope = "wave"


@dataclass(frozen=True)
class GateResult:
    """The gate's verdict: ``passed``, or ``pending`` (data not in yet), or neither (failed)."""

    passed: bool
    checks: list[Check]
    pending: bool
    failed_clusters: tuple[str, ...] = ()
    pending_clusters: tuple[str, ...] = ()

    def check(self, name: str) -> Check:
        """The check called ``name``; KeyError when there is none."""
        for item in self.checks:
            if item.name == name:
                return item
        raise KeyError(name)


@dataclass
class _Tally:
    """Per-criterion bookkeeping while the clusters are judged.

    A counting criterion (failed steps, unreachables, drift halts) observes how many clusters
    broke it; the others observe the worst value seen.
    """

    name: str
    threshold: float
    ok: str
    counting: bool = False
    failed: list[str] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)
    worst: float | None = None
    notes: list[str] = field(default_factory=list)

    def see(self, value: float) -> None:
        self.worst = value if self.worst is None else max(self.worst, value)

    def broke(self, cluster: str, note: str) -> None:
        self.failed.append(cluster)
        self.notes.append(note)

    def check(self) -> Check:
        observed = float(len(self.failed)) if self.counting else self.worst
        if self.failed:
            message = "; ".join(self.notes)
        elif self.waiting:
            message = f"waiting for {', '.join(self.waiting)}"
        else:
            message = "; ".join([self.ok, *self.notes])
        return Check(
            self.name,
            not self.failed and not self.waiting,
            observed,
            self.threshold,
            message,
            pending=not self.failed and bool(self.waiting),
            scope="cluster",
        )


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def evaluate(gates: GatePolicy, observations: Observations) -> GateResult:
    """Judge a wave (see the module docstring for the rules)."""
    spec = gates.gates
    timeout = spec.convergence_timeout
    tallies = {
        t.name: t
        for t in (
            _Tally("steps", 0.0, "no step failed", counting=True),
            _Tally("reachability", 0.0, "every cluster answered", counting=True),
            _Tally("convergence", timeout.total_seconds(), f"converged within {span(timeout)}"),
            _Tally("pendingPods", spec.max_pending_pods, f"at most {spec.max_pending_pods}"),
            _Tally("launchFailures", spec.max_launch_failures, "within the limit"),
            _Tally("driftHalts", 0.0, "no drift halt", counting=True),
        )
    }
    failed: list[str] = []
    waiting: list[str] = []
    for obs in observations.clusters:
        verdict = _judge(obs, spec, gates.on_unreachable, tallies)
        if verdict == "failed":
            failed.append(obs.cluster)
        elif verdict == "pending":
            waiting.append(obs.cluster)
    checks = [tally.check() for tally in tallies.values()]
    checks.append(_budget_check(gates, observations, failed, waiting))
    checks.extend(_metric_check(bound, observations.metrics) for bound in spec.metrics)
    if gates.require_approval:
        checks.append(_approval_check(observations.approved))
    decisive = [c for c in checks if c.scope == "wave"]
    has_failed = any(not c.passed and not c.pending for c in decisive)
    pending = not has_failed and any(c.pending for c in decisive)
    return GateResult(
        passed=not has_failed and not pending,
        checks=checks,
        pending=pending,
        failed_clusters=tuple(failed),
        pending_clusters=tuple(waiting),
    )


def _judge(
    obs: ClusterObservation, spec: GateSpec, on_unreachable: OnUnreachable, t: dict[str, _Tally]
) -> Literal["ok", "failed", "pending", "skipped"]:
    """One cluster's verdict; records what it broke (or waits for) in the tallies."""
    name = obs.cluster
    if obs.phase == "removed":
        return "skipped"
    if obs.phase == "unreachable":
        if on_unreachable == "skip":
            t["reachability"].notes.append(f"{name} unreachable: skipped (onUnreachable: skip)")
            return "skipped"
        t["reachability"].broke(name, f"{name} unreachable (onUnreachable: fail)")
        return "failed"
    broke = _limits(obs, spec, t)
    if obs.phase == "failed":
        t["steps"].broke(name, f"{name}: {obs.message or 'the agent reported the step failed'}")
        broke = True
    broke = _convergence(obs, spec, t["convergence"]) or broke
    if broke:
        return "failed"
    if obs.phase != "converged":
        return "pending"
    if obs.pending_pods is None:
        t["pendingPods"].waiting.append(name)
        return "pending"
    return "ok"


def _limits(obs: ClusterObservation, spec: GateSpec, t: dict[str, _Tally]) -> bool:
    """Launch failures, drift halts and (once converged) pending pods; True if any broke."""
    broke = False
    name = obs.cluster
    if obs.launch_failures is not None:
        t["launchFailures"].see(float(obs.launch_failures))
        if obs.launch_failures > spec.max_launch_failures:
            t["launchFailures"].broke(
                name,
                f"{name}: {obs.launch_failures} launch failures in a row "
                f"(max {spec.max_launch_failures})",
            )
            broke = True
    if obs.drift_halted:
        t["driftHalts"].broke(name, f"{name}: the agent halted drift replacement")
        broke = True
    if obs.pending_pods is not None and obs.phase in ("converged", "failed"):
        t["pendingPods"].see(float(obs.pending_pods))
        if obs.pending_pods > spec.max_pending_pods:
            t["pendingPods"].broke(
                name, f"{name}: {obs.pending_pods} pending pods (max {spec.max_pending_pods})"
            )
            broke = True
    return broke


def _convergence(obs: ClusterObservation, spec: GateSpec, tally: _Tally) -> bool:
    """Whether the cluster missed the convergence timeout; notes one still converging."""
    timeout = spec.convergence_timeout
    name = obs.cluster
    if obs.phase == "converged":
        took = obs.time_to_converge
        if took is None:
            return False
        tally.see(took.total_seconds())
        if took > timeout:
            took_text, limit = span(took, seconds_too=True), span(timeout)
            tally.broke(
                name, f"{name} converged in {took_text}{obs.clock}, over the {limit} timeout"
            )
            return True
        return False
    if obs.phase in IN_PROGRESS:
        if obs.elapsed is not None and obs.elapsed > timeout:
            tally.see(obs.elapsed.total_seconds())
            tally.broke(
                name,
                f"{name} not converged after {span(obs.elapsed, seconds_too=True)}{obs.clock} "
                f"(timeout {span(timeout)})",
            )
            return True
        tally.waiting.append(name)
    return False


def _budget_check(
    gates: GatePolicy, observations: Observations, failed: list[str], waiting: list[str]
) -> Check:
    budget = failure_budget(gates.failure_budget, observations.ring_size)
    used = observations.prior_failures + len(failed)
    over = used > budget
    still = bool(waiting) and not over
    what = f"{used} failed cluster(s) in the ring, budget {budget}"
    if over:
        message = f"{what}: over budget ({', '.join(failed) or 'earlier waves'})"
    elif still:
        message = f"{what} so far; waiting for {', '.join(waiting)}"
    else:
        message = f"{what}: within budget"
    return Check(
        "failureBudget", not over and not still, float(used), float(budget), message, pending=still
    )


def _metric_check(bound: MetricBound, readings: Sequence[MetricReading]) -> Check:
    name = f"metric/{bound.name}"
    reading = next((r for r in readings if r.name == bound.name), None)
    limit = bound.max if bound.max is not None else bound.min
    if reading is None or (reading.value is None and reading.error is None):
        return Check(name, False, None, limit, "no reading yet", pending=True)
    if reading.error is not None or reading.value is None:
        return Check(name, False, None, limit, f"query failed: {reading.error}")
    value = reading.value
    if bound.max is not None and value > bound.max:
        return Check(name, False, value, bound.max, f"{_fmt(value)} is above max {_fmt(bound.max)}")
    if bound.min is not None and value < bound.min:
        return Check(name, False, value, bound.min, f"{_fmt(value)} is below min {_fmt(bound.min)}")
    return Check(name, True, value, limit, f"{_fmt(value)} is within bounds")


def _approval_check(approved: bool) -> Check:
    if approved:
        return Check("approval", True, 1.0, 1.0, "approved")
    return Check("approval", False, 0.0, 1.0, "waits for approval", pending=True)
