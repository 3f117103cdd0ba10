"""Contact with the clusters' agents: the fleet knows each cluster from the cluster itself.

The scheduler (only the lease holder) queues contact probes at each tick (:func:`queue_probes`):
at most ``per_tick`` active clusters neither probed nor contacted within the probe interval,
those probed longest ago first, in messages of up to ``batch`` clusters. A worker runs a
message with :class:`ContactProber`: it reads the agent's ``/v1/status`` through the gateway
(short timeout) and records the answer (``last_seen_at``, ``last_status``) or why it failed
(``last_contact_error``); a step reading a cluster's status counts as contact too.

A cluster's health (:func:`health`), read from what was recorded:

* ``unknown``: never attempted;
* ``unreachable``: the last attempt failed (the message is the gateway's error);
* ``stale``: no answer within three probe intervals (probes not running, workers down);
* ``regressed``: the agent answered, and the cluster no longer holds the target its latest
  step was converged or verified on (nodes on another image, or drifted: see
  :mod:`fleet.service.reads.observed`), so a cluster reset or re-created after its gate is flagged
  at
  the next probe;
* ``degraded``: the agent answered and names a problem (drift halted, failed launches or
  registrations in its last 30 minutes);
* ``healthy``: the agent answered and names none.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Protocol

from common.wire.status import StatusDocument
from fleet.documents.clusters import ContactDocument, ContactHealth
from fleet.service.context import FleetContext
from fleet.service.ports import ProbeMessage, StepDispatcher
from fleet.service.reads.observed import ClusterNow, Holding, ago, latest_of
from fleet.service.steps.recorded import status_of

if TYPE_CHECKING:  # the gateway (its HTTP client, TLS) loads with the prober, not with a read
    from fleet.agentport import AgentGateway, AgentTarget

BATCH = 100
"""Clusters per probe message."""
STALE_INTERVALS = 3
"""Probe intervals without an answer after which a cluster's contact is stale."""
DEFAULT_INTERVAL = timedelta(seconds=60)
HEALTHS = ("healthy", "degraded", "regressed", "stale", "unreachable", "unknown")
"""Every health :func:`health` gives a cluster (the module docstring says what each means)."""
log = logging.getLogger(__name__)
_USERINFO = re.compile(r"(\w+://)[^/@\s]+@")


@dataclass(frozen=True)
class ProbePolicy:
    """How often the scheduler probes each cluster (``interval``; zero: never) and at most how
    many clusters per tick, in messages of ``batch`` clusters."""

    interval: timedelta = DEFAULT_INTERVAL
    per_tick: int = 1000
    batch: int = BATCH

    @property
    def enabled(self) -> bool:
        """Whether the scheduler probes at all."""
        return self.interval > timedelta(0) and self.per_tick > 0

    @property
    def stale_after(self) -> timedelta:
        """How long without an answer makes a contact stale (three intervals; with probes off,
        three default intervals)."""
        return STALE_INTERVALS * (self.interval if self.enabled else DEFAULT_INTERVAL)


def queue_probes(
    ctx: FleetContext, dispatcher: StepDispatcher, policy: ProbePolicy, now: datetime
) -> int:
    """Pick the clusters due for a probe, mark them probed and queue their probe messages;
    how many clusters were queued (0 when probes are off or none is due)."""
    if not policy.enabled:
        return 0
    with ctx.reading() as uow:  # most ticks find none due: no write lock taken for them
        ids = uow.clusters.due_for_probe(now - policy.interval, policy.per_tick)
    if not ids:
        return 0
    with ctx.writing() as uow:
        uow.clusters.mark_probed(ids, now)
        uow.commit()
    size = max(1, policy.batch)
    messages = [ProbeMessage(tuple(ids[i : i + size])) for i in range(0, len(ids), size)]
    taken = dispatcher.dispatch_probes(messages)
    if taken < len(messages):
        log.warning("the broker took %d of %d probe message(s)", taken, len(messages))
    return len(ids)


def problems(status: StatusDocument | None) -> list[str]:
    """The problems an agent's status, as the fleet kept it (``last_status``), names (none for
    a healthy cluster)."""
    if status is None:
        return []
    found = [
        f"drift halted on NodePool {halt.node_pool}" + (f" ({halt.reason})" if halt.reason else "")
        for halt in status.drift_halted
    ]
    for count, words in (
        (status.launch_failures, "failed launch(es)"),
        (status.registration_failures, "failed registration(s)"),
    ):
        if count > 0:
            found.append(f"{count} {words} in the last 30 minutes")
    return found


def health(
    *,
    last_seen: datetime | None,
    last_attempt: datetime | None,
    error: str | None,
    status: StatusDocument | None,
    now: datetime,
    stale_after: timedelta,
    latest: ClusterNow | None = None,
) -> tuple[ContactHealth, str]:
    """(health, message) of a cluster from its recorded contact and, in ``latest``, how it
    stands against its latest step (see the module docstring)."""
    if last_attempt is None and last_seen is None:
        return "unknown", "never contacted"
    if error is not None:
        return "unreachable", error
    if last_seen is None or now - last_seen > stale_after:
        since = f"last answer {ago((now - last_seen).total_seconds())}" if last_seen else "none"
        return "stale", (
            f"no answer from the agent for more than {stale_after.total_seconds():.0f} s ({since})"
        )
    if latest is not None and latest.holding is Holding.REGRESSED:
        return "regressed", latest.text(now).removeprefix(f"{Holding.REGRESSED}: ")
    named = problems(status)
    if named:
        return "degraded", "; ".join(named)
    return "healthy", f"agent answered {ago((now - last_seen).total_seconds())}"


