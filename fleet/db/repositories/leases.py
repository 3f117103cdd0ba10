"""Scheduler leases: a named lease held by one holder until it expires, so only one scheduler
process advances rollouts. Acquiring is one atomic ``INSERT ... ON CONFLICT DO UPDATE ... WHERE``
(the lease is free, expired, or already ours), on SQLite and PostgreSQL alike.

Use each call in its own short unit of work and commit it, so the lease is visible to the other
schedulers at once, or call :meth:`LeaseRepository.renew` inside the unit of work whose writes
it must fence: the renewal locks the lease's row until that commit, so no other holder can take
the lease between the check and the commit.

``renewed_at`` is when the holder last took or renewed the lease (the scheduler's heartbeat,
:meth:`LeaseRepository.heartbeat`); a released lease keeps its holder and ``renewed_at`` and only
expires, so the last tick stays known after a clean stop.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import or_, select, update

from fleet.db.errors import InvalidInput
from fleet.db.models import SchedulerLease
from fleet.db.repositories.base import Repository, aware
from fleet.db.translate import boundary

LEASES: Any = SchedulerLease.__table__
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class LeaseState:
    """A lease's row as it stands: its (last) holder, until when, and its last renewal."""

    name: str
    holder: str
    expires_at: datetime
    renewed_at: datetime | None


class LeaseRepository(Repository):
    """Named leases (``scheduler_leases``)."""

    def _check(self, doing: str, holder: str, ttl: timedelta, now: datetime) -> None:
        aware(now, "now", doing)
        if not holder:
            raise InvalidInput(doing, "holder", "must not be empty")
        if ttl <= timedelta(0):
            raise InvalidInput(doing, "ttl", "must be positive")

    @boundary("acquiring lease {name} for {holder}")
    def acquire(self, name: str, holder: str, ttl: timedelta, now: datetime) -> bool:
        """Take lease ``name`` for ``holder`` until ``now + ttl`` if it is free, expired or
        already held by ``holder`` (then it is extended); True when ``holder`` holds it."""
        self._check(f"acquiring lease {name} for {holder}", holder, ttl, now)
        insert = self._insert(LEASES).values(
            name=name, holder=holder, expires_at=now + ttl, renewed_at=now
        )
        statement = insert.on_conflict_do_update(
            index_elements=[LEASES.c.name],
            set_={
                "holder": insert.excluded.holder,
                "expires_at": insert.excluded.expires_at,
                "renewed_at": insert.excluded.renewed_at,
            },
            where=or_(LEASES.c.holder == holder, LEASES.c.expires_at <= now),
        ).returning(LEASES.c.holder)
        return self._session.execute(statement).first() is not None

    @boundary("renewing lease {name} for {holder}")
    def renew(self, name: str, holder: str, ttl: timedelta, now: datetime) -> bool:
        """Extend ``holder``'s unexpired lease to ``now + ttl``; False if it lost the lease."""
        self._check(f"renewing lease {name} for {holder}", holder, ttl, now)
        statement = (
            update(LEASES)
            .where(LEASES.c.name == name, LEASES.c.holder == holder, LEASES.c.expires_at > now)
            .values(expires_at=now + ttl, renewed_at=now)
        )
        result: Any = self._session.execute(statement)
        return int(result.rowcount) == 1

    @boundary("releasing lease {name} of {holder}")
    def release(self, name: str, holder: str) -> bool:
        """Give lease ``name`` up if ``holder`` holds it (it expires at its last renewal, so
        anyone may take it now); True when it did."""
        mine = (LEASES.c.name == name, LEASES.c.holder == holder)
        renewed = self._session.execute(select(LEASES.c.renewed_at).where(*mine)).first()
        if renewed is None:
            return False
        statement = update(LEASES).where(*mine).values(expires_at=renewed[0] or EPOCH)
        result: Any = self._session.execute(statement)
        return int(result.rowcount) == 1

    @boundary("reading lease {name}")
    def heartbeat(self, name: str) -> LeaseState | None:
        """Lease ``name``'s row, expired or not (None when it was never taken)."""
        row = self._session.execute(
            select(LEASES.c.holder, LEASES.c.expires_at, LEASES.c.renewed_at).where(
                LEASES.c.name == name
            )
        ).first()
        if row is None:
            return None
        return LeaseState(name, row.holder, row.expires_at, row.renewed_at)

    @boundary("reading lease {name}")
    def holder(self, name: str, now: datetime) -> str | None:
        """Who holds lease ``name`` at ``now`` (None when free or expired)."""
        aware(now, "now", f"reading lease {name}")
        statement = select(LEASES.c.holder).where(LEASES.c.name == name, LEASES.c.expires_at > now)
        found: str | None = self._session.execute(statement).scalar_one_or_none()
        return found
