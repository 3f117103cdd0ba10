"""Releases: the same spec twice is one release, a different spec under the same name is a
conflict, and the digest is the sha256 of the canonical spec."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from sqlalchemy import Engine

from fleet.db import InvalidInput, NotFound, ReleaseConflict, UnitOfWork
from fleet.db.errors import AlreadyExists
from fleet.db.repositories.releases import spec_digest
from tests.unit.fleet.db.factories import NOW, cluster, fleet_spec

SPEC = {"target": {"amiSelectorTerms": [{"alias": "al2023@v20251216"}]}, "strategy": {"x": 1}}


@pytest.fixture
def with_fleet(engine: Engine) -> Engine:
    with UnitOfWork(engine, write=True) as uow:
        uow.fleets.apply(fleet_spec(cluster("a")), NOW)
        uow.fleets.apply(fleet_spec(cluster("z"), name="search"), NOW)
        uow.commit()
    return engine


def test_the_digest_is_the_sha256_of_the_canonical_spec() -> None:
    canonical = '{"b":[1,"é"],"a":{"c":true}}'.encode()
    assert spec_digest({"b": [1, "é"], "a": {"c": True}}) != hashlib.sha256(canonical).hexdigest()
    assert (
        spec_digest({"b": [1, "é"], "a": {"c": True}})
        == hashlib.sha256('{"a":{"c":true},"b":[1,"é"]}'.encode()).hexdigest()
    )
    assert spec_digest({"x": 1, "y": 2}) == spec_digest({"y": 2, "x": 1})


def test_adding_a_release_twice_with_the_same_spec_returns_the_first(with_fleet: Engine) -> None:
    with UnitOfWork(with_fleet, write=True) as uow:
        first = uow.releases.add("al2023-v1", "payments", SPEC, NOW)
        uow.commit()
    reordered = {"strategy": {"x": 1}, "target": SPEC["target"]}
    with UnitOfWork(with_fleet, write=True) as uow:
        again = uow.releases.add("al2023-v1", "payments", reordered, NOW + timedelta(days=1))
        uow.commit()
    assert again.id == first.id
    assert again.created_at == NOW
    assert again.digest == spec_digest(SPEC)
    assert (again.spec, again.fleet.name) == (SPEC, "payments")


def test_a_different_spec_under_the_same_name_is_a_conflict(with_fleet: Engine) -> None:
    with UnitOfWork(with_fleet, write=True) as uow:
        uow.releases.add("al2023-v1", "payments", SPEC, NOW)
        with pytest.raises(ReleaseConflict, match=r"adding release al2023-v1: .*different spec"):
            uow.releases.add("al2023-v1", "payments", {"target": {}}, NOW)
        with pytest.raises(AlreadyExists):
            uow.releases.add("al2023-v1", "search", SPEC, NOW)


def test_a_release_needs_an_applied_fleet_and_a_name(with_fleet: Engine) -> None:
    with UnitOfWork(with_fleet, write=True) as uow:
        with pytest.raises(NotFound, match="fleet nowhere does not exist"):
            uow.releases.add("r", "nowhere", SPEC, NOW)
        with pytest.raises(InvalidInput, match="name: must not be empty"):
            uow.releases.add("", "payments", SPEC, NOW)


def test_releases_are_read_and_listed_by_fleet(with_fleet: Engine) -> None:
    with UnitOfWork(with_fleet, write=True) as uow:
        uow.releases.add("p2", "payments", SPEC, NOW + timedelta(hours=1))
        uow.releases.add("p1", "payments", SPEC, NOW)
        uow.releases.add("s1", "search", SPEC, NOW)
        uow.commit()
    with UnitOfWork(with_fleet) as uow:
        assert [r.name for r in uow.releases.list("payments")] == ["p1", "p2"]
        assert [r.name for r in uow.releases.list()] == ["p1", "s1", "p2"]
        assert uow.releases.get("s1").fleet.name == "search"
        assert uow.releases.find("missing") is None
        with pytest.raises(NotFound, match="reading release missing"):
            uow.releases.get("missing")
