"""Scheduler leases: a named lease held by one holder until it expires, so only one scheduler
process advances rollouts. Acquiring is one atomic ``INSERT ... ON CONFLICT DO UPDATE ... WHERE``
(the lease is free, expired, or already ours), on SQLite and PostgreSQL alike.

Use each call in its own short unit of work and commit it, so the lease is visible to the other
schedulers at once.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, or_, select, update

from fleet.db.errors import InvalidInput
from fleet.db.models import SchedulerLease
from fleet.db.repositories.base import Repository, aware
from fleet.db.translate import boundary

LEASES: Any = SchedulerLease.__table__


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
        insert = self._insert(LEASES).values(name=name, holder=holder, expires_at=now + ttl)
        statement = insert.on_conflict_do_update(
            index_elements=[LEASES.c.name],
            set_={"holder": insert.excluded.holder, "expires_at": insert.excluded.expires_at},
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
            .values(expires_at=now + ttl)
        )
        result: Any = self._session.execute(statement)
        return int(result.rowcount) == 1

    @boundary("releasing lease {name} of {holder}")
    def release(self, name: str, holder: str) -> bool:
        """Give lease ``name`` up if ``holder`` holds it; True when it did."""
        statement = delete(LEASES).where(LEASES.c.name == name, LEASES.c.holder == holder)
        result: Any = self._session.execute(statement)
        return int(result.rowcount) == 1

    @boundary("reading lease {name}")
    def holder(self, name: str, now: datetime) -> str | None:
        """Who holds lease ``name`` at ``now`` (None when free or expired)."""
        aware(now, "now", f"reading lease {name}")
        statement = select(LEASES.c.holder).where(LEASES.c.name == name, LEASES.c.expires_at > now)
        found: str | None = self._session.execute(statement).scalar_one_or_none()
        return found
