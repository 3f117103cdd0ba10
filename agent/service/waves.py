"""A wave on one cluster: what was applied, what it replaced, and the phase it has reached.

A :class:`Wave` is the agent's record of one ``apply_wave``: the target, the EC2NodeClasses it
changed and how each stood before (its ``amiSelectorTerms``, ``amiFamily``, the images it
resolved to and the images its nodes ran), the Kubernetes version before, and the images the
target resolves to. Waves are kept in the cluster itself (:mod:`agent.service.wavestore`), so a
restarted or failed-over agent knows them; :func:`observe` says what the cluster shows of a wave
now, whatever its phase history says.

Phases (:func:`evaluate` moves a wave along; each change is kept in ``history`` with the agent's
time):

* ``progressing``: applied; nodes are being replaced. It becomes ``converged`` when every
  NodeClaim of the NodePools using the wave's EC2NodeClasses is initialized, runs an image the
  classes now resolve to, and none is Drifted; ``failed`` when one of those NodePools has its
  drift halted (replacements keep failing) or a class resolves to no image.
* ``failed`` stays failed until the wave is rolled back.
* ``rolling-back``: the previous selection was restored; ``rolled-back`` once converged (same
  test) on the previous images, ``rollback-failed`` on a halt or an unresolvable class.

A wave's ``progress`` (with its NodePools' budgets, whether it waits on one, and its ETA:
:mod:`agent.service.pacing`) is read live while it is under way or failed, and kept as it was
when the wave converged or finished rolling back. Its failure and replacement counts are its
own: the NodeClaims of its NodePools that ended while it was under way
(:mod:`agent.service.status`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

from agent.api.conditions import is_true
from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.labels import NODEPOOL_LABEL
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.kube.port import NotFound
from agent.service.pacing import pacing
from agent.service.runtime import AgentRuntime
from agent.service.status import (
    LifecycleLog,
    NodeClaimEnd,
    disrupting,
    drift_halted,
    images_of,
    pending_pods,
    rfc3339,
    status_behind,
)
from common.wire.observation import CODE_STATE, Expected, Observation, VerdictCode, VerdictState
from common.wire.phases import FINISHED, MOVING, ROLLED, Phase
from common.wire.status import Clock
from common.wire.target import WaveTarget
from common.wire.waves import PhaseChange, PreviousClass, Progress, WaveDocument


@dataclass(frozen=True)
class ClassBefore:
    """How one EC2NodeClass stood before the wave changed it."""

    terms: list[dict[str, Any]]
    ami_family: str | None
    images: list[str]
    """The images it resolved to (``status.amis``)."""
    node_images: list[str]
    """The images the nodes of its NodePools ran."""


@dataclass(frozen=True)
class Selection:
    """The image selection of one EC2NodeClass: its ``amiSelectorTerms`` and ``amiFamily``."""

    terms: list[dict[str, Any]]
    ami_family: str | None

    @staticmethod
    def of(nodeclass: EC2NodeClass) -> Selection:
        """The selection ``nodeclass`` carries now."""
        terms = [t.to_manifest() for t in nodeclass.spec.ami_selector_terms]
        return Selection(terms, nodeclass.spec.ami_family)


@dataclass
class Wave:
    """One applied wave (see the module docstring)."""

    id: str
    request: dict[str, Any]
    node_classes: list[str]
    pools: list[str]
    before: dict[str, ClassBefore]
    kubernetes_version_before: str
    target_images: list[str]
    applied_at: datetime
    phase: Phase = Phase.PROGRESSING
    reason: str = ""
    converged_at: datetime | None = None
    finished_at: datetime | None = None
    phase_since: datetime | None = None
    history: list[tuple[Phase, datetime, str]] = field(default_factory=list)
    launch_failures: int = 0
    registration_failures: int = 0
    nodes_replaced: int = 0
    final_progress: Progress | None = None
    applied: dict[str, Selection] = field(default_factory=dict)
    """The selection the wave put on each class (empty for a Kubernetes-version wave)."""
    restored: dict[str, Selection] = field(default_factory=dict)
    """The selection its rollback put back on each class (set when the rollback starts)."""

    def __post_init__(self) -> None:
        if not self.history:
            self.history.append((self.phase, self.applied_at, self.reason))
        if self.phase_since is None:
            self.phase_since = self.applied_at

    @property
    def target(self) -> dict[str, Any]:
        """The wave's target as requested."""
        target: dict[str, Any] = self.request["target"]
        return target

    @cached_property
    def wire_target(self) -> WaveTarget:
        """The wave's target as the wave document carries it (read once: a wave's request
        never changes). A wave rolled back from a caller's record that named no target has
        none: its document carries ``target: {}``, as the record does."""
        if not self.target:
            return WaveTarget.model_construct()
        return WaveTarget.model_validate(self.target)

    @property
    def moving(self) -> bool:
        """Whether nodes are being replaced for this wave now."""
        return self.phase in MOVING

    def images_before(self) -> list[str]:
        """The images the wave's nodes ran before it (all classes), without repeats."""
        seen: dict[str, None] = {}
        for before in self.before.values():
            seen.update(dict.fromkeys(before.node_images))
        return list(seen)

    def move(self, phase: Phase, now: datetime, reason: str = "") -> None:
        """Enter ``phase`` at ``now`` (a reason replaces the previous one when given)."""
        self.phase = phase
        self.phase_since = now
        if reason:
            self.reason = reason
        self.history.append((phase, now, reason))
        if phase is Phase.CONVERGED:
            self.converged_at = now
        if phase in FINISHED:
            self.finished_at = now

    def count(self, end: NodeClaimEnd) -> None:
        """Count a NodeClaim's end against the wave while it is under way in its NodePools."""
        if not self.moving or end.pool not in self.pools:
            return
        if end.outcome == "launch":
            self.launch_failures += 1
        elif end.outcome == "registration":
            self.registration_failures += 1
        else:
            self.nodes_replaced += 1


