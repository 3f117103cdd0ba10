"""The notifier: reads the audit log after its cursor, turns rows into events
(:mod:`fleet.service.notifications.events`) and delivers them to the Fleets' webhooks
(``spec.notifications``),
in a background thread of the scheduler's process, never in a scheduler tick.

* Only the scheduler holding the ``scheduler`` lease delivers: each pass checks that its holder
  holds it, and a standby's notifier stays idle. A notifier that sees another scheduler hold
  the lease forgets what it knew, so on taking over it resumes from the audit log, where the
  other's deliveries are recorded.
* Each webhook gets its events in order, one delivery at a time; deliveries to different
  webhooks run side by side (a pool of threads), so a webhook that hangs holds up only itself,
  for the timeout of each attempt.
* A failed attempt is retried after 1, 2, 4 ... seconds (:class:`RetryPolicy`) until it is
  delivered or given up; either way one audit row records the outcome
  (``notification.delivered`` / ``notification.failed``: the event type, the webhook, the HTTP
  status, the attempts, the source audit row and the URL's host; never the URL nor the token).
* Those rows are the cursor: a restarted notifier resumes each webhook after the highest
  source recorded for it (:func:`resume_points`), so nothing is sent twice nor lost. A webhook
  with no recorded delivery starts after its fleet's latest apply (the apply that listed it).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from common.secrets import OpenSecrets
from fleet.credentials import CredentialsError, TokenResolver
from fleet.db.errors import DatabaseError, NotFound
from fleet.db.records import AuditRecord
from fleet.db.uow import UnitOfWork
from fleet.domain.json import JSONObject, JSONValue
from fleet.domain.plan import rolled_rings
from fleet.service.context import FleetContext, audit
from fleet.service.notifications.events import (
    CONTENT_TYPE,
    DELIVERED,
    FAILED,
    WEBHOOK,
    Answer,
    AuditRow,
    Event,
    Horizon,
    ResumePoint,
    RetryPolicy,
    RolloutFacts,
    Webhook,
    WebhookSender,
    delivered,
    events_of,
    resume_points,
)

log = logging.getLogger(__name__)
LEASE = "scheduler"
MAPPED = {
    "rollout.transition",
    "rollout.pause",
    "rollout.resume",
    "rollout.abort",
    "rollout.rollback",
    "gate.evaluated",
}
COMMANDS = {"rollout.pause", "rollout.resume", "rollout.abort", "rollout.rollback"}
"""Operators' commands: their events say where the rollout stood (its last transition)."""
PAGE = 500
FACTS_KEPT = 256
"""Rollouts whose facts (release, rings, waves) the notifier keeps in memory."""


def read_token(reference: str, resolver: TokenResolver | None = None) -> str:
    """The bearer token ``secretRef`` points at (``env:NAME``, ``file:PATH``,
    ``secretsmanager:ARN``); raises :class:`CredentialsError` without the token."""
    scheme, _, rest = reference.partition(":")
    if scheme == "env":
        token = os.environ.get(rest, "")
        if not token:
            raise CredentialsError(f"secretRef {reference}: {rest} is not set in this process")
        return token
    if scheme == "file":
        try:
            lines = Path(rest).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise CredentialsError(f"secretRef {reference}: {exc.strerror}") from exc
        if not lines or not lines[0].strip():
            raise CredentialsError(f"secretRef {reference}: empty file")
        return lines[0].strip()
    return (resolver or TokenResolver())(reference, "notifications")


@dataclass
class _Pending:
    event: Event
    attempts: int = 0
    first_at: float | None = None
    next_at: float = 0.0


@dataclass
class _Channel:
    webhook: Webhook
    seen: int
    resume: ResumePoint | None
    queue: deque[_Pending] = field(default_factory=deque)
    busy: Future[Answer] | None = None


@dataclass
class Tally:
    """Deliveries since the notifier started."""

    delivered: int = 0
    failed: int = 0


