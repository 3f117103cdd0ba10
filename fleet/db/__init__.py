"""The fleet database: tables, migrations, repositories and a unit of work, on SQLite
(embedded mode) and PostgreSQL (distributed mode). SQLAlchemy and Alembic are used only inside
this package; callers deal in plain values, the frozen records the repositories return
(:mod:`fleet.db.records`) and the typed errors of :mod:`fleet.db.errors`.

Engine and schema (:mod:`fleet.db.engine`)::

    engine = make_engine(url, lock_timeout=30.0, schema=None)   # or engine_from_settings(...)
    migrate(engine)              # Alembic upgrade to head, in one transaction
    schema_revision(engine)      # -> "0001" | None
    ensure_current(engine)       # raises SchemaOutdated naming the upgrade command

From a shell: ``python -m fleet.db upgrade`` (``current``, ``check``, ``downgrade REV``,
``history``, ``revision -m MESSAGE``), with ``DRIFTWAVE_DATABASE_URL`` or ``--url``.

Unit of work (:mod:`fleet.db.uow`)::

    with UnitOfWork(engine, write=True) as uow:
        ...                      # uow.fleets, .clusters, .releases, .rollouts, .waves,
        uow.commit()             # .steps, .gates, .approvals, .audit, .leases, .tokens

Repositories (:mod:`fleet.db.repositories`; ``now``/``at`` arguments are aware datetimes):

- ``fleets.apply(FleetSpec, now) -> ApplyResult``, ``get(name)``, ``list()``,
  ``accounts(fleet)``
- ``clusters.list(fleet=None, *, ring=None, include_removed=False)``, ``get(fleet, name)``,
  ``get_by_id(id)``, ``record_status(fleet, name, status, seen_at)`` (also the last contact),
  ``record_contact_failure(id, error, at)``, ``due_for_probe(cutoff, limit)``,
  ``mark_probed(ids, at)``, ``by_ids(ids)``, ``live_rollouts(ids)``
- ``releases.add(name, fleet, spec, now)`` (``ReleaseConflict`` for another spec),
  ``get(name)``, ``find(name)``, ``list(fleet=None)``
- ``rollouts.create(id, release, [NewWave...], now=..., plan=...)``, ``get(id,
  for_update=False)``, ``find(id)``, ``list(states=, fleet=, release=, active=, limit=)``,
  ``active(fleet=None)``, ``plan_of(id)``, ``update(rollout, now=..., expected_version=None,
  **RolloutChange) -> RolloutRecord`` (``StaleState``)
- ``waves.list(rollout_id)``, ``get(id, for_update=False)``, ``at(rollout_id, seq)``,
  ``update(wave, **WaveChange) -> WaveRecord``, ``transition(id, from_states, to_state,
  **fields) -> bool``
- ``steps.list(rollout_id, wave_id=None, states=None)``, ``get(id, for_update=False)``,
  ``counts(rollout_id)``, ``silent(states, before)``, ``transition(id, from_states, to_state,
  count_attempt=False, **fields) -> bool`` (alias ``transition_step``)
- ``gates.add(wave_id, evaluated_at, passed, checks)``, ``list(wave_id)``, ``latest(wave_id)``
- ``approvals.add(rollout_id, ring, actor, at, comment="")``, ``list(rollout_id, ring=None)``
- ``audit.append(at=, actor=, action=, object_type=, object_id=, rollout_id=, before=, after=,
  trace_id=, span_id=, reason=)``, ``list(rollout_id=, object_type=, object_id=, after_id=,
  limit=)``, ``list_fleet(fleet, after_id=, limit=)``, ``chain(after_seq=, limit=)`` (rows in
  the hash chain's order; appends link each row to the previous one: :mod:`fleet.db.chain`)
- ``leases.acquire(name, holder, ttl, now) -> bool``, ``renew(...) -> bool``,
  ``release(name, holder) -> bool``, ``holder(name, now)``
- ``tokens.add(name, token_hash, role, rings, created_by=, created_at=, expires_at=)``,
  ``find(name)``, ``by_hash(token_hash)``, ``list()``, ``revoke(name, at)``, ``used(id, at)``

Inputs are plain frozen dataclasses (:mod:`fleet.db.specs`: ``FleetSpec``, ``AccountSpec``,
``ClusterSpec``, ``NewWave``; ``fleet_spec_from_manifest(dict)`` reads a Fleet manifest).
Records (:mod:`fleet.db.records`) are snapshots taken inside their unit of work: an update
returns the record as it stands after it, and a rollout's update compares the record's
``version`` with the row read (``StaleState`` otherwise). States are the string values of the
``fleet.domain`` enums; an account's 12-digit id is ``aws_account_id``. Errors:
``DatabaseError`` and its subclasses, whose ``temporary`` flag says whether retrying the unit
of work may succeed.
"""

from fleet.db.engine import (
    Engine,
    engine_from_settings,
    ensure_current,
    head_revision,
    make_engine,
    migrate,
    schema_revision,
)
from fleet.db.errors import (
    AlreadyExists,
    AppendOnlyViolation,
    DatabaseError,
    IntegrityViolation,
    InvalidInput,
    NotFound,
    ReleaseConflict,
    SchemaOutdated,
    StaleState,
    TemporaryDatabaseError,
    UsageError,
)
from fleet.db.models import (
    Account,
    Approval,
    AuditEntry,
    Cluster,
    Fleet,
    GateEvaluation,
    Region,
    Release,
    Rollout,
    Step,
    Wave,
)
from fleet.db.specs import (
    AccountSpec,
    ApplyResult,
    ClusterSpec,
    FleetSpec,
    NewWave,
    fleet_spec_from_manifest,
)
from fleet.db.uow import UnitOfWork

__all__ = [
    "Account",
    "AccountSpec",
    "AlreadyExists",
    "AppendOnlyViolation",
    "ApplyResult",
    "Approval",
    "AuditEntry",
    "Cluster",
    "ClusterSpec",
    "DatabaseError",
    "Engine",
    "Fleet",
    "FleetSpec",
    "GateEvaluation",
    "IntegrityViolation",
    "InvalidInput",
    "NewWave",
    "NotFound",
    "Region",
    "Release",
    "ReleaseConflict",
    "Rollout",
    "SchemaOutdated",
    "StaleState",
    "Step",
    "TemporaryDatabaseError",
    "UnitOfWork",
    "UsageError",
    "Wave",
    "engine_from_settings",
    "ensure_current",
    "fleet_spec_from_manifest",
    "head_revision",
    "make_engine",
    "migrate",
    "schema_revision",
]
