"""Fleets: applying a Fleet manifest (upserting accounts, regions and clusters) and reading it back.

An apply is one step inside the caller's unit of work: the fleet row's generation grows by one
when the apply changes anything (a true no-op leaves it),
accounts and regions are inserted or updated, clusters are added, changed, brought back (a
cluster listed again after a removal) or marked removed (``removed_at``; kept for history).
Invalid input (a cluster naming an unknown account or ring, duplicate names) raises
:class:`InvalidInput` before anything is written.
"""

from __future__ import annotations

import builtins
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import select

from fleet.db.errors import InvalidInput, NotFound
from fleet.db.models import Account, Cluster, Fleet, Region
from fleet.db.records import AccountRecord, FleetRecord
from fleet.db.repositories.base import Repository, aware
from fleet.db.repositories.convert import account_record, fleet_record
from fleet.db.specs import AccountSpec, ApplyResult, ClusterChange, ClusterSpec, FleetSpec
from fleet.db.translate import boundary


def _plain(value: Any) -> Any:
    """``value`` as it reads back from a JSON column (tuples become lists, mappings dicts)."""
    return json.loads(json.dumps(value))


def _duplicates(names: Sequence[str]) -> list[str]:
    return sorted(name for name, count in Counter(names).items() if count > 1)


def validate_fleet_spec(spec: FleetSpec, doing: str) -> None:
    """Raise :class:`InvalidInput` naming the first field of ``spec`` that breaks a rule."""
    if not spec.name:
        raise InvalidInput(doing, "name", "must not be empty")
    if not spec.rings:
        raise InvalidInput(doing, "rings", "must name at least one ring")
    for field, names in (
        ("rings", list(spec.rings)),
        ("accounts", [a.name for a in spec.accounts]),
        ("clusters", [c.name for c in spec.clusters]),
    ):
        if duplicated := _duplicates(names):
            raise InvalidInput(doing, field, f"names must be unique ({', '.join(duplicated)})")
    accounts = {a.name for a in spec.accounts}
    for i, cluster in enumerate(spec.clusters):
        if cluster.account not in accounts:
            raise InvalidInput(
                doing, f"clusters[{i}].account", f"{cluster.account!r} names no account"
            )
        if cluster.ring not in spec.rings:
            raise InvalidInput(doing, f"clusters[{i}].ring", f"{cluster.ring!r} names no ring")


def _account_values(spec: AccountSpec) -> dict[str, Any]:
    return {
        "aws_account_id": spec.aws_account_id,
        "role_arn": spec.role_arn,
        "external_id": spec.external_id,
    }


def _cluster_values(spec: ClusterSpec, account: Account, region: Region) -> dict[str, Any]:
    return {
        "account_id": account.id,
        "region_id": region.id,
        "ring": spec.ring,
        "labels": _plain(dict(spec.labels)),
        "agent_endpoint": spec.agent_endpoint,
        "credentials_ref": spec.credentials_ref,
        "ca_ref": spec.ca_ref,
        "client_certificate_ref": spec.client_certificate_ref,
        "client_key_ref": spec.client_key_ref,
        "maintenance_windows": _plain([dict(w) for w in spec.maintenance_windows]),
    }


def _differs(entity: Any, values: dict[str, Any]) -> bool:
    return any(getattr(entity, name) != value for name, value in values.items())


AUDITED = {
    "ring": "ring",
    "agent_endpoint": "endpoint",
    "labels": "labels",
    "maintenance_windows": "maintenanceWindows",
    "account_id": "account",
    "region_id": "region",
    "credentials_ref": "credentialsRef",
    "ca_ref": "caRef",
    "client_certificate_ref": "clientCertificateRef",
    "client_key_ref": "clientKeyRef",
}
"""The cluster columns an apply audits, by their name in the manifest."""


def _shown(column: str, value: Any, names: dict[tuple[str, Any], str]) -> Any:
    """A column's value as the audit shows it: account and region by name, the credentials
    reference never (only that it changed)."""
    if column in ("credentials_ref", "client_key_ref"):
        return "(set)" if value else None
    if column in ("account_id", "region_id"):
        return names.get((column, value), value)
    return _plain(value)


