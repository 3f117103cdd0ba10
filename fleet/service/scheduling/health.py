"""The control plane's heartbeat: whether a scheduler is ticking, read from the database.

The scheduler renews its lease at every tick (and in every transaction that writes a rollout),
so the lease's ``renewed_at`` is the time of its last tick, whichever process reads it: the API
(``GET /healthz``) and the Prometheus collector report it without talking to the scheduler.

A scheduler that has not ticked for ``intervals`` times ``interval`` seconds is *stopped*. That is
unhealthy only while a rollout is live (not finished, queued included): nothing moves then. With
no live rollout a stopped scheduler is reported, and healthy: nothing waits for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from fleet.domain.json import JSONObject
from fleet.domain.plan import iso
from fleet.service.context import FleetContext
from fleet.service.errors import boundary
from fleet.service.scheduling.scheduler import LEASE


@dataclass(frozen=True)
class HeartbeatPolicy:
    """When the scheduler counts as stopped: no tick for ``intervals`` ticks of ``interval``
    seconds (``DRIFTWAVE_SCHEDULER_INTERVAL`` and ``_STALE_INTERVALS``)."""

    interval: float = 1.0
    intervals: int = 10

    @property
    def stale_after(self) -> timedelta:
        """How long without a tick means stopped."""
        return timedelta(seconds=self.interval * self.intervals)


@dataclass(frozen=True)
class SchedulerHealth:
    """What the heartbeat says at a moment (see the module docstring)."""

    ticking: bool
    healthy: bool
    live_rollouts: int
    holder: str | None
    last_tick: datetime | None
    message: str

    def as_dict(self) -> JSONObject:
        """JSON-ready: ``status`` (``ticking`` or ``stopped``), ``message``, ``holder`` (the
        current or last one), ``lastTick`` (RFC 3339 UTC) and ``liveRollouts``."""
        return {
            "status": "ticking" if self.ticking else "stopped",
            "message": self.message,
            "holder": self.holder,
            "lastTick": iso(self.last_tick),
            "liveRollouts": self.live_rollouts,
        }


def seconds(delta: timedelta) -> str:
    """A duration in whole seconds with its unit (``47 s``), tenths under ten seconds."""
    value = delta.total_seconds()
    return f"{value:.1f} s" if value < 10 else f"{value:.0f} s"


@boundary
def scheduler_health(ctx: FleetContext, policy: HeartbeatPolicy) -> SchedulerHealth:
    """The heartbeat as the database shows it now (``ctx.now()``)."""
    now = ctx.now()
    with ctx.reading() as uow:
        lease = uow.leases.heartbeat(LEASE)
        live = len(uow.rollouts.active())
    last = lease.renewed_at if lease is not None else None
    holder = lease.holder if lease is not None else None
    waiting = f"{live} live rollout(s) wait" if live else "no rollout is live"
    if last is None:
        message = f"no scheduler has ticked yet; {waiting}"
        return SchedulerHealth(False, live == 0, live, holder, None, message)
    silent = now - last
    if silent <= policy.stale_after:
        message = f"ticking: last tick {seconds(silent)} ago by {holder}"
        return SchedulerHealth(True, True, live, holder, last, message)
    message = (
        f"scheduler has not ticked for {seconds(silent)} ({policy.intervals} intervals of "
        f"{policy.interval:g} s); last holder {holder}; {waiting}"
    )
    return SchedulerHealth(False, live == 0, live, holder, last, message)