def wave_claims(world: AgentRuntime, pools: list[str]) -> list[NodeClaim]:
    """The NodeClaims of ``pools``."""
    wanted = set(pools)
    return [
        c for c in world.cluster.list(NodeClaim) if c.metadata.labels.get(NODEPOOL_LABEL) in wanted
    ]


def pools_using(world: AgentRuntime, classes: list[str]) -> list[str]:
    """The NodePools whose ``nodeClassRef`` names one of ``classes``."""
    wanted = set(classes)
    return sorted(
        p.name
        for p in world.cluster.list(NodePool)
        if p.spec.template.spec.node_class_ref.name in wanted
    )


def resolved_images(world: AgentRuntime, classes: list[str]) -> tuple[set[str], list[str]]:
    """The images ``classes`` resolve to now, and the classes that resolve to none. A class
    whose status is behind its spec (:func:`unresolved`) is neither: its images are the
    previous selection's, so none of them counts."""
    images: set[str] = set()
    empty: list[str] = []
    for name in classes:
        try:
            nodeclass = world.cluster.get(EC2NodeClass, name)
        except NotFound:
            empty.append(name)
            continue
        if status_behind(nodeclass):
            continue
        found = images_of(nodeclass)
        if not found:
            empty.append(name)
        images.update(found)
    return images, empty


def unresolved(world: AgentRuntime, classes: list[str]) -> list[str]:
    """The classes whose status has not caught up with their spec yet (the resolver, Karpenter
    under the Karpenter driver, has not seen the new ``amiSelectorTerms``)."""
    behind = []
    for name in classes:
        try:
            if status_behind(world.cluster.get(EC2NodeClass, name)):
                behind.append(name)
        except NotFound:
            continue
    return behind


def progress(world: AgentRuntime, wave: Wave) -> Progress:
    """How far the wave's NodePools are, now (the ``progress`` of the wave document)."""
    claims = wave_claims(world, wave.pools)
    images, _ = resolved_images(world, wave.node_classes)
    on_target = sum(
        1
        for c in claims
        if is_true(c, "Initialized")
        and not c.metadata.deletion_timestamp
        and (c.status.image_id or "") in images
    )
    paced = pacing(world, wave, claims, images)
    return Progress(
        nodes=len(claims),
        on_target=on_target,
        drifted=sum(1 for c in claims if is_true(c, "Drifted")),
        disrupting=disrupting(world, claims),
        pending_pods=pending_pods(world),
        launch_failures=wave.launch_failures,
        registration_failures=wave.registration_failures,
        drift_halted=drift_halted(world, wave.pools),
        nodes_replaced=wave.nodes_replaced,
        budgets=paced.budgets,
        waiting_on_budget=paced.waiting_on_budget,
        remaining=paced.remaining,
        eta_seconds=paced.eta_seconds,
        eta_basis=paced.eta_basis,
    )


