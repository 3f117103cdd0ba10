"""The unit of work: one database transaction, and the repositories that work inside it.

    with UnitOfWork(engine, write=True) as uow:
        rollout = uow.rollouts.get("r-1", for_update=True)
        rollout = uow.rollouts.update(rollout, now=now, state="running")
        uow.audit.append(at=now, actor="scheduler", action="start", ...)
        uow.commit()

Nothing is saved unless :meth:`UnitOfWork.commit` is called; leaving the block without it, or
through an exception, rolls back. After a commit the unit of work may go on (a new transaction
starts with the next statement, taking the write lock again if it is a writing one). The
records the repositories return are plain values: they stay readable after the block, holding
what was read (an update returns a new record; a record returned by an update in a block left
without a commit shows a change that was not saved).

``write=True`` opens the transaction up front holding the write lock on SQLite (``BEGIN
IMMEDIATE``; other writers wait up to the engine's lock timeout), so a read-then-write unit of
work never meets a conflicting writer halfway; on PostgreSQL it allows ``for_update`` loads
(``SELECT ... FOR UPDATE``). A unit of work that writes should be opened with ``write=True``;
one that only reads should not. Each thread uses its own unit of work.
"""

from __future__ import annotations

from types import TracebackType
from typing import Self

from sqlalchemy import Connection, Engine
from sqlalchemy import exc as sa_exc
from sqlalchemy.orm import Session

from fleet.db.engine import WRITE_OPTION
from fleet.db.errors import UsageError
from fleet.db.repositories import (
    ApprovalRepository,
    AuditRepository,
    ClusterRepository,
    FleetRepository,
    GateRepository,
    LeaseRepository,
    ReleaseRepository,
    RolloutRepository,
    StepRepository,
    TokenRepository,
    WaveRepository,
)
from fleet.db.repositories.base import Scope
from fleet.db.translate import translate


class UnitOfWork:
    """One transaction over the fleet database and the repositories bound to it."""

    fleets: FleetRepository
    clusters: ClusterRepository
    releases: ReleaseRepository
    rollouts: RolloutRepository
    waves: WaveRepository
    steps: StepRepository
    gates: GateRepository
    approvals: ApprovalRepository
    audit: AuditRepository
    leases: LeaseRepository
    tokens: TokenRepository

    def __init__(self, engine: Engine, *, write: bool = False) -> None:
        self._engine = engine
        self._write = write
        self._session: Session | None = None
        self._connection: Connection | None = None

    @property
    def write(self) -> bool:
        """Whether this unit of work holds the write lock (SQLite) and may lock rows."""
        return self._write

    def __enter__(self) -> Self:
        """Open the transaction (at once for a writing unit of work) and the repositories."""
        if self._session is not None:
            raise UsageError("opening a unit of work: it is already open")
        try:
            connection = self._engine.connect()
        except sa_exc.SQLAlchemyError as exc:
            raise translate(exc, "connecting to the fleet database") from exc
        session = Session(bind=connection, expire_on_commit=False, autoflush=True)
        if self._write:
            connection.execution_options(**{WRITE_OPTION: True})
            try:
                session.connection()  # begins now, taking SQLite's write lock
            except sa_exc.SQLAlchemyError as exc:
                session.close()
                connection.close()
                raise translate(exc, "opening a writing unit of work") from exc
        self._session, self._connection = session, connection
        scope = Scope(session=session, write=self._write)
        self.fleets = FleetRepository(scope)
        self.clusters = ClusterRepository(scope)
        self.releases = ReleaseRepository(scope)
        self.rollouts = RolloutRepository(scope)
        self.waves = WaveRepository(scope)
        self.steps = StepRepository(scope)
        self.gates = GateRepository(scope)
        self.approvals = ApprovalRepository(scope)
        self.audit = AuditRepository(scope)
        self.leases = LeaseRepository(scope)
        self.tokens = TokenRepository(scope)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Roll back whatever was not committed and give the connection back."""
        session, self._session = self._session, None
        connection, self._connection = self._connection, None
        if session is None or connection is None:
            return
        try:
            session.expunge_all()
            session.rollback()
        except sa_exc.SQLAlchemyError as error:
            if exc is None:
                raise translate(error, "rolling back a unit of work") from error
        finally:
            session.close()
            connection.close()

    def _open(self, doing: str) -> Session:
        if self._session is None:
            raise UsageError(f"{doing}: the unit of work is not open (use it in a with block)")
        return self._session

    def commit(self) -> None:
        """Make every change of this unit of work durable, at once; a failed commit saves
        nothing (``StaleState`` if another unit of work changed a row this one updated), and
        the unit of work then refuses further work until :meth:`rollback` or its end."""
        session = self._open("committing a unit of work")
        self.audit.write_pending()  # last: the audit chain's lock is held only to the commit
        try:
            session.commit()
        except sa_exc.SQLAlchemyError as exc:
            raise translate(exc, "committing a unit of work") from exc

    def rollback(self) -> None:
        """Discard every change since the last commit."""
        session = self._open("rolling back a unit of work")
        self.audit.discard_pending()
        try:
            session.rollback()
        except sa_exc.SQLAlchemyError as exc:
            raise translate(exc, "rolling back a unit of work") from exc