class Notifier:
    """See the module docstring. ``inline`` runs each POST in :meth:`pump`'s thread (tests);
    ``secrets`` makes the reader of ``secretsmanager:`` secret references on first use."""

    def __init__(
        self,
        ctx: FleetContext,
        sender: WebhookSender,
        *,
        holder: str,
        policy: RetryPolicy | None = None,
        timeout: float = 5.0,
        poll: float = 1.0,
        settle: float = 5.0,
        public_url: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        inline: bool = False,
        workers: int = 4,
        secrets: OpenSecrets | None = None,
    ) -> None:
        self.ctx, self.sender, self.holder = ctx, sender, holder
        self.policy = policy or RetryPolicy()
        self.timeout, self.poll, self.public_url = timeout, poll, public_url
        self.clock, self.inline = clock, inline
        self.horizon = Horizon(settle)
        self.tally = Tally()
        self._channels: dict[str, _Channel] = {}
        self._facts: dict[str, RolloutFacts] = {}
        self._pool = None if inline else ThreadPoolExecutor(workers, "driftwave-notify")
        self._tokens = TokenResolver(open_secrets=secrets)
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._scanned = 0
        self.leader = False

    # -- the pass -----------------------------------------------------------------------
    def pump(self) -> None:
        """One pass: check the lease, collect finished deliveries, read new audit rows, start
        the deliveries that are due."""
        with self._lock:
            holder = self._holder()
            if holder != self.holder:
                if holder is not None:  # another scheduler delivers now: forget, re-read later
                    self._channels.clear()
                self.leader = False
                return
            self.leader = True
            self._collect()
            self._refresh()
            self._scan()
            while self._dispatch() and self._pool is None:
                self._collect()  # inline: each webhook's next event goes at once

    def _holder(self) -> str | None:
        """Who holds the scheduler lease now (None: nobody; a lapse without a new holder
        keeps what this notifier knows, and it delivers nothing until it holds the lease)."""
        with self.ctx.reading() as uow:
            return uow.leases.holder(LEASE, self.ctx.now())

    def _refresh(self) -> None:
        """Follow the stored fleets' webhooks: add new ones (resuming from the audit log),
        update changed ones, drop removed ones."""
        hooks: dict[str, Webhook] = {}
        with self.ctx.reading() as uow:
            for fleet in uow.fleets.list():
                for entry in _notifications(fleet.spec):
                    events = entry.get("events")
                    secret = entry.get("secretRef")
                    hook = Webhook(
                        fleet.name,
                        str(entry["name"]),
                        str(entry["url"]),
                        tuple(str(e) for e in events) if isinstance(events, list) else None,
                        str(secret) if secret is not None else None,
                    )
                    hooks[hook.key] = hook
            for key in [k for k in self._channels if k not in hooks]:
                del self._channels[key]
            for key, hook in hooks.items():
                if key in self._channels:
                    self._channels[key].webhook = hook
                    continue
                rows = uow.audit.list(object_type=WEBHOOK, object_id=key)
                resume = resume_points(_row(r) for r in rows).get(key)
                if resume is not None:
                    seen = resume.source - 1
                else:
                    applies = uow.audit.list(object_type="fleet", object_id=hook.fleet)
                    seen = max((a.id for a in applies if a.action == "fleet.apply"), default=0)
                self._channels[key] = _Channel(hook, seen, resume)

    def _scan(self, pages: int = 20) -> None:
        """Read the audit rows after the channels' positions and queue their events."""
        for _ in range(pages):
            if not self._channels:
                return
            position = min(c.seen for c in self._channels.values())
            with self.ctx.reading() as uow:
                rows = uow.audit.list(after_id=position, limit=PAGE)
                ready = self.horizon.ready(position, [r.id for r in rows], self.clock())
                taken = rows[:ready]
                for entry in taken:
                    if entry.action in MAPPED and entry.rollout_id:
                        self._queue(uow, _row(entry))
            if taken:
                last = taken[-1].id
                self._scanned = max(self._scanned, last)
                for channel in self._channels.values():
                    channel.seen = max(channel.seen, last)
            if ready < PAGE:
                return

    def _queue(self, uow: UnitOfWork, row: AuditRow) -> None:
        channels = [c for c in self._channels.values() if c.seen < row.id]
        if not channels:
            return
        wave = row.object_id if row.action == "gate.evaluated" else None
        try:
            facts = self._rollout(uow, str(row.rollout_id), wave)
        except NotFound:  # a row naming no stored rollout tells no webhook anything
            log.warning("notifier: audit row %d names unknown rollout %s", row.id, row.rollout_id)
            return
        channels = [c for c in channels if c.webhook.fleet == facts.fleet]
        if not channels:
            return
        checks = None
        if row.action == "gate.evaluated" and not (row.after or {}).get("passed"):
            evaluations = uow.gates.list(row.object_id)
            at_row = [g for g in evaluations if g.evaluated_at == row.at] or evaluations[-1:]
            checks = list(at_row[-1].checks) if at_row else []
        position = _position(uow, facts.id, row.id) if row.action in COMMANDS else None
        link = (
            f"{self.public_url.rstrip('/')}/ui/#/rollouts/{facts.id}" if self.public_url else None
        )
        for event in events_of(row, facts, checks=checks, link=link, position=position):
            for channel in channels:
                resume = channel.resume
                if channel.webhook.wants(event) and (resume is None or resume.wants(event)):
                    channel.queue.append(_Pending(event))

    def _rollout(self, uow: UnitOfWork, rid: str, wave: str | None) -> RolloutFacts:
        facts = self._facts.get(rid)
        if facts is None or (wave is not None and wave not in facts.waves):
            rollout = uow.rollouts.get(rid)
            rings = rolled_rings(rollout.plan)
            waves = {w.id: (str(w.ring), int(w.index)) for w in uow.waves.list(rid)}
            facts = RolloutFacts(rid, rollout.release.name, rollout.fleet.name, rings, waves)
            if len(self._facts) >= FACTS_KEPT:
                self._facts.pop(next(iter(self._facts)))
            self._facts[rid] = facts
        return facts

    # -- deliveries ---------------------------------------------------------------------
    def _dispatch(self) -> int:
        now, started = self.clock(), 0
        for channel in self._channels.values():
            if channel.busy is not None or not channel.queue:
                continue
            pending = channel.queue[0]
            if pending.next_at > now:
                continue
            pending.attempts += 1
            if pending.first_at is None:
                pending.first_at = now
            hook, event = channel.webhook, pending.event
            started += 1
            if self._pool is None:
                done: Future[Answer] = Future()
                done.set_result(self._attempt(hook, event))
                channel.busy = done
            else:
                channel.busy = self._pool.submit(self._attempt, hook, event)
                channel.busy.add_done_callback(lambda _: self._wake.set())
        return started

    def _attempt(self, hook: Webhook, event: Event) -> Answer:
        headers = {"Content-Type": CONTENT_TYPE, "User-Agent": "driftwave-notifier"}
        try:
            if hook.secret_ref:
                headers["Authorization"] = "Bearer " + read_token(hook.secret_ref, self._tokens)
            body = event.body()
            return self.sender.post(hook.url, body, headers, self.timeout)
        except CredentialsError as exc:
            return Answer(None, str(exc))
        except Exception as exc:  # a sender's bug must not end the notifier
            return Answer(None, f"{type(exc).__name__} while posting")

    def _collect(self) -> None:
        for channel in self._channels.values():
            if channel.busy is None or not channel.busy.done():
                continue
            answer = channel.busy.result()
            channel.busy = None
            pending = channel.queue[0]
            hook, event = channel.webhook, pending.event
            age = self.clock() - (pending.first_at or self.clock())
            ok = delivered(answer.status)
            if not ok and not self.policy.give_up(pending.attempts, age, answer.status):
                pending.next_at = self.clock() + self.policy.delay(pending.attempts)
                log.warning(
                    "notification %s to %s (%s): %s; attempt %d, next in %gs",
                    event.type,
                    hook.key,
                    hook.host,
                    answer.error or f"HTTP {answer.status}",
                    pending.attempts,
                    self.policy.delay(pending.attempts),
                )
                continue
            self._record(hook, pending, answer, ok)
            channel.queue.popleft()

    def _record(self, hook: Webhook, pending: _Pending, answer: Answer, ok: bool) -> None:
        event = pending.event
        after: JSONObject = {
            "event": "io.driftwave." + event.type,
            "eventId": event.id,
            "target": hook.name,
            "host": hook.host,
            "status": answer.status,
            "attempts": pending.attempts,
            "source": event.source_id,
        }
        if not ok:
            after["error"] = answer.error or f"HTTP {answer.status}"
            log.warning("notification %s to %s given up: %s", event.type, hook.key, after["error"])
        now = self.ctx.now()
        with self.ctx.writing() as uow:
            action = DELIVERED if ok else FAILED
            obj = (WEBHOOK, hook.key)
            audit(uow, now, "notifier", action, obj, rollout_id=event.rollout, after=after)
            uow.commit()
        if ok:
            self.tally.delivered += 1
        else:
            self.tally.failed += 1

    # -- the thread ---------------------------------------------------------------------
    def busy(self) -> bool:
        """Whether deliveries are queued or under way, or audit rows are left to read."""
        with self._lock:
            if any(c.busy is not None or c.queue for c in self._channels.values()):
                return True
            with self.ctx.reading() as uow:
                last = uow.audit.list(after_id=self._scanned, limit=1)
            return bool(self._channels) and bool(last)

    def start(self) -> Notifier:
        """Run :meth:`pump` in a daemon thread until :meth:`stop`."""
        self._thread = threading.Thread(target=self._run, name="driftwave-notifier", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.pump()
            except DatabaseError as exc:
                log.warning("notifier: %s; trying again", exc)
            except Exception:
                log.exception("notifier pass failed; trying again")
            self._wake.wait(self._next_wait())
            self._wake.clear()

    def _next_wait(self) -> float:
        with self._lock:
            due = [c.queue[0].next_at for c in self._channels.values() if c.queue and not c.busy]
        wait = min([self.poll, *(d - self.clock() for d in due)])
        return max(0.01, wait)

    def stop(self, wait: float = 5.0) -> None:
        """Stop the thread (deliveries under way finish within their timeout, unrecorded: a
        restarted notifier sends them again)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(wait)
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        close = getattr(self.sender, "close", None)
        if callable(close):
            close()


def _position(uow: UnitOfWork, rid: str, before: int) -> tuple[int, int] | None:
    """The (ring, wave) indexes of the rollout's last transition before audit row ``before``."""
    rows = uow.audit.list(rollout_id=rid, object_type="rollout", object_id=rid)
    moves = [r for r in rows if r.action == "rollout.transition" and r.id < before]
    after = (moves[-1].after or {}) if moves else {}
    ring, wave = after.get("ring"), after.get("wave")
    return (ring, wave) if isinstance(ring, int) and isinstance(wave, int) else None


def _row(entry: AuditRecord) -> AuditRow:
    return AuditRow(
        entry.id,
        entry.at,
        entry.actor,
        entry.action,
        entry.object_type,
        entry.object_id,
        entry.rollout_id,
        entry.before,
        entry.after,
        entry.reason,
    )


def _notifications(manifest: JSONObject) -> list[Mapping[str, JSONValue]]:
    """The webhooks (``spec.notifications[]``) of a stored Fleet manifest."""
    spec = manifest.get("spec")
    listed = spec.get("notifications") if isinstance(spec, Mapping) else None
    if not isinstance(listed, list):
        return []
    return [entry for entry in listed if isinstance(entry, Mapping)]
