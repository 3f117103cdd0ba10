"""``AgentService``: the agent's API, transport-free, over a running World.

The HTTP server (:mod:`agent.server`) and the fleet's in-process gateway call the same object.
One re-entrant lock guards every access to the world: the service's methods and the thread that
advances the cluster (:class:`agent.sim.realtime.RealTimeSimulation`,
:class:`agent.live.loop.AgentLoop`) take it, so a request always sees the cluster between two
controller passes. A loop has the service :meth:`~AgentService.publish` after every step: status
and wave reads then answer from that snapshot without the lock (:mod:`agent.service.snapshot`),
never waiting for a step; without a loop (a world its caller steps) they compute fresh.

Waves are kept in the cluster itself, on the EC2NodeClasses they change
(:mod:`agent.service.wavestore`), and in memory; a restarted or failed-over agent reads them
back, so it knows every wave it (or its predecessor) applied (see :mod:`agent.service.waves`
for the phases). Every change the agent makes is a span: ``agent.wave.apply``,
``agent.wave.rollback`` and, for each EC2NodeClass patched, ``agent.nodeclass.patch``, with the
wave id, the class and the images as attributes.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode, TracerProvider

from agent.api.ec2nodeclass import EC2NodeClass
from agent.service import wavestore
from agent.service.applying import check_later, check_overlap, new_wave
from agent.service.errors import WaveConflict, WaveNotFound
from agent.service.planning import plan
from agent.service.requests import canonical, check_wave_id, parse_request
from agent.service.rollback import abandon_unready, recorded_wave, restore_plan
from agent.service.runtime import AgentRuntime
from agent.service.snapshot import Published, Snapshot, readable, snapshot
from agent.service.status import LifecycleLog, cluster_status
from agent.service.targets import (
    Resolution,
    covers_every_class,
    resolve_target,
    select_classes,
)
from agent.service.waves import (
    Wave,
    as_document,
    clock_document,
    evaluate,
    watch_waves,
)
from common.wire.phases import Phase
from common.wire.plan import PlanDocument
from common.wire.status import EventsDocument, StatusDocument
from common.wire.waves import RollbackRequest, WaveDocument, WaveRequest

TRACER = "driftwave.agent"


class AgentService:
    """The agent's operations on one cluster (see the module docstring).

    ``name`` is the cluster's name in status documents; ``lock`` may be shared with a
    :class:`~agent.sim.realtime.RealTimeSimulation` (one is made otherwise: :attr:`lock`);
    ``tracer_provider`` receives the spans of the agent's own actions (none are recorded
    without one); ``speed`` says that the world is a simulation advanced at that many simulated
    seconds per real second (:class:`~agent.sim.realtime.RealTimeSimulation`), None that its
    clock is the wall clock (a live agent, or a world whose clock its caller shares): the
    ``clock`` of the status and wave documents (:func:`agent.service.waves.clock_document`).
    """

    def __init__(
        self,
        world: AgentRuntime,
        *,
        name: str = "cluster",
        lock: threading.RLock | None = None,
        tracer_provider: TracerProvider | None = None,
        speed: float | None = None,
    ) -> None:
        if speed is not None and not speed > 0:
            raise ValueError(
                f"speed must be above 0 (simulated seconds per real second), not {speed}"
            )
        self.world = world
        self.name = name
        self.speed = speed
        self.lock = lock if lock is not None else threading.RLock()
        provider = tracer_provider if tracer_provider is not None else trace.NoOpTracerProvider()
        self._tracer = provider.get_tracer(TRACER)
        self._waves: dict[str, Wave] = {}
        self._records_seen: dict[str, str | None] | None = None
        self._published = Published()
        with self.lock:
            self._log = LifecycleLog(world.cluster, world.clock)
            watch_waves(self._log, self._waves)
            self._sync()

    # Reading

    def status(self) -> StatusDocument:
        """The cluster now: ``cluster``, ``kubernetesVersion``, ``time`` (RFC 3339 UTC, the
        agent's clock), ``nodes`` (registered NodeClaims), ``nodesByImage`` {amiId: count},
        ``drifted``, ``disrupting`` (NodeClaims being deleted or in a disruption under way),
        ``pendingPods``, ``launchFailures`` and ``registrationFailures`` (NodeClaims deleted
        before launching, or launched but deleted before initializing, in the last 30 minutes
        of agent time: :mod:`agent.service.status`), ``driftHalted`` [{nodePool, reason,
        message}], ``nodeClasses`` [{name, amiSelectorTerms, images}], ``activeWave`` (the id of
        the latest wave under way, or None), ``costPerHour`` (USD) and ``clock`` {simulated,
        speed} (whose time ``time`` is). Once a loop publishes, the last published document,
        without waiting for the lock (its ``time`` says when it was taken)."""
        published = self._published.current
        if published is not None:
            return published.status
        with self.lock:
            self._sync()
            self.refresh()
            return self._status()

    def plan(self, request: Any = None) -> PlanDocument:
        """The drift preview, and with a ``target`` what applying it would do (per selected
        EC2NodeClass the current and target terms and images, nodes that would drift per
        NodePool, the waves and ETA the Drifted budgets allow): :mod:`agent.service.planning`.
        Changes nothing; raises InvalidRequest."""
        with self.lock:
            return plan(self.world, request)

    def events(self, limit: int = 200) -> EventsDocument:
        """``events``: the agent's last ``limit`` events, oldest first (launches, registrations,
        drift, disruptions with their reasons, evictions, terminations, halts)."""
        with self.lock:
            return EventsDocument(cluster=self.name, events=self.world.recent_events(limit))

    def wave(self, wave_id: str) -> WaveDocument:
        """The wave document: ``id``, ``phase``, ``target``, ``nodeClasses``, ``previous``
        {class: {amiSelectorTerms, amiFamily}}, ``kubernetesVersionBefore``, ``imagesBefore``,
        ``targetImages``, ``appliedAt``, ``convergedAt``, ``finishedAt``, ``reason``,
        ``history`` and ``progress`` {nodes, onTarget, drifted, disrupting, pendingPods,
        launchFailures, registrationFailures, driftHalted, nodesReplaced}, ``observed`` (the
        cluster now), ``clock`` {simulated, speed} and ``elapsedSeconds`` (the wave's time on
        the cluster's clock). Once a loop publishes, a wave under way or recently finished is
        answered from the last published snapshot, without waiting for the lock. Raises
        WaveNotFound."""
        published = self._published.current
        document = published.wave(wave_id) if published is not None else None
        if document is not None:
            return document
        with self.lock:
            found = self._get(wave_id)
            self.refresh()
            return self._document(found)

    def refresh(self) -> None:
        """Move the waves under way to the phase the cluster has reached (the real-time simulation
        calls this after every step; reads call it too). A wave rolling back first has the
        never-initialized nodes on the images it leaves deleted
        (:func:`~agent.service.rollback.abandon_unready`)."""
        with self.lock:
            for wave in self._waves.values():
                if abandon_unready(self.world, wave):
                    self.world.settle()
                if wave.moving and evaluate(self.world, wave):
                    wavestore.save(self.world.cluster, wave)

    @property
    def published(self) -> Snapshot | None:
        """The snapshot status and wave reads answer from, or None (none published yet)."""
        return self._published.current

    def publish(self) -> None:
        """Publish the snapshot status and wave reads answer from (:mod:`agent.service.snapshot`):
        the loop that advances the cluster calls this after each step (after :meth:`refresh`);
        from then on the service's changes publish too. Takes the lock."""
        with self.lock:
            self._sync()
            now = self.world.clock.now()
            waves = {w.id: self._document(w) for w in readable(self._waves.values(), now)}
            self._published.publish(snapshot(now, self._status(), waves))

    def _changed(self, wave: Wave) -> WaveDocument:
        """After a change (the lock held): publish again if a loop publishes; the wave's
        document as the change left it (read-your-writes)."""
        if self._published.current is not None:
            self.publish()
            published = self._published.current.wave(wave.id)
            if published is not None:
                return published
        return self._document(wave)

    # Changing

    def apply_wave(self, wave_id: str, request: Any) -> tuple[bool, WaveDocument]:
        """Apply a wave; return (created, wave document).

        ``request``: ``{"target": {"amiSelectorTerms": [...]} | {"kubernetesVersion": "1.31"},
        "nodeClasses": {"names": [...], "matchLabels": {...}}`` (optional: every EC2NodeClass),
        ``"rollout"``, ``"release"``}. Each selected class's ``amiSelectorTerms`` is patched
        (through the Cluster port, as ``kubectl apply`` would), or the control plane moves to
        the version; drift then replaces the nodes within the budgets. A target that resolves
        to no image changes nothing and the wave is ``failed``.

        Idempotent by id: the same id and request return the wave (created False) and apply
        nothing again. Raises InvalidRequest (naming each field), WaveConflict (same id with
        another request, or another wave under way on one of the classes)."""
        doing = f"applying wave {wave_id[:80]!r}"
        check_wave_id(wave_id, doing)
        parsed = parse_request(WaveRequest, request, doing)
        wanted = canonical(parsed)
        with self.lock:
            self._sync()
            existing = self._waves.get(wave_id)
            if existing is not None:
                if existing.request != wanted:
                    raise WaveConflict(
                        f"wave {wave_id} already exists with a different request; "
                        "use a new wave id for a new change",
                        wave_id,
                    )
                self.refresh()
                return False, self._document(existing)
            names = select_classes(self.world, parsed.node_classes, doing)
            if parsed.target.kubernetes_version is not None:
                covers_every_class(self.world, names, doing)
            check_overlap(self._waves, wave_id, names)
            resolution = resolve_target(self.world, parsed.target, names, doing)
            with self._span("agent.wave.apply", wave_id, names) as span:
                wave = new_wave(self.world, wave_id, wanted, names, resolution)
                span.set_attribute("driftwave.images.before", wave.images_before())
                span.set_attribute("driftwave.images.target", wave.target_images)
                failure = resolution.failure()
                if failure is not None:
                    wave.move(Phase.FAILED, self.world.clock.now(), failure)
                    span.set_status(Status(StatusCode.ERROR, failure))
                else:
                    self._change(wave, parsed, resolution)
                wavestore.save(self.world.cluster, wave)
                self._waves[wave_id] = wave
                self.world.settle()
                self.refresh()
                span.set_attribute("driftwave.wave.phase", wave.phase)
            return True, self._changed(wave)

    def rollback_wave(self, wave_id: str, request: Any = None) -> WaveDocument:
        """Roll a wave back; return the wave document.

        Each class gets its previous ``amiSelectorTerms`` (and ``amiFamily``) back. A
        Kubernetes-version wave cannot move the control plane back (EKS upgrades only): each
        alias-selected class is pinned to the image ids its nodes ran before instead, and
        ``reason`` says so. The wave is ``rolling-back`` until its nodes converge on the
        previous images (``rolled-back``) or drift halts (``rollback-failed``).

        ``request`` (optional, :class:`~common.wire.waves.RollbackRequest`): what the
        caller recorded of the wave when it was applied. An agent with no record of the wave
        (its cluster lost it) rolls back from it: each named class gets the recorded selection
        back; a class that already carries it is left alone, so a wave that never reached the
        cluster is "rolled back" only once the cluster shows the previous selection and images.

        Idempotent: a wave already rolling back or rolled back is returned as it is; one whose
        rollback failed is tried again (its classes are put back again). Raises
        InvalidRequest, WaveNotFound (unknown, and no request to restore from), and
        WaveConflict when a later wave on one of its classes is not rolled back (that one goes
        first)."""
        doing = f"rolling back wave {wave_id[:80]!r}"
        check_wave_id(wave_id, doing)
        recorded = parse_request(RollbackRequest, request, doing) if request else None
        with self.lock:
            self._sync()
            self.refresh()
            if wave_id not in self._waves and recorded is not None:
                self._waves[wave_id] = recorded_wave(self.world, wave_id, recorded, doing)
            wave = self._get(wave_id)
            if wave.phase in ("rolling-back", "rolled-back"):
                return self._document(wave)
            check_later(self._waves, wave)
            with self._span("agent.wave.rollback", wave_id, wave.node_classes) as span:
                span.set_attribute("driftwave.images.before", wave.target_images)
                span.set_attribute("driftwave.images.target", wave.images_before())
                reason, restored = restore_plan(self.world, wave)
                wave.move(Phase.ROLLING_BACK, self.world.clock.now(), reason)
                for changed, images in restored:
                    self._patch(wave, changed, images)
                wavestore.save(self.world.cluster, wave)
                self.world.record("WaveRollingBack", f"wave/{wave.id}", reason, {})
                self.world.settle()
                self.refresh()
                span.set_attribute("driftwave.wave.phase", wave.phase)
            return self._changed(wave)

    # Helpers

    def _sync(self) -> None:
        """Know every wave recorded in the cluster (a predecessor's, or ours before a restart);
        the memory wins for a wave it knows. The records are read again only when an
        annotation changed since the last look (status reads call this on every request)."""
        classes = self.world.cluster.list(EC2NodeClass)
        seen = {c.name: c.metadata.annotations.get(wavestore.ANNOTATION) for c in classes}
        if seen == self._records_seen:
            return
        self._records_seen = seen
        for wave_id, wave in wavestore.load(classes).items():
            self._waves.setdefault(wave_id, wave)

    def _status(self) -> StatusDocument:
        active = [w.id for w in self._waves.values() if w.moving]
        return cluster_status(
            self.world,
            self.name,
            self._log,
            active[-1] if active else None,
            clock_document(self.speed),
        )

    def _document(self, wave: Wave) -> WaveDocument:
        """The wave document, its observation with the failures in the wave's NodePools since
        it was applied (live: after convergence too)."""
        failures = self._log.failures(wave.applied_at, wave.pools)
        return as_document(self.world, wave, clock_document(self.speed), failures)

    def _get(self, wave_id: str) -> Wave:
        if wave_id not in self._waves:
            self._sync()
        found = self._waves.get(wave_id)
        if found is None:
            raise WaveNotFound(wave_id)
        return found

    @contextmanager
    def _span(self, name: str, wave_id: str, classes: list[str]) -> Iterator[Span]:
        attributes = {
            "driftwave.cluster": self.name,
            "driftwave.wave.id": wave_id,
            "driftwave.nodeclasses": list(classes),
        }
        with self._tracer.start_as_current_span(name, attributes=attributes) as span:
            yield span

    def _change(self, wave: Wave, parsed: WaveRequest, resolution: Resolution) -> None:
        version = parsed.target.kubernetes_version
        if version is not None:
            before = self.world.kubernetes_version
            self.world.upgrade_control_plane(version)
            upgraded = f"control plane {before} → {version}"
            self.world.record("KubernetesUpgraded", "cluster", upgraded, {"wave": wave.id})
            return
        for changed in resolution.classes.values():
            self._patch(wave, changed, resolution.image_ids())
        self.world.record(
            "WaveApplied", f"wave/{wave.id}", "applied", {"classes": wave.node_classes}
        )

    def _patch(self, wave: Wave, changed: EC2NodeClass, target: list[str]) -> None:
        terms = [t.to_manifest() for t in changed.spec.ami_selector_terms]
        attributes = {
            "driftwave.wave.id": wave.id,
            "driftwave.nodeclass": changed.name,
            "driftwave.ami_selector_terms": json.dumps(terms, sort_keys=True),
            "driftwave.images.before": wave.before[changed.name].images,
            "driftwave.images.target": target,
        }
        with self._tracer.start_as_current_span("agent.nodeclass.patch", attributes=attributes):
            # the wave's record goes in the same update as the change (agent.service.wavestore)
            self.world.cluster.update(wavestore.with_record(changed, wave))
            self.world.record(
                "NodeClassPatched",
                f"ec2nodeclass/{changed.name}",
                f"wave {wave.id}: amiSelectorTerms {json.dumps(terms)}",
                {"wave": wave.id},
            )
