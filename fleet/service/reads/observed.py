"""What a cluster runs now, as the fleet last observed it, with the observation's age.

The fleet's newest word on a cluster is its last status (the agent's ``/v1/status``: nodes per
image, drifted, disrupting), stored with the fleet's time of the answer (``last_seen_at``) by
every contact probe and by the step runner whenever it reads a status (at convergence, at
verification, once a rollback holds). Every view of a cluster (``rollout status``, ``cluster
history``, the dashboard, the API, the contact's health and the approval's check) reads it
through :func:`cluster_now`, so none presents what the fleet's history implies instead: a step's
stored state may stay ``verified`` for the record while the view says the cluster was
``rolled-back`` or has ``regressed`` since.

:func:`cluster_now` judges one step against the observation (pure):

* ``superseded``: a later rollout's step has reached the cluster since; nothing is judged;
* ``unobserved``: no observation at all, or none since the step's wave was applied;
* ``rolled-back``: the step's rollback is done: what the cluster runs now;
* ``on-target`` / ``regressed``: a converged or verified step: every node on the wave's target
  images and none drifted, or else how many nodes run the images the wave replaced (or others)
  and how many drifted;
* ``observed``: any other step (under way, failed, rolling back): what the cluster runs now.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from common.wire.status import StatusDocument
from fleet.db.records import ClusterRecord, StepRecord
from fleet.db.uow import UnitOfWork
from fleet.documents.clusters import ClusterNow as NowDocument
from fleet.documents.clusters import HoldingName, ObservationDocument
from fleet.domain.machine import RollbackState, StepState
from fleet.domain.plan import iso
from fleet.service.commands.refusals import ClustersRegressed, Unheld


class Holding(StrEnum):
    """How a step's cluster stands now (see the module docstring)."""

    ON_TARGET = "on-target"
    REGRESSED = "regressed"
    ROLLED_BACK = "rolled-back"
    OBSERVED = "observed"
    SUPERSEDED = "superseded"
    UNOBSERVED = "unobserved"


_NAMES: dict[Holding, HoldingName] = {
    Holding.ON_TARGET: "on-target",
    Holding.REGRESSED: "regressed",
    Holding.ROLLED_BACK: "rolled-back",
    Holding.OBSERVED: "observed",
    Holding.SUPERSEDED: "superseded",
    Holding.UNOBSERVED: "unobserved",
}
"""Each holding as the documents name it (the same words)."""

JUDGED = frozenset({StepState.CONVERGED, StepState.VERIFYING, StepState.VERIFIED})
"""The step states whose target the cluster should still hold."""


def ago(seconds: float) -> str:
    """An age as people say it: ``12 s ago``, ``4 min ago``, ``3.2 h ago``."""
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f} s ago"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min ago"
    return f"{seconds / 3600:.1f} h ago"


@dataclass(frozen=True)
class Seen:
    """One observation of a cluster: when (the fleet's clock) and what its nodes run."""

    at: datetime
    nodes: int
    by_image: Mapping[str, int]
    drifted: int
    disrupting: int

    @classmethod
    def of(cls, status: StatusDocument | None, at: datetime | None) -> Seen | None:
        """The observation in an agent's status document seen at ``at`` (None without one)."""
        if status is None or at is None:
            return None
        by_image = {image: count for image, count in status.nodes_by_image.items() if count}
        return cls(at, status.nodes, by_image, status.drifted, status.disrupting)

    def runs(self) -> str:
        """``40/40 on ami-0a1``, or ``28/40 on ami-new, 12/40 on ami-old`` (most first)."""
        if not self.by_image:
            return f"{self.nodes} node(s), none on a known image"
        ranked = sorted(self.by_image.items(), key=lambda kv: (-kv[1], kv[0]))
        return ", ".join(f"{count}/{self.nodes} on {image}" for image, count in ranked)


