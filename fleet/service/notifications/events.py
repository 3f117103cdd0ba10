"""Notifications, the pure part: audit rows mapped to CloudEvents, the retry schedule, and where a
restarted notifier resumes.

The audit log is the outbox. Every change a webhook hears of is already an audit row written in
the transaction that made it (the scheduler's transitions and gate verdicts, the operators'
commands), so notifying needs nothing in those transactions: :func:`events_of` turns one row
into the events it means, each with an id derived from the row's id (a retry, or a notifier
restarted, sends the same id). Each delivery's outcome is itself an audit row
(``notification.delivered`` / ``notification.failed``, ``after.source`` naming the row the event
came from); a webhook's events are delivered in order, so the highest source recorded for a
webhook is where it resumes (:func:`resume_points`).

Events are CloudEvents 1.0 in structured mode (:meth:`Event.envelope`), with a top-level,
Slack-compatible ``text``: one readable line. :class:`WebhookSender` is the port the notifier
(:mod:`fleet.service.notifications.notifier`) posts through; :mod:`fleet.notify_http` is its HTTP
adapter.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol
from urllib.parse import urlsplit

from fleet.documents.events import CloudEvent, EventData, FailedCheck
from fleet.domain.fleet import EVENT_PREFIX
from fleet.domain.json import JSONValue

CONTENT_TYPE = "application/cloudevents+json"
DELIVERED = "notification.delivered"
FAILED = "notification.failed"
OUTCOMES = (DELIVERED, FAILED)
WEBHOOK = "webhook"
"""The audit ``object_type`` of a delivery outcome (its ``object_id`` is ``FLEET/NAME``)."""
FINISHED = {"succeeded", "halted", "rolled-back", "rollback-failed"}
"""Terminal states the scheduler reaches (``aborted`` is the operator's: rollout.aborted)."""
COMMON = ("rollout", "release", "fleet", "state", "reason", "actor")
"""What every event's ``data`` carries, never null."""
CARRIES: Mapping[str, tuple[str, ...]] = {
    "rollout.started": ("ring", "wave"),
    "rollout.paused": ("ring", "wave"),
    "rollout.resumed": ("ring", "wave"),
    "rollout.aborted": ("ring", "wave"),
    "rollout.finished": ("ring", "wave"),
    "ring.awaiting-approval": ("ring", "wave"),
    "wave.gate-passed": ("ring", "wave", "waveId", "checks", "failedClusters"),
    "wave.gate-failed": ("ring", "wave", "waveId", "checks", "failedClusters"),
    "rollback.started": ("ring", "wave"),
    "rollback.finished": ("ring", "wave"),
    "rollback.failed": ("ring", "wave"),
}
"""Per event type, what its ``data`` carries besides :data:`COMMON`, never null; the one
exception: an operator's command on a rollout whose first wave has not started yet (planned,
queued) is about no ring nor wave, and says so with nulls. ``rollback.started`` asked for by
``rollout rollback`` adds ``clusters`` (how many roll back)."""
Where = tuple[str | None, int | None]
"""The ring an event is about and the wave's place in it, from 1 (nulls: none yet)."""
NEXT = {
    "rolling-back": "rolling the wave back",
    "halted": "halted (onFailure: halt); nothing is rolled back",
}
"""What a failed gate leads to, as its event's text says it."""


@dataclass(frozen=True)
class AuditRow:
    """The fields of an audit row the mapping reads."""

    id: int
    at: datetime
    actor: str
    action: str
    object_type: str
    object_id: str
    rollout_id: str | None = None
    before: Mapping[str, JSONValue] | None = None
    after: Mapping[str, JSONValue] | None = None
    reason: str | None = None
    """Why the change was made (rows written before audit rows had a reason keep it in
    ``after["reason"]``)."""


@dataclass(frozen=True)
class RolloutFacts:
    """What an event says about its rollout beyond the audit row."""

    id: str
    release: str
    fleet: str
    rings: tuple[str, ...] = ()
    """The rings rolled, in ring-index order."""
    waves: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    """Wave id -> (ring, index within the ring, from 0)."""

    def ring(self, index: object) -> str | None:
        """The name of ring ``index`` (None when unknown)."""
        if isinstance(index, int) and 0 <= index < len(self.rings):
            return self.rings[index]
        return None


@dataclass(frozen=True)
class Event:
    """One CloudEvent about a rollout (``type`` without the ``io.driftwave.`` prefix)."""

    type: str
    source_id: int
    fleet: str
    rollout: str
    time: datetime
    data: EventData
    text: str

    @property
    def id(self) -> str:
        """Stable per event: the source audit row's id and the type (a row may mean two)."""
        return f"driftwave-audit-{self.source_id}-{self.type}"

    def envelope(self) -> CloudEvent:
        """The structured-mode CloudEvent with its ``text`` line."""
        return CloudEvent(
            specversion="1.0",
            id=self.id,
            source=f"/driftwave/fleets/{self.fleet}",
            type=EVENT_PREFIX + self.type,
            time=rfc3339(self.time),
            subject=self.rollout,
            datacontenttype="application/json",
            data=self.data,
            text=self.text,
        )

    def body(self) -> bytes:
        """The envelope as posted: its JSON, the fields the event carries (UTF-8)."""
        sent = self.envelope().model_dump(mode="json", exclude_unset=True)
        return json.dumps(sent).encode("utf-8")


def rfc3339(at: datetime) -> str:
    """``at`` in UTC as RFC 3339 with a ``Z``."""
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _number(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if value is None:
        return "n/a"
    return str(value) if isinstance(value, int | float | str) else json.dumps(value)


def failing_checks(checks: Iterable[Mapping[str, object]]) -> list[FailedCheck]:
    """The checks of a gate evaluation that failed (not pending), as events list them."""
    return [
        FailedCheck.model_validate(
            {
                "name": c.get("name"),
                "observed": c.get("observed"),
                "threshold": c.get("threshold"),
                "message": c.get("message", ""),
            }
        )
        for c in checks
        if c.get("passed") is False and not c.get("pending")
    ]


def _checks_line(failing: list[FailedCheck]) -> str:
    return "; ".join(
        f"{c.name} {_number(c.observed)} (threshold {_number(c.threshold)})" for c in failing
    )


def _where(ring: str | None, wave: int | None) -> str:
    if ring is None:
        return ""
    return f" in {ring}" + (f" wave {wave}" if wave is not None else "")


def events_of(
    row: AuditRow,
    facts: RolloutFacts,
    *,
    checks: Sequence[Mapping[str, object]] | None = None,
    link: str | None = None,
    position: tuple[int, int] | None = None,
) -> list[Event]:
    """The events audit ``row`` of rollout ``facts`` means (often none).

    ``checks``: the gate evaluation's checks, for a ``gate.evaluated`` row; ``link``: the
    rollout's page on the dashboard, when the API's public URL is known; ``position``: the
    (ring, wave) indexes the rollout stood at when an operator's command was given (from the
    last transition before it)."""
    after, before = dict(row.after or {}), dict(row.before or {})
    head = f"rollout {facts.id} of release {facts.release}"
    state = after.get("state") or after.get("rolloutState")
    said = row.reason or after.get("reason")
    reason = str(said) if said else None
    out: list[Event] = []

    def add(
        kind: str,
        text: str,
        where: Where = (None, None),
        *,
        wave_id: str | None = None,
        checks: list[FailedCheck] | None = None,
        failed_clusters: list[str] | None = None,
        clusters: int | None = None,
    ) -> None:
        data = EventData(
            rollout=facts.id,
            release=facts.release,
            fleet=facts.fleet,
            ring=where[0],
            wave=where[1],
            state=str(state) if state is not None else None,
            reason=reason,
            actor=row.actor,
        )
        # only what the event carries is set: the rest stays absent from its JSON
        if link:
            data.link = link
        if wave_id is not None:
            data.wave_id = wave_id
        if checks is not None:
            data.checks = checks
        if failed_clusters is not None:
            data.failed_clusters = failed_clusters
        if clusters is not None:
            data.clusters = clusters
        out.append(Event(kind, row.id, facts.fleet, facts.id, row.at, data, text))

    if row.action == "rollout.transition":
        ring = facts.ring(after.get("ring"))
        index = after.get("wave")
        wave = index + 1 if isinstance(index, int) and not isinstance(index, bool) else None
        where, now = (ring, wave), str(after.get("state"))
        why = reason or ""
        if before.get("state") == "planned":
            add("rollout.started", f":rocket: {head} started{_where(ring, None)}", where)
        if now == "awaiting-approval":
            add(
                "ring.awaiting-approval",
                f":raised_hand: {head} waits for approval of ring {ring} "
                f"(driftwave rollout approve {facts.id} --ring {ring})",
                where,
            )
        elif now == "rolling-back":
            add(
                "rollback.started",
                f":leftwards_arrow_with_hook: {head} rolling back{_where(ring, wave)}: {why}",
                where,
            )
        elif now == "rolled-back":
            add("rollback.finished", f":leftwards_arrow_with_hook: {head} rolled back", where)
        elif now == "rollback-failed":
            add("rollback.failed", f":rotating_light: {head} rollback failed: {why}", where)
        if now in FINISHED:
            icon = ":white_check_mark:" if now == "succeeded" else ":x:"
            add("rollout.finished", f"{icon} {head} {now}{_where(ring, wave)}", where)
    elif row.action in ("rollout.pause", "rollout.resume", "rollout.abort"):
        kind, icon = {
            "rollout.pause": ("rollout.paused", ":double_vertical_bar:"),
            "rollout.resume": ("rollout.resumed", ":arrow_forward:"),
            "rollout.abort": ("rollout.aborted", ":no_entry:"),
        }[row.action]
        text = f"{icon} {head} {kind.split('.')[1]} by {row.actor}"
        reason = reason or f"{kind.split('.')[1]} by {row.actor}"
        add(kind, text, _at(facts, position))
    elif row.action == "rollout.rollback":
        asked = after.get("clusters", 0)
        clusters = asked if isinstance(asked, int) and not isinstance(asked, bool) else 0
        reason = reason or f"rollback requested by {row.actor}"
        add(
            "rollback.started",
            f":leftwards_arrow_with_hook: {head} rolling back "
            f"{clusters} cluster(s), asked by {row.actor}",
            _at(facts, position),
            clusters=clusters,
        )
    elif row.action == "gate.evaluated":
        ring_name, at = facts.waves.get(row.object_id, (None, None))
        wave = at + 1 if at is not None else None
        named = after.get("failedClusters")
        failed = [str(c) for c in named] if isinstance(named, list) else []
        if after.get("passed"):
            add(
                "wave.gate-passed",
                f":large_green_circle: {head}: {ring_name} wave {wave} passed its gate",
                (ring_name, wave),
                wave_id=row.object_id,
                checks=[],
                failed_clusters=failed,
            )
        else:
            failing = failing_checks(checks or [])
            detail = _checks_line(failing) or ", ".join(failed) or "see the gate's checks"
            then = NEXT.get(str(state))
            add(
                "wave.gate-failed",
                f":rotating_light: {head} failed its gate{_where(ring_name, wave)}: {detail}"
                + (f"; {then}" if then else ""),
                (ring_name, wave),
                wave_id=row.object_id,
                checks=failing,
                failed_clusters=failed,
            )
    return out


def _at(facts: RolloutFacts, position: tuple[int, int] | None) -> Where:
    """``ring`` and ``wave`` (from 1) of a position given as indexes (nulls when unknown)."""
    if position is None or facts.ring(position[0]) is None:
        return None, None
    return facts.ring(position[0]), position[1] + 1


@dataclass(frozen=True)
class RetryPolicy:
    """When a failed delivery is tried again: after ``first`` seconds, then twice as long each
    time up to ``cap``; given up after ``max_attempts`` attempts or once ``max_age`` seconds
    have passed since the first, or at once on an answer that will not change (a 4xx other
    than 408 and 429)."""

    first: float = 1.0
    cap: float = 60.0
    max_attempts: int = 8
    max_age: float = 900.0

    def delay(self, attempts: int) -> float:
        """Seconds to wait after the ``attempts``-th failed attempt (1, 2, 4, ... capped)."""
        return float(min(self.cap, self.first * 2 ** max(0, attempts - 1)))

    def give_up(self, attempts: int, age: float, status: int | None) -> bool:
        """Whether a delivery that failed ``attempts`` times, ``age`` seconds after its first
        attempt, with HTTP ``status`` (None: no answer), is given up."""
        if status is not None and not retryable(status):
            return True
        return attempts >= self.max_attempts or age + self.delay(attempts) > self.max_age


def retryable(status: int) -> bool:
    """Whether an HTTP answer may change on a later attempt (5xx, 408, 429)."""
    return status >= 500 or status in (408, 429)


def delivered(status: int | None) -> bool:
    """Whether an HTTP answer means the receiver took the event (2xx)."""
    return status is not None and 200 <= status < 300


@dataclass(frozen=True)
class ResumePoint:
    """Where a webhook resumes: every event of a source row before ``source`` was delivered or
    given up, and of row ``source`` itself, the event types in ``done``."""

    source: int
    done: frozenset[str] = frozenset()

    def wants(self, event: Event) -> bool:
        """Whether ``event`` still has to be delivered to the webhook."""
        if event.source_id != self.source:
            return event.source_id > self.source
        return event.type not in self.done


def resume_points(outcomes: Iterable[AuditRow]) -> dict[str, ResumePoint]:
    """Per webhook (``FLEET/NAME``), where it resumes, from its delivery outcome rows."""
    best: dict[str, tuple[int, set[str]]] = {}
    for row in outcomes:
        if row.action not in OUTCOMES or row.object_type != WEBHOOK:
            continue
        after = row.after or {}
        source = after.get("source")
        if not isinstance(source, int):
            continue
        known = best.get(row.object_id)
        if known is None or source > known[0]:
            best[row.object_id] = (source, {str(after.get("event", ""))})
        elif source == known[0]:
            known[1].add(str(after.get("event", "")))
    return {
        key: ResumePoint(source, frozenset(t.removeprefix(EVENT_PREFIX) for t in types))
        for key, (source, types) in best.items()
    }


@dataclass
class Horizon:
    """Which audit rows are settled enough to act on.

    Audit ids are handed out when a row is inserted but become visible when its transaction
    commits, so on PostgreSQL row 11 may be seen before row 10 commits. Rows are taken in id
    order while their ids follow each other; at a gap the rows beyond wait until the gap has
    stayed open ``settle`` seconds (a transaction that rolled back leaves a gap for ever)."""

    settle: float = 5.0
    opened: dict[int, float] = field(default_factory=dict)

    def ready(self, position: int, ids: list[int], now: float) -> int:
        """How many of ``ids`` (ascending, all after ``position``) may be acted on at ``now``
        (monotonic seconds)."""
        expected = position + 1
        for count, row_id in enumerate(ids):
            if row_id != expected:
                since = self.opened.setdefault(expected, now)
                if now - since < self.settle:
                    return count
            expected = row_id + 1
        for gap in [g for g in self.opened if g < expected]:
            del self.opened[gap]
        return len(ids)


@dataclass(frozen=True)
class Answer:
    """What one POST got: the HTTP status (None: no answer) and, on failure, why in words."""

    status: int | None
    error: str = ""


class WebhookSender(Protocol):
    """Posts one event to a webhook (:class:`fleet.notify_http.HttpWebhookSender`)."""

    def post(self, url: str, body: bytes, headers: Mapping[str, str], timeout: float) -> Answer:
        """POST ``body`` to ``url``; never raises: a failure is an :class:`Answer` with no
        status, whose ``error`` names neither the URL's path nor any header."""
        ...


@dataclass(frozen=True)
class Webhook:
    """One ``spec.notifications[]`` entry of a stored fleet."""

    fleet: str
    name: str
    url: str
    events: tuple[str, ...] | None = None
    secret_ref: str | None = None

    @property
    def key(self) -> str:
        """``FLEET/NAME``: the audit object id of its deliveries."""
        return f"{self.fleet}/{self.name}"

    @property
    def host(self) -> str:
        """The URL's host (and port): all of the URL that is ever logged or audited."""
        return urlsplit(self.url).netloc.rpartition("@")[2]

    def wants(self, event: Event) -> bool:
        """Whether this webhook subscribed to ``event``'s type."""
        return self.events is None or event.type in {
            e.removeprefix("io.driftwave.") for e in self.events
        }
