"""Releases: adding one (idempotent for the same spec, a conflict for a different one) and
reading them back. A release's ``digest`` is the sha256 of its canonical JSON spec (keys sorted,
no insignificant whitespace), so the same manifest always gives the same digest."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import select

from fleet.db.errors import InvalidInput, NotFound, ReleaseConflict
from fleet.db.models import Fleet, Release
from fleet.db.records import ReleaseRecord
from fleet.db.repositories.base import Repository, aware
from fleet.db.repositories.convert import release_record
from fleet.db.translate import boundary


def canonical_json(value: Any) -> str:
    """``value`` as canonical JSON: keys sorted, compact separators, UTF-8 kept."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def spec_digest(spec: Mapping[str, Any]) -> str:
    """The sha256 (hex) of ``spec``'s canonical JSON."""
    return hashlib.sha256(canonical_json(spec).encode()).hexdigest()


class ReleaseRepository(Repository):
    """Releases (Release manifests as added)."""

    @boundary("adding release {name}")
    def add(self, name: str, fleet: str, spec: Mapping[str, Any], now: datetime) -> ReleaseRecord:
        """Add release ``name`` of ``fleet`` with ``spec``; the existing row when the same spec
        was added before; :class:`ReleaseConflict` when the name holds a different spec."""
        doing = f"adding release {name}"
        aware(now, "now", doing)
        if not name:
            raise InvalidInput(doing, "name", "must not be empty")
        plain = json.loads(canonical_json(dict(spec)))
        digest = spec_digest(plain)
        existing = self.find(name)
        if existing is not None:
            if existing.digest != digest or existing.fleet.name != fleet:
                raise ReleaseConflict(
                    f"{doing}: a release of that name exists with a different spec "
                    f"(digest {existing.digest[:12]}, given {digest[:12]}); "
                    "give the new spec a new name"
                )
            return existing
        owner = self._session.scalars(select(Fleet).where(Fleet.name == fleet)).one_or_none()
        if owner is None:
            raise NotFound(f"{doing}: fleet {fleet} does not exist (apply it first)")
        release = Release(name=name, fleet=owner, spec=plain, digest=digest, created_at=now)
        self._session.add(release)
        self._session.flush()
        return release_record(release)

    @boundary("reading release {name}")
    def find(self, name: str) -> ReleaseRecord | None:
        """The release named ``name``, or None."""
        found = self._session.scalars(select(Release).where(Release.name == name)).one_or_none()
        return None if found is None else release_record(found)

    @boundary("reading release {name}")
    def get(self, name: str) -> ReleaseRecord:
        """The release named ``name``; :class:`NotFound` if absent."""
        release = self.find(name)
        if release is None:
            raise NotFound(f"reading release {name}: no such release")
        return release

    @boundary("reading the spec of release #{release_id}")
    def spec_of(self, release_id: int) -> dict[str, Any]:
        """The stored spec of the release with this id; :class:`NotFound` if absent."""
        spec = self._session.scalars(
            select(Release.spec).where(Release.id == release_id)
        ).one_or_none()
        if spec is None:
            raise NotFound(f"reading release #{release_id}: no such release")
        return dict(spec)

    @boundary("listing releases")
    def list(self, fleet: str | None = None) -> list[ReleaseRecord]:
        """Releases (of ``fleet``), oldest first."""
        statement = select(Release).join(Fleet, Release.fleet_id == Fleet.id)
        if fleet is not None:
            statement = statement.where(Fleet.name == fleet)
        rows = self._session.scalars(statement.order_by(Release.created_at, Release.id))
        return [release_record(release) for release in rows]