@dataclass(frozen=True)
class ClusterNow:
    """How a step's cluster stands now: the judgement, in words, and the observation."""

    holding: Holding
    message: str
    """Without the age (``regressed: 12/40 nodes on ami-old``): see :meth:`text`."""
    seen: Seen | None
    superseded_by: str | None = None

    def text(self, now: datetime) -> str:
        """The message with the observation's age: ``... (observed 12 s ago)``."""
        if self.seen is None:
            return self.message
        return f"{self.message} (observed {ago((now - self.seen.at).total_seconds())})"

    def document(self, now: datetime) -> NowDocument:
        """As the views show it: the holding, the message, its text with the age, and the
        observation's time, age, nodes, images, drift and the rollout that superseded it."""
        seen = self.seen
        return NowDocument(
            holding=_NAMES[self.holding],
            message=self.message,
            text=self.text(now),
            observed_at=iso(seen.at) if seen else None,
            age_seconds=round(max(0.0, (now - seen.at).total_seconds()), 1) if seen else None,
            nodes=seen.nodes if seen else None,
            nodes_by_image=dict(seen.by_image) if seen else None,
            drifted=seen.drifted if seen else None,
            superseded_by=self.superseded_by,
        )


def observation(seen: Seen | None, now: datetime) -> ObservationDocument | None:
    """A cluster's last observation as the views show it: when, its age, the nodes, images,
    drift and disruptions, and ``text`` (``40/40 on ami-0a1 (observed 12 s ago)``); None when
    the fleet never observed it."""
    if seen is None:
        return None
    age = max(0.0, (now - seen.at).total_seconds())
    return ObservationDocument(
        observed_at=iso(seen.at),
        age_seconds=round(age, 1),
        nodes=seen.nodes,
        nodes_by_image=dict(seen.by_image),
        drifted=seen.drifted,
        disrupting=seen.disrupting,
        text=f"{seen.runs()} (observed {ago(age)})",
    )


def images(*values: object) -> frozenset[str]:
    """The image ids in the first of ``values`` that names any: a list, or ``a, b`` text."""
    for value in values:
        if isinstance(value, list):
            found = frozenset(str(v) for v in value if v)
        elif isinstance(value, str):
            found = frozenset(part.strip() for part in value.split(",") if part.strip())
        else:
            continue
        if found:
            return found
    return frozenset()


def step_images(step: StepRecord) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """A step row's (target images, images it replaced, images its nodes ran once converged),
    from the wave document it stored and its ``image_after`` / ``image_before`` columns (a
    target may resolve to several images, one per architecture or variant)."""
    result = step.result if isinstance(step.result, Mapping) else {}
    target = images(result.get("targetImages"), step.image_after)
    before = images(result.get("imagesBefore"), step.image_before)
    return target, before - target, images(step.image_after) & target


def cluster_now(
    state: str,
    rollback: str | None,
    *,
    target: Iterable[str],
    before: Iterable[str],
    seen: Seen | None,
    converged_on: Iterable[str] = (),
    applied_at: datetime | None = None,
    superseded_by: str | None = None,
) -> ClusterNow:
    """How a step (``state``, ``rollback``, its wave's ``target`` images, the images it
    replaced, ``before``, and those its nodes ran once converged, ``converged_on``, named as the
    target when known) stands on the observation ``seen`` (module docstring). An observation
    older than ``applied_at`` (when the wave was applied) says nothing of it."""
    if superseded_by is not None:
        runs = f"; runs {seen.runs()}" if seen else ""
        return ClusterNow(
            Holding.SUPERSEDED,
            f"since changed by rollout {superseded_by}{runs}",
            seen,
            superseded_by,
        )
    if seen is None:
        return ClusterNow(Holding.UNOBSERVED, "never observed", None)
    if applied_at is not None and seen.at < applied_at:
        return ClusterNow(Holding.UNOBSERVED, "not observed since its wave was applied", None)
    if rollback == RollbackState.ROLLED_BACK:
        return ClusterNow(Holding.ROLLED_BACK, f"rolled back: {seen.runs()}", seen)
    wanted = frozenset(target)
    if rollback is None and state in JUDGED and wanted:
        return _held(wanted, frozenset(before), frozenset(converged_on) or wanted, seen)
    return ClusterNow(Holding.OBSERVED, f"runs {seen.runs()}", seen)