def _change(
    cluster: Cluster | None, values: dict[str, Any] | None, names: dict[tuple[str, Any], str]
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(before, after) of the audited fields that differ between ``cluster`` and ``values``
    (every audited field when one side is missing)."""
    columns = [
        c for c in AUDITED if cluster is None or values is None or getattr(cluster, c) != values[c]
    ]
    before = (
        None
        if cluster is None
        else {AUDITED[c]: _shown(c, getattr(cluster, c), names) for c in columns}
    )
    after = None if values is None else {AUDITED[c]: _shown(c, values[c], names) for c in columns}
    return before, after


def _notifications(manifest: Any) -> list[dict[str, Any]]:
    """The ``spec.notifications`` of a stored Fleet manifest (none when it lists none)."""
    spec = manifest.get("spec") if isinstance(manifest, dict) else None
    return list((spec or {}).get("notifications") or [])


def webhook_changes(
    change: dict[str, Any] | None,
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """The names of the webhooks an apply added, changed and removed, from the whole
    ``notifications`` before and after (None: they did not change)."""
    if change is None:
        return (), (), ()
    before = {str(h["name"]): h for h in change["before"]}
    after = {str(h["name"]): h for h in change["after"]}
    return (
        tuple(sorted(after.keys() - before.keys())),
        tuple(sorted(n for n in after.keys() & before.keys() if after[n] != before[n])),
        tuple(sorted(before.keys() - after.keys())),
    )


def _shown_field(field: str, change: dict[str, Any]) -> dict[str, Any]:
    """A Fleet field's change as the audit keeps it: webhooks by name, host and events, never
    their URL's path nor their secret reference (only whether one is set)."""
    if field != "notifications":
        return change
    return {side: [_webhook(h) for h in change[side]] for side in ("before", "after")}


def _webhook(entry: dict[str, Any]) -> dict[str, Any]:
    host = urlsplit(str(entry.get("url", ""))).netloc.rpartition("@")[2]
    return {
        "name": entry.get("name"),
        "host": host,
        "events": entry.get("events"),
        "secretRef": "(set)" if entry.get("secretRef") else None,
    }


class FleetRepository(Repository):
    """Fleets, their accounts and the regions their clusters run in."""

    @boundary("applying fleet {spec.name}")
    def apply(self, spec: FleetSpec, now: datetime) -> ApplyResult:
        """Store ``spec`` as the fleet's current definition; what changed is returned."""
        doing = f"applying fleet {spec.name}"
        aware(now, "now", doing)
        validate_fleet_spec(spec, doing)
        fleet, fleet_changes, created = self._upsert_fleet(spec, now)
        webhooks = webhook_changes(fleet_changes.get("notifications"))
        regions = self._regions({c.region for c in spec.clusters})
        accounts, added_accounts, changed_accounts = self._accounts(fleet, spec.accounts)
        names: dict[tuple[str, Any], str] = {("region_id", r.id): n for n, r in regions.items()}
        names.update({("account_id", a.id): n for n, a in accounts.items()})
        changes: dict[str, ClusterChange] = {}
        new: list[Cluster] = []
        added, changed, removed = self._clusters(
            fleet, spec.clusters, accounts, regions, now, (names, changes, new)
        )
        self._session.flush()
        for cluster in new:  # their ids exist only now
            change = changes[cluster.name]
            changes[cluster.name] = ClusterChange(cluster.id, change.before, change.after)
        result = ApplyResult(
            fleet=fleet.name,
            generation=fleet.generation,
            added=tuple(added),
            changed=tuple(changed),
            removed=tuple(removed),
            accounts_added=tuple(added_accounts),
            accounts_changed=tuple(changed_accounts),
            clusters=changes,
            fleet_changes={k: _shown_field(k, v) for k, v in fleet_changes.items()},
            created=created,
            webhooks_added=webhooks[0],
            webhooks_changed=webhooks[1],
            webhooks_removed=webhooks[2],
        )
        if result.unchanged:  # a true no-op leaves the generation as it was
            return result
        fleet.generation += 1
        self._session.flush()
        return replace(result, generation=fleet.generation)

    def _upsert_fleet(
        self, spec: FleetSpec, now: datetime
    ) -> tuple[Fleet, dict[str, dict[str, Any]], bool]:
        """The fleet row, written; the Fleet's own fields that changed (``rings``,
        ``freezes``, ``notifications``: {field: {before, after}}, whole); whether it is new.
        The generation is the caller's to bump, once it knows whether anything changed."""
        statement = select(Fleet).where(Fleet.name == spec.name)
        fleet = self._session.scalars(
            self._locking(statement, Fleet, self._scope.write)
        ).one_or_none()
        rings, freezes = list(spec.rings), _plain([dict(f) for f in spec.freezes])
        manifest = _plain(dict(spec.manifest))
        changes: dict[str, dict[str, Any]] = {}
        created = fleet is None
        if fleet is None:
            fleet = Fleet(name=spec.name, generation=0)
            self._session.add(fleet)
        else:
            hooks = _notifications(fleet.spec), _notifications(manifest)
            for field, before, after in (
                ("rings", fleet.rings, rings),
                ("freezes", fleet.freezes, freezes),
                ("notifications", *hooks),
            ):
                if before != after:
                    changes[field] = {"before": before, "after": after}
        fleet.rings = rings
        fleet.freezes = freezes
        fleet.spec = manifest
        fleet.applied_at = now
        self._session.flush()
        return fleet, changes, created

    def _regions(self, names: set[str]) -> dict[str, Region]:
        """The regions named, inserted if missing (regions are shared: another fleet's apply
        may insert the same one at the same time, hence ON CONFLICT DO NOTHING)."""
        if names:
            rows = [{"name": name} for name in sorted(names)]
            insert = self._insert(Region.__table__).values(rows)
            self._session.execute(insert.on_conflict_do_nothing(index_elements=["name"]))
        statement = select(Region).where(Region.name.in_(names))
        return {r.name: r for r in self._session.scalars(statement)}

    def _accounts(
        self, fleet: Fleet, specs: Sequence[AccountSpec]
    ) -> tuple[dict[str, Account], list[str], list[str]]:
        existing = {
            a.name: a
            for a in self._session.scalars(select(Account).where(Account.fleet_id == fleet.id))
        }
        added: list[str] = []
        changed: list[str] = []
        for spec in specs:
            values = _account_values(spec)
            account = existing.get(spec.name)
            if account is None:
                existing[spec.name] = Account(fleet_id=fleet.id, name=spec.name, **values)
                self._session.add(existing[spec.name])
                added.append(spec.name)
            elif _differs(account, values):
                for name, value in values.items():
                    setattr(account, name, value)
                changed.append(spec.name)
        self._session.flush()
        return existing, added, changed

    def _clusters(
        self,
        fleet: Fleet,
        specs: Sequence[ClusterSpec],
        accounts: dict[str, Account],
        regions: dict[str, Region],
        now: datetime,
        audit: tuple[dict[tuple[str, Any], str], dict[str, ClusterChange], list[Cluster]],
    ) -> tuple[list[str], list[str], list[str]]:
        """Add, change, bring back and remove clusters; record each one's change in
        ``audit[1]`` and the new clusters in ``audit[2]`` (their ids are 0 until the flush)."""
        names, changes, new = audit
        existing = {
            c.name: c
            for c in self._session.scalars(select(Cluster).where(Cluster.fleet_id == fleet.id))
        }
        added: list[str] = []
        changed: list[str] = []
        for spec in specs:
            account, region = accounts[spec.account], regions[spec.region]
            values = _cluster_values(spec, account, region)
            cluster = existing.get(spec.name)
            if cluster is None:
                cluster = Cluster(fleet=fleet, name=spec.name, created_at=now)
                self._session.add(cluster)
                new.append(cluster)
                added.append(spec.name)
                changes[spec.name] = ClusterChange(0, *_change(None, values, names))
            elif cluster.removed_at is not None:
                added.append(spec.name)
                changes[spec.name] = ClusterChange(cluster.id, *_change(None, values, names))
            elif _differs(cluster, values):
                changed.append(spec.name)
                changes[spec.name] = ClusterChange(cluster.id, *_change(cluster, values, names))
            else:
                continue
            for name, value in values.items():
                setattr(cluster, name, value)
            cluster.account, cluster.region = account, region
            cluster.removed_at = None
            cluster.updated_at = now
        listed = {spec.name for spec in specs}
        removed = sorted(
            name for name, c in existing.items() if name not in listed and c.removed_at is None
        )
        for name in removed:
            before, _ = _change(existing[name], None, names)
            changes[name] = ClusterChange(existing[name].id, before, None)
            existing[name].removed_at = now
            existing[name].updated_at = now
        return sorted(added), sorted(changed), removed

    @boundary("reading fleet {name}")
    def get(self, name: str, *, for_update: bool = False) -> FleetRecord:
        """The fleet named ``name``; :class:`NotFound` if it was never applied. ``for_update``
        locks its row until the unit of work ends: the lock that serializes the commands that
        must see every rollout of the fleet (starting one, promoting a queued one)."""
        statement = self._locking(select(Fleet).where(Fleet.name == name), Fleet, for_update)
        fleet = self._session.scalars(statement).one_or_none()
        if fleet is None:
            raise NotFound(f"reading fleet {name}: no such fleet (apply its Fleet manifest)")
        return fleet_record(fleet)

    @boundary("listing fleets")
    def list(self) -> list[FleetRecord]:
        """Every fleet, by name."""
        return [fleet_record(f) for f in self._session.scalars(select(Fleet).order_by(Fleet.name))]

    @boundary("listing the accounts of fleet {fleet}")
    def accounts(self, fleet: str) -> builtins.list[AccountRecord]:
        """The accounts of ``fleet``, by name."""
        fleet_id = self.get(fleet).id
        statement = select(Account).where(Account.fleet_id == fleet_id).order_by(Account.name)
        return [account_record(account) for account in self._session.scalars(statement)]
