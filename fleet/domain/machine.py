"""The rollout state machine: the states of a rollout, of its waves and of each cluster step, and
the transitions allowed between them (pure; the scheduler persists every transition).

A rollout moves ``planned → running → soaking → gating →`` (the next wave, or the next ring,
which may first wait in ``awaiting-approval``) ``→ succeeded``. A failed gate past the ring's
failure budget ends in ``halted`` (``onFailure: halt``) or goes ``rolling-back → rolled-back``
(``onFailure: rollback``, the default). A rollback that could not restore every cluster ends in
``rollback-failed`` (each failed cluster keeps its reason); rolling back again from there tries
those clusters again. A rollout started with ``--queue`` while another live rollout holds one of
its clusters waits in ``queued`` and becomes ``planned`` once that one ends. An operator may
``abort`` or ``rollback`` at any time before the end; ``paused`` is a flag beside the state
(nothing new is dispatched, nothing advances), not a state, so resuming returns exactly where
the rollout stood.
"""

from __future__ import annotations

from enum import StrEnum


class RolloutState(StrEnum):
    """Where a rollout stands."""

    QUEUED = "queued"
    PLANNED = "planned"
    RUNNING = "running"
    SOAKING = "soaking"
    GATING = "gating"
    AWAITING_APPROVAL = "awaiting-approval"
    SUCCEEDED = "succeeded"
    HALTED = "halted"
    ROLLING_BACK = "rolling-back"
    ROLLED_BACK = "rolled-back"
    ROLLBACK_FAILED = "rollback-failed"
    ABORTED = "aborted"


class WaveState(StrEnum):
    """Where one wave stands."""

    PENDING = "pending"
    RUNNING = "running"
    SOAKING = "soaking"
    GATING = "gating"
    PASSED = "passed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class StepState(StrEnum):
    """Where one (rollout, wave, cluster) step stands.

    ``dispatched`` means a task was sent; ``progressing`` that the agent accepted the wave;
    ``converged`` that every node runs the target; ``verified`` that the cluster was observed
    again once the wave's soak had passed. ``failed``, ``timed-out`` and ``unreachable`` count
    against the ring's failure budget (``unreachable`` only under ``onUnreachable: fail``).
    """

    PENDING = "pending"
    DISPATCHED = "dispatched"
    PROGRESSING = "progressing"
    CONVERGED = "converged"
    VERIFYING = "verifying"
    VERIFIED = "verified"
    FAILED = "failed"
    TIMED_OUT = "timed-out"
    UNREACHABLE = "unreachable"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"


class RollbackState(StrEnum):
    """Where the rollback of one step stands (a step is rolled back at most once)."""

    REQUESTED = "requested"
    DISPATCHED = "dispatched"
    ROLLING_BACK = "rolling-back"
    ROLLED_BACK = "rolled-back"
    FAILED = "failed"


TERMINAL = frozenset(
    {
        RolloutState.SUCCEEDED,
        RolloutState.HALTED,
        RolloutState.ROLLED_BACK,
        RolloutState.ROLLBACK_FAILED,
        RolloutState.ABORTED,
    }
)
"""States in which a rollout has ended: nothing advances it (a halted, aborted or succeeded
rollout may still be rolled back, and a ``rollback-failed`` one rolled back again)."""

HOLDS_CLUSTERS = frozenset(
    {
        RolloutState.PLANNED,
        RolloutState.RUNNING,
        RolloutState.SOAKING,
        RolloutState.GATING,
        RolloutState.AWAITING_APPROVAL,
        RolloutState.ROLLING_BACK,
        RolloutState.ROLLBACK_FAILED,
    }
)
"""States in which a rollout holds its clusters: no other rollout may touch them (a
``rollback-failed`` rollout still has clusters to put back; a ``queued`` one holds none yet)."""

ACTIVE_STEP = frozenset({StepState.DISPATCHED, StepState.PROGRESSING, StepState.VERIFYING})
"""Steps a worker is carrying."""

