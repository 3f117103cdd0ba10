"""Which rollouts hold a cluster: the rule behind "one live rollout per cluster".

A rollout holds the clusters of its steps while it is in
:data:`~fleet.domain.machine.HOLDS_CLUSTERS` (planned through awaiting-approval, rolling back,
or left ``rollback-failed``); a ``queued`` one holds nothing yet. Two rollouts conflict on a
cluster when both include it and their targets may touch the same EC2NodeClass
(:meth:`~fleet.domain.model.TargetInfo.may_overlap`: only two AMI pins on disjoint lists of
``names`` are known not to). Checks run inside a unit of work that holds the fleet's row lock
(:func:`lock_fleet`), so a check and the insert that follows it are one atomic step for every
process: two concurrent starts on the same clusters never both succeed.
"""

from __future__ import annotations

from collections.abc import Iterable

from fleet.db.errors import NotFound
from fleet.db.records import RolloutRecord
from fleet.db.uow import UnitOfWork
from fleet.domain.machine import APPLIED_STEP, HOLDS_CLUSTERS, RolloutState
from fleet.domain.model import FleetInfo, TargetInfo, release_info
from fleet.service.commands.fleets import info_of
from fleet.service.commands.refusals import ClustersHeld, CommandRefused, Hold, ReleaseLive
from fleet.service.scheduling.load import release_of

RELEASE_BUSY = HOLDS_CLUSTERS | {RolloutState.QUEUED}
"""States in which a rollout keeps its release from being started again."""


def lock_fleet(uow: UnitOfWork, name: str) -> FleetInfo:
    """Lock fleet ``name``'s row until the unit of work ends and return it as plain data;
    :class:`CommandRefused` when it has not been applied."""
    try:
        row = uow.fleets.get(name, for_update=True)
    except NotFound as exc:
        raise CommandRefused(
            f"fleet {name!r} has not been applied (run: driftwave fleet apply FLEET.yaml)"
        ) from exc
    return info_of(row)


def holders(
    uow: UnitOfWork,
    fleet: str,
    clusters: Iterable[str],
    target: TargetInfo,
    *,
    exclude: str | None = None,
) -> list[Hold]:
    """The rollouts of ``fleet`` (but ``exclude``) holding any of ``clusters`` for a target
    that may overlap ``target``, oldest first."""
    wanted = set(clusters)
    out: list[Hold] = []
    for rollout in uow.rollouts.list(states=HOLDS_CLUSTERS, fleet=fleet):
        if rollout.id == exclude or not target.may_overlap(_target(rollout)):
            continue
        held = wanted & {step.cluster.name for step in uow.steps.list(rollout.id)}
        if held:
            out.append(Hold(rollout.id, rollout.release.name, rollout.state, tuple(sorted(held))))
    return out


def refuse_twice(uow: UnitOfWork, release: str) -> None:
    """Raise :class:`ReleaseLive` when ``release`` has a live or queued rollout."""
    busy = uow.rollouts.list(states=RELEASE_BUSY, release=release)
    if busy:
        raise ReleaseLive(release, busy[0].id, busy[0].state)


def refuse_taken(uow: UnitOfWork, rollout: RolloutRecord) -> None:
    """Raise :class:`ClustersHeld` when ``rollout``, ended, would take its clusters back to roll
    them back while another live rollout holds them (rolling back is touching them again; the
    agent refuses to roll a wave back under a later one anyway). Takes the fleet's lock."""
    lock_fleet(uow, rollout.fleet.name)
    held = taken(uow, rollout)
    if held is not None:
        raise held


def taken(uow: UnitOfWork, rollout: RolloutRecord) -> ClustersHeld | None:
    """The refusal :func:`refuse_taken` raises, or None (a read: no lock is taken, so a status
    may say whether a rollback would be refused)."""
    applied = {s.cluster.name for s in uow.steps.list(rollout.id) if s.state in APPLIED_STEP}
    holds = holders(uow, rollout.fleet.name, applied, _target(rollout), exclude=rollout.id)
    if not holds:
        return None
    return ClustersHeld(
        rollout.release.name,
        holds,
        what=f"rolling back rollout {rollout.id}",
        hint="wait for it to end, or abort or roll it back first",
    )


def waiting_reason(holds: list[Hold]) -> str:
    """What a queued rollout waits for: ``waiting for rollout ro-x to end (...)``."""
    first = holds[0]
    others = [hold.rollout for hold in holds[1:]]
    also = f"; also held by {', '.join(others)}" if others else ""
    return (
        f"waiting for rollout {first.rollout} to end (it holds {', '.join(first.clusters)}{also})"
    )


def _target(rollout: RolloutRecord) -> TargetInfo:
    return release_info(release_of(rollout)).target