def emptied(world: AgentRuntime, claims: list[NodeClaim]) -> bool:
    """The wave's NodePools have no NodeClaim while pods wait for a node: their nodes were
    removed and the replacements are not there yet (not a converged state)."""
    return not claims and pending_pods(world) > 0


def is_converged(world: AgentRuntime, wave: Wave) -> bool:
    """Every NodeClaim of the wave's NodePools initialized, on an image its classes resolve to
    now, and not Drifted (and not :func:`emptied`); never while a class's status is behind its
    spec (:func:`unresolved`: the images it lists are the previous selection's)."""
    images, empty = resolved_images(world, wave.node_classes)
    if empty or unresolved(world, wave.node_classes):
        return False
    claims = wave_claims(world, wave.pools)
    return not emptied(world, claims) and all(
        is_true(c, "Initialized")
        and not is_true(c, "Drifted")
        and not c.metadata.deletion_timestamp
        and (c.status.image_id or "") in images
        for c in claims
    )


def observe(world: AgentRuntime, wave: Wave, failures: tuple[int, int]) -> Observation:
    """What the cluster shows of the wave now, read afresh on every call (the ``observed``
    block of the wave document): whether the wave's classes still carry the selection the wave
    set (``expected: target``), or, once it is rolled back, the one its rollback put back
    (``expected: previous``); the control plane's version against a version target; and how
    many nodes of its NodePools are initialized on the images those classes resolve to, with
    none drifted or being disrupted. ``holds`` is True when all of that is so; ``reason`` says
    what is not. The fleet verifies a step only on ``holds`` (never on the phase's history).
    ``failures``: the launch and registration failures in the wave's NodePools since it was
    applied (:meth:`agent.service.status.LifecycleLog.failures`)."""
    rolled = wave.phase in ROLLED
    expected = wave.restored if rolled else wave.applied
    problems: list[tuple[VerdictCode, str]] = []
    changed: list[str] = []
    for name, selection in expected.items():
        try:
            current = Selection.of(world.cluster.get(EC2NodeClass, name))
        except NotFound:
            changed.append(f"{name} (deleted)")
            continue
        if current != selection:
            changed.append(name)
    if changed:
        whose = "the rollback put back" if rolled else "the wave set"
        problems.append(
            (
                VerdictCode.SELECTION_MISSING,
                f"EC2NodeClass {', '.join(changed)} no longer carries the amiSelectorTerms {whose}",
            )
        )
    version = None if rolled else wave.target.get("kubernetesVersion")
    if version is not None and world.kubernetes_version != version:
        problems.append(
            (
                VerdictCode.CONTROL_PLANE_VERSION,
                f"the control plane runs {world.kubernetes_version}, not {version}",
            )
        )
    claims = wave_claims(world, wave.pools)
    images, empty = resolved_images(world, wave.node_classes)
    if empty:
        problems.append(
            (VerdictCode.NO_IMAGE, f"EC2NodeClass {', '.join(empty)} resolves to no image")
        )
    behind = unresolved(world, wave.node_classes)
    if behind:
        problems.append(
            (
                VerdictCode.SELECTION_UNRESOLVED,
                f"EC2NodeClass {', '.join(behind)} has not resolved its amiSelectorTerms yet",
            )
        )
    live = [c for c in claims if not c.metadata.deletion_timestamp]
    on = sum(1 for c in live if is_true(c, "Initialized") and (c.status.image_id or "") in images)
    if on < len(claims):
        problems.append(
            (
                VerdictCode.NODES_NOT_ON_TARGET,
                f"{on} of {len(claims)} nodes run the images their classes select",
            )
        )
    elif emptied(world, claims):
        problems.append(
            (VerdictCode.NODES_MISSING, "no node in the wave's NodePools while pods wait for one")
        )
    drifted = sum(1 for c in claims if is_true(c, "Drifted"))
    if drifted:
        problems.append((VerdictCode.NODES_DRIFTED, f"{drifted} node(s) drifted"))
    busy = disrupting(world, claims)
    if busy:
        problems.append((VerdictCode.NODES_DISRUPTING, f"{busy} node(s) being disrupted"))
    code = verdict_code(problems)
    return Observation(
        expected=Expected.PREVIOUS if rolled else Expected.TARGET,
        holds=not problems,
        state=CODE_STATE[code],
        code=code,
        reason="; ".join(reason for _, reason in problems),
        kubernetes_version=world.kubernetes_version,
        images=sorted(images),
        nodes=len(claims),
        on_expected=on,
        drifted=drifted,
        disrupting=busy,
        launch_failures=failures[0],
        registration_failures=failures[1],
        at=rfc3339(world.clock.now()),
    )


