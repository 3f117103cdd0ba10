"""The audit log (append, list newest last, UPDATE and DELETE refused by the database) and the
scheduler leases (acquire, renew, expire, release)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import IntegrityError

from fleet.db import AppendOnlyViolation, InvalidInput, UnitOfWork
from fleet.db.translate import translate
from tests.unit.fleet.db.factories import NOW

TTL = timedelta(seconds=30)


def _append(uow: UnitOfWork, action: str, rollout_id: str | None = "r1", **extra: object) -> int:
    entry = uow.audit.append(
        at=NOW,
        actor="scheduler",
        action=action,
        object_type="rollout",
        object_id=rollout_id or "fleet",
        rollout_id=rollout_id,
        **extra,  # type: ignore[arg-type]
    )
    return entry.id


def test_audit_records_are_appended_and_listed_oldest_first(engine: Engine) -> None:
    with UnitOfWork(engine, write=True) as uow:
        _append(
            uow,
            "start",
            before={"state": "planned"},
            after={"state": "running"},
            trace_id="0" * 32,
            span_id="1" * 16,
        )
        _append(uow, "apply-fleet", rollout_id=None)
        _append(uow, "pause")
        uow.commit()
    with UnitOfWork(engine) as uow:
        everything = uow.audit.list()
        of_rollout = uow.audit.list(rollout_id="r1")
        by_object = uow.audit.list(object_type="rollout", object_id="fleet")
        page = uow.audit.list(after_id=everything[0].id, limit=1)
    assert [e.action for e in everything] == ["start", "apply-fleet", "pause"]
    assert [e.action for e in of_rollout] == ["start", "pause"]
    assert [e.action for e in by_object] == ["apply-fleet"]
    assert [e.action for e in page] == ["apply-fleet"]
    start = everything[0]
    assert (start.before, start.after, start.at) == (
        {"state": "planned"},
        {"state": "running"},
        NOW,
    )
    assert (start.trace_id, start.span_id) == ("0" * 32, "1" * 16)
    assert everything[1].before is None


def test_an_audit_record_needs_an_actor_and_an_aware_time(engine: Engine) -> None:
    with UnitOfWork(engine, write=True) as uow:
        with pytest.raises(InvalidInput, match="actor: must not be empty"):
            uow.audit.append(at=NOW, actor="", action="x", object_type="rollout", object_id="r")
        with pytest.raises(InvalidInput, match="at: must be a timezone-aware"):
            uow.audit.append(
                at=NOW.replace(tzinfo=None), actor="a", action="x", object_type="t", object_id="r"
            )


@pytest.mark.parametrize(
    "statement",
    ["UPDATE audit_log SET actor = 'mallory'", "DELETE FROM audit_log"],
)
def test_the_database_refuses_to_change_or_delete_audit_records(
    engine: Engine, statement: str
) -> None:
    with UnitOfWork(engine, write=True) as uow:
        _append(uow, "start")
        uow.commit()
    with (
        pytest.raises(IntegrityError, match="audit_log is append-only") as error,
        engine.begin() as connection,
    ):
        connection.execute(text(statement))
    assert isinstance(translate(error.value, "tampering"), AppendOnlyViolation)
    with UnitOfWork(engine) as uow:
        assert [e.actor for e in uow.audit.list()] == ["scheduler"]


def test_a_lease_is_held_by_one_holder_until_it_expires(engine: Engine) -> None:
    with UnitOfWork(engine, write=True) as uow:
        assert uow.leases.holder("scheduler", NOW) is None
        assert uow.leases.acquire("scheduler", "a", TTL, NOW)
        assert not uow.leases.acquire("scheduler", "b", TTL, NOW + timedelta(seconds=10))
        assert uow.leases.acquire("scheduler", "a", TTL, NOW + timedelta(seconds=10))  # extends
        assert uow.leases.holder("scheduler", NOW + timedelta(seconds=39)) == "a"
        assert uow.leases.holder("scheduler", NOW + timedelta(seconds=40)) is None
        assert uow.leases.acquire("scheduler", "b", TTL, NOW + timedelta(seconds=40))
        assert uow.leases.holder("scheduler", NOW + timedelta(seconds=41)) == "b"
        uow.commit()


def test_a_lease_is_renewed_only_by_its_unexpired_holder(engine: Engine) -> None:
    with UnitOfWork(engine, write=True) as uow:
        assert uow.leases.acquire("scheduler", "a", TTL, NOW)
        assert uow.leases.renew("scheduler", "a", TTL, NOW + timedelta(seconds=20))
        assert uow.leases.holder("scheduler", NOW + timedelta(seconds=49)) == "a"
        assert not uow.leases.renew("scheduler", "b", TTL, NOW + timedelta(seconds=20))
        assert not uow.leases.renew("scheduler", "a", TTL, NOW + timedelta(seconds=50))
        assert not uow.leases.renew("other", "a", TTL, NOW)
        uow.commit()


def test_a_released_lease_is_free_and_only_its_holder_releases_it(engine: Engine) -> None:
    with UnitOfWork(engine, write=True) as uow:
        assert uow.leases.acquire("scheduler", "a", TTL, NOW)
        assert not uow.leases.release("scheduler", "b")
        assert uow.leases.release("scheduler", "a")
        assert uow.leases.acquire("scheduler", "b", TTL, NOW)
        uow.commit()


def test_leases_refuse_bad_arguments(engine: Engine) -> None:
    with UnitOfWork(engine, write=True) as uow:
        with pytest.raises(InvalidInput, match="ttl: must be positive"):
            uow.leases.acquire("scheduler", "a", timedelta(0), NOW)
        with pytest.raises(InvalidInput, match="holder: must not be empty"):
            uow.leases.renew("scheduler", "", TTL, NOW)
        with pytest.raises(InvalidInput, match="now: must be a timezone-aware"):
            uow.leases.holder("scheduler", NOW.replace(tzinfo=None))


def test_a_lease_records_its_last_renewal_and_keeps_it_once_released(engine: Engine) -> None:
    with UnitOfWork(engine, write=True) as uow:
        assert uow.leases.heartbeat("scheduler") is None
        assert uow.leases.acquire("scheduler", "a", TTL, NOW)
        assert uow.leases.renew("scheduler", "a", TTL, NOW + timedelta(seconds=2))
        state = uow.leases.heartbeat("scheduler")
        assert state is not None
        assert (state.holder, state.renewed_at) == ("a", NOW + timedelta(seconds=2))
        assert state.expires_at == NOW + timedelta(seconds=32)
        assert uow.leases.release("scheduler", "a")
        assert uow.leases.holder("scheduler", NOW + timedelta(seconds=3)) is None
        released = uow.leases.heartbeat("scheduler")
        assert released is not None
        assert (released.holder, released.renewed_at) == ("a", NOW + timedelta(seconds=2))
        assert uow.leases.acquire("scheduler", "b", TTL, NOW + timedelta(seconds=3))
        taken = uow.leases.heartbeat("scheduler")
        assert taken is not None
        assert (taken.holder, taken.renewed_at) == ("b", NOW + timedelta(seconds=3))
        uow.commit()
