"""The typed refusals of the rollout commands: a command the rollouts as they stand do not
allow (:class:`CommandRefused` and its kinds; :class:`AlreadyDone` for a command that would do
nothing) or that the actor may not give (:class:`CommandForbidden`), and the rules of the
operator commands (:func:`refusal`), which ``rollout status`` also shows beside each action. A
refused command changes nothing; the message says why."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from fleet.db.records import RolloutRecord
from fleet.domain.machine import (
    APPLIED_STEP,
    HOLDS_CLUSTERS,
    TERMINAL,
    IllegalTransition,
    RollbackState,
    RolloutState,
    check_transition,
)


class CommandRefused(ValueError):
    """A command does not apply to the rollout as it stands (the message says why; ``code``
    and ``fields``, (path, message) pairs, say it for scripts)."""

    code = "command_refused"

    @property
    def fields(self) -> list[tuple[str, str]]:
        """The fields at fault (none by default)."""
        return []


class AlreadyDone(CommandRefused):
    """The command would do nothing: the rollout already is what it asks for ("rollout ro-x is
    already aborted"). A no-op is never silent: it is refused like any command, exit 1 / 409."""

    code = "already_done"


class CommandForbidden(PermissionError):
    """The actor may not give this command (e.g. approve a ring outside its token's rings)."""


@dataclass(frozen=True)
class Hold:
    """A rollout holding clusters another rollout would touch."""

    rollout: str
    release: str
    state: str
    clusters: tuple[str, ...]
    """The clusters both would touch (sorted)."""

    def describe(self) -> str:
        """``rollout ro-x (release r, running) on clusters a, b``."""
        return (
            f"rollout {self.rollout} (release {self.release}, {self.state}) "
            f"on cluster(s) {', '.join(self.clusters)}"
        )


class ClustersHeld(CommandRefused):
    """A rollout would touch clusters (EC2NodeClasses of clusters) that live rollouts hold."""

    code = "clusters_held"

    def __init__(
        self, release: str, holds: Sequence[Hold], *, what: str = "", hint: str = ""
    ) -> None:
        self.release = release
        self.holds = list(holds)
        held = "; ".join(hold.describe() for hold in self.holds)
        hint = hint or (
            'wait for it to end or abort it, or start with --queue (API: "queue": true) to run '
            "once it ends"
        )
        super().__init__(
            f"{what or 'release ' + release}: its clusters are held by live {held} (rule: one "
            f"live rollout per cluster; {hint})"
        )

    @property
    def fields(self) -> list[tuple[str, str]]:
        """One entry per holding rollout: ``rollouts.ID``, the clusters it holds."""
        return [(f"rollouts.{h.rollout}", ", ".join(h.clusters)) for h in self.holds]


class ReleaseLive(CommandRefused):
    """The release already has a live or queued rollout."""

    code = "release_live"

    def __init__(self, release: str, rollout: str, state: str) -> None:
        self.release = release
        self.rollout = rollout
        self.state = state
        super().__init__(
            f"release {release} is already being rolled out by rollout {rollout} ({state}) "
            "(rule: one live or queued rollout per release, --queue included; wait for it to "
            "end or abort it)"
        )

    @property
    def fields(self) -> list[tuple[str, str]]:
        """The release's live rollout."""
        return [("metadata.name", f"rollout {self.rollout} ({self.state}) rolls it")]


Command = Literal["pause", "resume", "abort", "rollback", "approve"]
ROLES: dict[Command, Literal["operator", "approver"]] = {
    "pause": "operator",
    "resume": "operator",
    "abort": "operator",
    "rollback": "operator",
    "approve": "approver",
}
"""The API role each command needs (:mod:`fleet.api.rbac`)."""


@dataclass(frozen=True)
class Standing:
    """What the operator commands' rules read of a rollout."""

    id: str
    state: RolloutState
    paused: bool
    waiting_ring: str | None = None
    """The ring an ``awaiting-approval`` rollout waits for."""
    steps: tuple[tuple[str, str | None], ...] = ()
    """Each step's (state, rollback state): what a rollback would touch."""


def standing(
    rollout: RolloutRecord,
    *,
    waiting_ring: str | None = None,
    steps: Iterable[tuple[str, str | None]] = (),
) -> Standing:
    """A rollout row's :class:`Standing`."""
    return Standing(
        rollout.id, RolloutState(rollout.state), bool(rollout.paused), waiting_ring, tuple(steps)
    )


def rolls_back(state: RolloutState, step: str, rollback: str | None) -> bool:
    """Whether a rollback from ``state`` rolls back a step in ``step`` / ``rollback`` (a step
    the wave may have reached, not rolled back yet, or whose rollback failed when the rollout
    is ``rollback-failed``)."""
    again = RollbackState.FAILED if state is RolloutState.ROLLBACK_FAILED else None
    return step in APPLIED_STEP and rollback in (None, again)


def refusal(
    command: Command,
    rollout: Standing,
    *,
    ring: str | None = None,
    taken: Callable[[], str | None] = lambda: None,
) -> str | None:
    """Why ``command`` is refused on ``rollout`` as it stands (None: the rollout's state allows
    it). The commands raise this message; ``rollout status`` shows it beside each action.

    ``ring``: the ring an approval names (None: the ring that waits). ``taken()``: why another
    live rollout keeps an ended rollout from being rolled back (called only then; it may raise
    its own refusal instead)."""
    return already(command, rollout) or not_now(command, rollout, ring=ring, taken=taken)


def already(command: Command, rollout: Standing) -> str | None:
    """Why ``command`` would do nothing on ``rollout``: it already is what the command asks
    for (``rollout ro-x is already aborted``); None otherwise. Raised as :class:`AlreadyDone`."""
    rid, state = rollout.id, rollout.state
    ended = state in TERMINAL
    if command == "pause" and rollout.paused and not ended:
        return f"rollout {rid} is already paused"
    if command == "resume" and not rollout.paused and not ended:
        if state in (RolloutState.QUEUED, RolloutState.PLANNED):
            return f"rollout {rid} is not paused (it is {state}): there is nothing to resume"
        going = "rolling back" if state is RolloutState.ROLLING_BACK else "running"
        now = "" if state in (RolloutState.RUNNING, RolloutState.ROLLING_BACK) else f"{state}, "
        return f"rollout {rid} is already {going} ({now}not paused)"
    if command == "abort" and state is RolloutState.ABORTED:
        return f"rollout {rid} is already aborted"
    if command == "abort" and ended:
        return f"rollout {rid} has already ended ({state}): there is nothing to abort"
    if command == "rollback" and state is RolloutState.ROLLING_BACK:
        return f"rollout {rid} is already rolling back"
    if command == "rollback" and state is RolloutState.ROLLED_BACK:
        return f"rollout {rid} is already rolled back"
    return None


def not_now(
    command: Command,
    rollout: Standing,
    *,
    ring: str | None,
    taken: Callable[[], str | None],
) -> str | None:
    """Why ``command`` is refused on ``rollout`` when it is not a no-op (:func:`refusal`)."""
    rid, state = rollout.id, rollout.state
    if command == "pause":
        if state in TERMINAL:
            return f"rollout {rid} has ended ({state}): there is nothing to pause"
        if state is RolloutState.ROLLING_BACK:
            return f"rollout {rid} is rolling back: there is nothing to pause (it runs to its end)"
        return None
    if command == "resume":
        if state in TERMINAL:
            return f"rollout {rid} has ended ({state}): there is nothing to resume"
        return None
    if command == "approve":
        if state is not RolloutState.AWAITING_APPROVAL:
            also = f" (no ring waits, so ring {ring} cannot be approved)" if ring else ""
            return f"rollout {rid} is {state}: it is not waiting for an approval{also}"
        if ring is not None and ring != rollout.waiting_ring:
            return f"rollout {rid} waits for approval of ring {rollout.waiting_ring}, not {ring}"
        return None
    if command == "abort":
        if state is RolloutState.ROLLING_BACK:
            return (
                f"rollout {rid} is rolling back: it cannot be aborted (a rollback runs to its end)"
            )
        return _illegal(rid, state, RolloutState.ABORTED)
    if state in (RolloutState.QUEUED, RolloutState.PLANNED):
        return (
            f"rollout {rid} is {state}: nothing was rolled out yet, so nothing can be rolled back"
        )
    if (illegal := _illegal(rid, state, RolloutState.ROLLING_BACK)) is not None:
        return illegal
    if state not in HOLDS_CLUSTERS and (held := taken()):
        return held
    if not any(rolls_back(state, step, back) for step, back in rollout.steps):
        return (
            f"rollout {rid} is {state}: no cluster has anything to roll back "
            "(no wave reached one, or every one is rolled back already)"
        )
    return None


def _illegal(rid: str, state: RolloutState, wanted: RolloutState) -> str | None:
    """The state machine's own refusal, for a state the messages above do not name."""
    try:
        check_transition(rid, state, wanted)
    except IllegalTransition as exc:
        return str(exc)
    return None


@dataclass(frozen=True)
class Unheld:
    """A cluster of an earlier ring that no longer holds the target its step was verified on."""

    cluster: str
    ring: str
    text: str
    """How it stands now, with the observation's age (``regressed: ... (observed 8 s ago)``)."""


class ClustersRegressed(CommandRefused):
    """A ring cannot be approved while a cluster of an earlier ring no longer holds the target
    it was verified on (the cluster is the record, not the step's history)."""

    code = "cluster_regressed"

    def __init__(self, rollout: str, ring: str, unheld: Sequence[Unheld]) -> None:
        self.rollout = rollout
        self.ring = ring
        self.unheld = list(unheld)
        named = "; ".join(f"{u.cluster} (ring {u.ring}): {u.text}" for u in self.unheld)
        super().__init__(
            f"rollout {rollout}: ring {ring} cannot be approved while an earlier ring's cluster "
            f"no longer holds its verified target: {named} (rule: the cluster is the record; "
            "roll the rollout back, or wait until the cluster runs the target again)"
        )

    @property
    def fields(self) -> list[tuple[str, str]]:
        """One entry per cluster: ``clusters.NAME``, how it stands now."""
        return [(f"clusters.{u.cluster}", u.text) for u in self.unheld]