def _held(
    target: frozenset[str], before: frozenset[str], named: frozenset[str], seen: Seen
) -> ClusterNow:
    on = sum(count for image, count in seen.by_image.items() if image in target)
    off = {
        image: count
        for image, count in seen.by_image.items()
        if image not in target and (not before or image in before)
    }
    if not off and not seen.drifted and seen.nodes > 0:
        shown = ", ".join(sorted(target & set(seen.by_image)) or sorted(target))
        return ClusterNow(Holding.ON_TARGET, f"on target: {on}/{seen.nodes} on {shown}", seen)
    parts = [
        f"{count}/{seen.nodes} nodes on {image}"
        for image, count in sorted(off.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    if seen.drifted:
        parts.append(f"{seen.drifted} drifted")
    if not parts:
        parts.append("no node on the target")
    wanted = ", ".join(sorted(named))
    return ClusterNow(Holding.REGRESSED, f"regressed: {', '.join(parts)} (target {wanted})", seen)


def of_steps(uow: UnitOfWork, steps: Iterable[StepRecord]) -> dict[str, ClusterNow]:
    """Each step row's :func:`cluster_now` on its cluster's last status (the rows' ``cluster``
    loaded), by step id, with the clusters' latest steps read in one query."""
    rows = list(steps)
    latest = uow.steps.latest_of(step.cluster_id for step in rows)
    out: dict[str, ClusterNow] = {}
    for step in rows:
        newest = latest.get(step.cluster_id)
        later = newest[1].id if newest is not None and newest[0].id != step.id else None
        out[step.id] = of_step(step, step.cluster, later)
    return out


def latest_of(uow: UnitOfWork, clusters: Iterable[ClusterRecord]) -> dict[int, ClusterNow]:
    """How each cluster row stands against its latest step, by cluster id (clusters no step
    reached are absent), with the latest steps read in one query."""
    rows = {cluster.id: cluster for cluster in clusters}
    return {cid: of_step(step, rows[cid]) for cid, (step, _) in uow.steps.latest_of(rows).items()}


def of_step(
    step: StepRecord, cluster: ClusterRecord, superseded_by: str | None = None
) -> ClusterNow:
    """A step row's :func:`cluster_now` on its cluster row's last status; ``superseded_by``: the
    rollout whose step reached the cluster later, if any."""
    target, before, converged_on = step_images(step)
    return cluster_now(
        str(step.state),
        step.rollback_state,
        target=target,
        before=before,
        converged_on=converged_on,
        seen=Seen.of(cluster.last_status, cluster.last_seen_at),
        applied_at=step.started_at,
        superseded_by=superseded_by,
    )


def unheld(
    uow: UnitOfWork, rollout: str, before_ring: int, now: datetime
) -> ClustersRegressed | None:
    """The refusal of approving ring ``before_ring`` of ``rollout`` while a verified cluster of
    an earlier ring has regressed on the fleet's last observation (None: every one holds)."""
    ring_of = {wave.id: (wave.ring_index, wave.ring) for wave in uow.waves.list(rollout)}
    earlier = [
        step
        for step in uow.steps.list(rollout)
        if ring_of.get(step.wave_id, (before_ring, ""))[0] < before_ring
        and step.state in JUDGED
        and step.rollback_state is None
    ]
    standings = of_steps(uow, earlier)
    found = [
        Unheld(step.cluster.name, ring_of[step.wave_id][1], standings[step.id].text(now))
        for step in earlier
        if standings[step.id].holding is Holding.REGRESSED
    ]
    return ClustersRegressed(rollout, ring_of_name(ring_of, before_ring), found) if found else None


def ring_of_name(rings: Mapping[str, tuple[int, str]], index: int) -> str:
    """The name of ring ``index`` among waves' (index, name) pairs (``#index`` if none)."""
    return next((name for i, name in rings.values() if i == index), f"#{index}")