DONE_STEP = frozenset(
    {
        StepState.CONVERGED,
        StepState.VERIFIED,
        StepState.FAILED,
        StepState.TIMED_OUT,
        StepState.UNREACHABLE,
        StepState.SKIPPED,
        StepState.CANCELLED,
    }
)
"""Steps whose apply phase is over (``converged`` still waits for its verification)."""

APPLIED_STEP = frozenset(
    {
        StepState.DISPATCHED,
        StepState.PROGRESSING,
        StepState.CONVERGED,
        StepState.VERIFYING,
        StepState.VERIFIED,
        StepState.FAILED,
        StepState.TIMED_OUT,
        StepState.UNREACHABLE,
    }
)
"""Steps whose wave may have reached the agent (and so may need rolling back)."""

FAILED_STEP = frozenset({StepState.FAILED, StepState.TIMED_OUT, StepState.UNREACHABLE})
"""Steps that failed their cluster (``unreachable`` counts only under ``onUnreachable: fail``)."""

_ANY_LIVE = {
    RolloutState.PLANNED,
    RolloutState.RUNNING,
    RolloutState.SOAKING,
    RolloutState.GATING,
    RolloutState.AWAITING_APPROVAL,
}

TRANSITIONS: dict[RolloutState, frozenset[RolloutState]] = {
    RolloutState.QUEUED: frozenset({RolloutState.PLANNED, RolloutState.ABORTED}),
    RolloutState.PLANNED: frozenset(
        {
            RolloutState.RUNNING,
            RolloutState.AWAITING_APPROVAL,
            RolloutState.ABORTED,
            RolloutState.SUCCEEDED,
        }
    ),
    RolloutState.RUNNING: frozenset(
        {
            RolloutState.SOAKING,
            RolloutState.GATING,
            RolloutState.ABORTED,
            RolloutState.ROLLING_BACK,
        }
    ),
    RolloutState.SOAKING: frozenset(
        {RolloutState.GATING, RolloutState.ABORTED, RolloutState.ROLLING_BACK}
    ),
    RolloutState.GATING: frozenset(
        {
            RolloutState.RUNNING,
            RolloutState.AWAITING_APPROVAL,
            RolloutState.SUCCEEDED,
            RolloutState.HALTED,
            RolloutState.ROLLING_BACK,
            RolloutState.ABORTED,
        }
    ),
    RolloutState.AWAITING_APPROVAL: frozenset(
        {RolloutState.RUNNING, RolloutState.ABORTED, RolloutState.ROLLING_BACK}
    ),
    RolloutState.ROLLING_BACK: frozenset({RolloutState.ROLLED_BACK, RolloutState.ROLLBACK_FAILED}),
    RolloutState.ROLLBACK_FAILED: frozenset({RolloutState.ROLLING_BACK}),
    RolloutState.SUCCEEDED: frozenset({RolloutState.ROLLING_BACK}),
    RolloutState.HALTED: frozenset({RolloutState.ROLLING_BACK}),
    RolloutState.ABORTED: frozenset({RolloutState.ROLLING_BACK}),
    RolloutState.ROLLED_BACK: frozenset(),
}
"""Every transition a rollout may make; anything else is a bug or a refused command."""


class IllegalTransition(ValueError):
    """A command or event asked for a transition the state machine does not allow."""

    def __init__(self, rollout: str, current: RolloutState, wanted: RolloutState) -> None:
        self.rollout = rollout
        self.current = current
        self.wanted = wanted
        allowed = ", ".join(sorted(TRANSITIONS[current])) or "none"
        super().__init__(
            f"rollout {rollout} is {current}: it cannot become {wanted} (from {current}: {allowed})"
        )


def check_transition(rollout: str, current: RolloutState, wanted: RolloutState) -> None:
    """Raise :class:`IllegalTransition` unless ``current → wanted`` is allowed."""
    if wanted not in TRANSITIONS[current]:
        raise IllegalTransition(rollout, current, wanted)


def is_live(state: RolloutState) -> bool:
    """True while the scheduler still advances the rollout (not rolling back, not ended)."""
    return state in _ANY_LIVE