def _iso(at: datetime | None) -> str | None:
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z") if at else None


class ContactRecord(Protocol):
    """What the fleet recorded of its contact with a cluster (a cluster row)."""

    @property
    def last_seen_at(self) -> datetime | None:
        """When the agent last answered."""

    @property
    def last_contact_attempt(self) -> datetime | None:
        """When the fleet last tried."""

    @property
    def last_contact_error(self) -> str | None:
        """Why the last attempt failed (None when it did not)."""

    @property
    def last_status(self) -> StatusDocument | None:
        """The agent's last status document, as kept (:func:`status_of`) and read back."""


def contact_of(
    cluster: ContactRecord,
    now: datetime,
    policy: ProbePolicy | None = None,
    latest: ClusterNow | None = None,
) -> ContactDocument:
    """A cluster row's ``contact`` document (contract B); ``latest``: how it stands against
    its latest step (:func:`fleet.service.reads.observed.latest_of`)."""
    state, message = health(
        last_seen=cluster.last_seen_at,
        last_attempt=cluster.last_contact_attempt,
        error=cluster.last_contact_error,
        status=cluster.last_status,
        now=now,
        stale_after=(policy or ProbePolicy()).stale_after,
        latest=latest,
    )
    return ContactDocument(
        last_contact=_iso(cluster.last_seen_at),
        health=state,
        message=message,
        last_attempt=_iso(cluster.last_contact_attempt),
    )


def scrub(message: str) -> str:
    """An error message fit for the record: credentials in URLs removed, bounded length."""
    return _USERINFO.sub(r"\1", message)[:1000]


@dataclass(frozen=True)
class ProbeReport:
    """What one probe message did: clusters that answered and those that did not."""

    reached: tuple[str, ...]
    failed: tuple[str, ...]
    regressed: tuple[str, ...] = ()
    """Clusters that answered and no longer hold their latest step's target."""


class ContactProber:
    """Contacts clusters' agents once and records the answers (the worker side of a probe).

    ``gateway`` should have a short timeout; up to ``parallel`` agents are called at once, so
    a batch of unreachable agents costs about ``batch / parallel`` timeouts, not ``batch``."""

    def __init__(self, ctx: FleetContext, gateway: AgentGateway, *, parallel: int = 8) -> None:
        self.ctx = ctx
        self.gateway = gateway
        self.parallel = max(1, parallel)

    def probe(self, message: ProbeMessage) -> ProbeReport:
        """Probe the message's clusters (removed ones are skipped) and record each outcome."""
        from fleet.agentport import AgentTarget
        from fleet.agenttls import AgentTLS
        from fleet.credentials import AccountAccess

        with self.ctx.reading() as uow:
            targets = [
                (
                    c.id,
                    c.fleet.name,
                    AgentTarget(
                        c.name,
                        c.agent_endpoint,
                        c.credentials_ref or "",
                        AccountAccess(c.account.role_arn, c.account.external_id),
                        AgentTLS.of(c.ca_ref, c.client_certificate_ref, c.client_key_ref),
                    ),
                )
                for c in uow.clusters.by_ids(list(message.clusters))
            ]
        if not targets:
            return ProbeReport((), ())
        with ThreadPoolExecutor(max_workers=min(self.parallel, len(targets))) as pool:
            answers = list(pool.map(lambda t: self._call(t[2]), targets))
        return self._record(targets, answers)

    def _call(self, target: AgentTarget) -> tuple[datetime, StatusDocument | str]:
        from fleet.agentport import GatewayError

        try:
            return self.ctx.now(), self.gateway.status(target)
        except GatewayError as exc:
            return self.ctx.now(), scrub(str(exc))

    def _record(
        self,
        targets: Sequence[tuple[int, str, AgentTarget]],
        answers: Sequence[tuple[datetime, StatusDocument | str]],
    ) -> ProbeReport:
        reached: list[int] = []
        failed: list[str] = []
        with self.ctx.writing() as uow:
            for (cid, fleet, target), (at, answer) in zip(targets, answers, strict=True):
                if isinstance(answer, StatusDocument):
                    uow.clusters.record_status(fleet, target.cluster, status_of(answer), at)
                    reached.append(cid)
                else:
                    uow.clusters.record_contact_failure(cid, answer, at)
                    failed.append(target.cluster)
            uow.commit()
        names = {cid: target.cluster for cid, _, target in targets}
        regressed = self._regressed(reached)
        return ProbeReport(
            tuple(names[cid] for cid in reached), tuple(failed), tuple(sorted(regressed))
        )

    def _regressed(self, ids: Sequence[int]) -> list[str]:
        """The clusters of ``ids`` that no longer hold their latest step's target (logged)."""
        if not ids:
            return []
        now = self.ctx.now()
        with self.ctx.reading() as uow:
            clusters = uow.clusters.by_ids(list(ids))
            judged = latest_of(uow, clusters)
            out = []
            for cluster in clusters:
                found = judged.get(cluster.id)
                if found is not None and found.holding is Holding.REGRESSED:
                    log.warning("cluster %s: %s", cluster.name, found.text(now))
                    out.append(cluster.name)
        return out