def verdict_code(problems: list[tuple[VerdictCode, str]]) -> VerdictCode:
    """The code of an observation that found ``problems`` (in the order :func:`observe` looks):
    the first regression's, else the first problem's (``holds`` when there is none), so a
    regression is never reported as settling."""
    if not problems:
        return VerdictCode.HOLDS
    codes = [code for code, _ in problems]
    return next((c for c in codes if CODE_STATE[c] is VerdictState.REGRESSED), codes[0])


def evaluate(world: AgentRuntime, wave: Wave) -> bool:
    """Move a wave under way to its next phase when it has reached one; True when it moved."""
    if not wave.moving:
        return False
    now = world.clock.now()
    rolling = wave.phase is Phase.ROLLING_BACK
    halted = drift_halted(world, wave.pools)
    _, empty = resolved_images(world, wave.node_classes)
    if halted or empty:
        why = (
            "drift halted on NodePool " + ", ".join(f"{h.node_pool} ({h.message})" for h in halted)
            if halted
            else f"EC2NodeClass {', '.join(empty)} resolves to no image"
        )
        wave.move(Phase.ROLLBACK_FAILED if rolling else Phase.FAILED, now, why)
    elif is_converged(world, wave):
        wave.move(Phase.ROLLED_BACK if rolling else Phase.CONVERGED, now)
    else:
        return False
    wave.final_progress = progress(world, wave)
    return True


def clock_document(speed: float | None) -> Clock:
    """Whose time the agent's documents carry: ``simulated`` (the world is a simulation
    advanced at ``speed`` simulated seconds per real second, when the machine keeps up) or not
    (the wall clock; ``speed`` 1)."""
    return Clock(simulated=speed is not None, speed=float(speed) if speed is not None else 1.0)


def elapsed(world: AgentRuntime, wave: Wave) -> float:
    """Seconds on the cluster's clock from the wave's application to its convergence (once
    converged), to its end (once it stopped moving otherwise), or to now (while under way)."""
    if wave.converged_at is not None and wave.phase is Phase.CONVERGED:
        end = wave.converged_at
    elif not wave.moving and wave.finished_at is not None:
        end = wave.finished_at
    else:
        end = world.clock.now()
    return max((end - wave.applied_at).total_seconds(), 0.0)


def as_document(
    world: AgentRuntime, wave: Wave, clock: Clock, failures: tuple[int, int]
) -> WaveDocument:
    """The wave document (see :meth:`agent.service.AgentService.wave`): ``clock`` says whose
    time it carries, ``failures`` are the wave's launch and registration failures since it was
    applied (:func:`observe`)."""
    kept = None if wave.moving or wave.phase is Phase.FAILED else wave.final_progress
    # built from parts already checked (the target when the wave was applied), so not checked
    # again: a wave rolled back from a record without a target carries the empty one
    return WaveDocument.model_construct(
        id=wave.id,
        phase=wave.phase,
        target=wave.wire_target,
        node_classes=list(wave.node_classes),
        node_pools=list(wave.pools),
        previous={
            name: PreviousClass(ami_selector_terms=before.terms, ami_family=before.ami_family)
            for name, before in wave.before.items()
        },
        kubernetes_version_before=wave.kubernetes_version_before,
        images_before=wave.images_before(),
        target_images=list(wave.target_images),
        applied_at=rfc3339(wave.applied_at),
        converged_at=rfc3339(wave.converged_at) if wave.converged_at else None,
        finished_at=rfc3339(wave.finished_at) if wave.finished_at else None,
        elapsed_seconds=round(elapsed(world, wave), 3),
        reason=wave.reason,
        rollout=wave.request.get("rollout"),
        release=wave.request.get("release"),
        history=[
            PhaseChange(phase=phase, at=rfc3339(at), reason=reason)
            for phase, at, reason in wave.history
        ],
        progress=kept if kept is not None else progress(world, wave),
        observed=observe(world, wave, failures),
        clock=clock,
    )


def watch_waves(log: LifecycleLog, waves: dict[str, Wave]) -> None:
    """Count every NodeClaim end the log sees against the waves under way."""

    def listener(end: NodeClaimEnd) -> None:
        for wave in waves.values():
            wave.count(end)

    log.listeners.append(listener)
