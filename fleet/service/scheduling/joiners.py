"""Clusters that join the fleet while a rollout runs (``onClusterAdded: include``).

A cluster applied to the fleet after the rollout was planned, that the Release selects, joins
its ring as one more wave at the end of the ring, if the ring has not finished; a ring already
passed is not reopened (the cluster is left for the next rollout, and the audit says so once).
A cluster that another live rollout holds does not join either (one live rollout per cluster:
:mod:`fleet.service.commands.holds`, checked under the fleet's lock). Under ``onClusterAdded:
ignore``
(the default) nothing joins.
"""

from __future__ import annotations

from datetime import datetime

from fleet.db.records import RolloutRecord
from fleet.db.specs import NewWave
from fleet.db.uow import UnitOfWork
from fleet.domain.json import JSONValue
from fleet.domain.machine import RolloutState, is_live
from fleet.domain.model import release_info, selects
from fleet.domain.release import Release
from fleet.service.commands.holds import holders, lock_fleet
from fleet.service.context import audit
from fleet.service.ids import step_id, wave_id


def include_added(
    uow: UnitOfWork, rollout: RolloutRecord, release: Release, now: datetime
) -> list[str]:
    """Add the clusters that joined the fleet to the rollout; return their names."""
    strategy = release.spec.strategy
    if strategy.on_cluster_added != "include" or not is_live(RolloutState(rollout.state)):
        return []
    rings = [r.name for r in strategy.rings]
    selector = release.spec.clusters.match_labels if release.spec.clusters else None
    waves = uow.waves.list(rollout.id)
    in_rollout = {step.cluster.name for step in uow.steps.list(rollout.id)}
    ring_index = {w.ring: w.ring_index for w in waves}
    joining: dict[str, list[str]] = {}
    late: list[str] = []
    for cluster in uow.clusters.list(rollout.fleet.name):
        if cluster.name in in_rollout or cluster.ring not in rings:
            continue
        if not selects(cluster.labels, selector) or cluster.ring not in ring_index:
            continue
        if ring_index[cluster.ring] < rollout.ring_index:
            late.append(cluster.name)
            continue
        joining.setdefault(cluster.ring, []).append(cluster.name)
    if joining:
        taken = _held_elsewhere(uow, rollout, release, joining)
        for ring, names in list(joining.items()):
            joining[ring] = [n for n in names if n not in taken]
            if not joining[ring]:
                del joining[ring]
        if taken:
            _note_late(uow, rollout, sorted(taken), now, "another live rollout holds them")
    if late:
        _note_late(uow, rollout, late, now, "their ring had already passed")
    if not joining:
        return []
    seq = max((w.seq for w in waves), default=-1) + 1
    new: list[NewWave] = []
    for ring, names in joining.items():
        last = max(w.index for w in waves if w.ring == ring)
        wid = wave_id(rollout.id, seq)
        new.append(
            NewWave(
                ring=ring,
                ring_index=ring_index[ring],
                index=last + 1,
                clusters=sorted(names),
                id=wid,
                step_ids={n: step_id(rollout.id, seq, n) for n in names},
            )
        )
        seq += 1
    uow.rollouts.append_waves(rollout, new)
    added = sorted(n for names in joining.values() for n in names)
    audit(
        uow,
        now,
        "scheduler",
        "rollout.clusters-added",
        ("rollout", rollout.id),
        rollout_id=rollout.id,
        after={"clusters": added, "policy": "onClusterAdded: include"},
    )
    return added


def _held_elsewhere(
    uow: UnitOfWork, rollout: RolloutRecord, release: Release, joining: dict[str, list[str]]
) -> set[str]:
    """The joining clusters another live rollout holds (under the fleet's lock, so a rollout
    started meanwhile cannot take them at the same time)."""
    fleet = rollout.fleet.name
    lock_fleet(uow, fleet)
    names = [n for ns in joining.values() for n in ns]
    target = release_info(release).target
    return {
        c for hold in holders(uow, fleet, names, target, exclude=rollout.id) for c in hold.clusters
    }


def _note_late(
    uow: UnitOfWork, rollout: RolloutRecord, late: list[str], now: datetime, why: str
) -> None:
    """Audit once that clusters could not join, and why."""
    seen = {
        str(name)
        for row in uow.audit.list(rollout_id=rollout.id, object_type="rollout")
        if row.action == "rollout.clusters-not-added"
        for name in _listed((row.after or {}).get("clusters"))
    }
    fresh = sorted(set(late) - seen)
    if fresh:
        audit(
            uow,
            now,
            "scheduler",
            "rollout.clusters-not-added",
            ("rollout", rollout.id),
            rollout_id=rollout.id,
            after={"clusters": fresh, "why": why},
        )


def _listed(value: JSONValue) -> list[JSONValue]:
    """``value`` when it is a JSON list, else nothing."""
    return value if isinstance(value, list) else []
