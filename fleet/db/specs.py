"""Plain inputs and outputs of the repositories: what a Fleet apply and a new rollout carry.

These are frozen dataclasses of plain values, so the services build them without touching
SQLAlchemy. :func:`fleet_spec_from_manifest` reads a ``driftwave.io/v1alpha1`` Fleet manifest
(the camelCase dict a validated manifest model dumps) into a :class:`FleetSpec`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fleet.db.errors import InvalidInput
from fleet.domain.json import JSONValue


@dataclass(frozen=True)
class AccountSpec:
    """An AWS account of a fleet: its name in the Fleet, 12-digit id, role and external id."""

    name: str
    aws_account_id: str
    role_arn: str
    external_id: str | None = None


@dataclass(frozen=True)
class ClusterSpec:
    """A cluster as the Fleet lists it (``account`` names an :class:`AccountSpec`)."""

    name: str
    account: str
    region: str
    ring: str
    agent_endpoint: str
    credentials_ref: str | None = None
    ca_ref: str | None = None
    """Where the CA bundle the agent's certificate is verified against is (``agent.caRef``)."""
    client_certificate_ref: str | None = None
    client_key_ref: str | None = None
    """Mutual TLS: the fleet's client certificate and key for this agent."""
    labels: Mapping[str, str] = field(default_factory=dict)
    maintenance_windows: Sequence[Mapping[str, Any]] = ()


@dataclass(frozen=True)
class FleetSpec:
    """A whole Fleet to apply: ring order, freezes, accounts, clusters and the manifest itself."""

    name: str
    rings: Sequence[str]
    accounts: Sequence[AccountSpec]
    clusters: Sequence[ClusterSpec]
    freezes: Sequence[Mapping[str, Any]] = ()
    manifest: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ApplyResult:
    """What applying a Fleet changed: cluster names added (or back after a removal), changed
    and marked removed, and account names added or changed; ``generation`` counts the applies
    that changed something."""

    fleet: str
    generation: int
    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    accounts_added: tuple[str, ...] = ()
    accounts_changed: tuple[str, ...] = ()
    clusters: Mapping[str, ClusterChange] = field(default_factory=dict)
    """What changed on each cluster added, changed or removed, by name."""
    fleet_changes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """The Fleet's own fields that changed (``rings``, ``freezes``, ``notifications``):
    {field: {before, after}}; webhooks shown by name, host and events only."""
    created: bool = False
    """The fleet was applied for the first time."""
    webhooks_added: tuple[str, ...] = ()
    webhooks_changed: tuple[str, ...] = ()
    webhooks_removed: tuple[str, ...] = ()
    """The ``spec.notifications`` entries added, changed and removed, by name."""

    def as_document(self) -> dict[str, Any]:
        """What the apply changed, as the CLI's ``-o json`` and the API answer it."""
        return {
            "fleet": self.fleet,
            "generation": self.generation,
            "added": list(self.added),
            "changed": list(self.changed),
            "removed": list(self.removed),
            "accountsAdded": list(self.accounts_added),
            "accountsChanged": list(self.accounts_changed),
            "fleetChanged": sorted(self.fleet_changes),
            "webhooksAdded": list(self.webhooks_added),
            "webhooksChanged": list(self.webhooks_changed),
            "webhooksRemoved": list(self.webhooks_removed),
            "unchanged": self.unchanged,
        }

    @property
    def unchanged(self) -> bool:
        """True when the apply changed nothing: no cluster, account, ring, freeze nor webhook
        (and the fleet existed before)."""
        return not any(
            (
                self.created,
                self.added,
                self.changed,
                self.removed,
                self.accounts_added,
                self.accounts_changed,
                self.fleet_changes,
            )
        )


@dataclass(frozen=True)
class ClusterChange:
    """One cluster's change in an apply: its row id and the fields that changed, before and
    after (``ring``, ``endpoint``, ``labels``, ``maintenanceWindows``, ``account``, ``region``,
    ``credentialsRef``, ``caRef``, ``clientCertificateRef``, ``clientKeyRef``; the credentials
    and key references only the fact they changed); ``before`` is None for a cluster added,
    ``after`` None for one removed."""

    cluster_id: int
    before: Mapping[str, JSONValue] | None
    after: Mapping[str, JSONValue] | None


@dataclass(frozen=True)
class NewWave:
    """A wave to create with its rollout: its ring, index in the ring and cluster names.

    ``id`` defaults to ``ROLLOUT.SEQ``; each step's id (the id the agent knows the wave by)
    defaults to ``ROLLOUT.SEQ.CLUSTER``."""

    ring: str
    ring_index: int
    index: int
    clusters: Sequence[str]
    id: str | None = None
    step_ids: Mapping[str, str] = field(default_factory=dict)
    """Step ids by cluster name (the default is ``ROLLOUT.SEQ.CLUSTER``)."""


def _get(data: Mapping[str, Any], key: str, path: str, default: Any = ...) -> Any:
    if key in data:
        return data[key]
    if default is ...:
        where = f"{path}.{key}" if path else key
        raise InvalidInput("reading the Fleet manifest", where, "is required")
    return default


def _cluster(raw: Mapping[str, Any], path: str) -> ClusterSpec:
    agent = _get(raw, "agent", path)
    return ClusterSpec(
        name=_get(raw, "name", path),
        account=_get(raw, "account", path),
        region=_get(raw, "region", path),
        ring=_get(raw, "ring", path),
        agent_endpoint=_get(agent, "endpoint", f"{path}.agent"),
        credentials_ref=_get(agent, "credentialsRef", f"{path}.agent", None),
        ca_ref=_get(agent, "caRef", f"{path}.agent", None),
        client_certificate_ref=_get(agent, "clientCertificateRef", f"{path}.agent", None),
        client_key_ref=_get(agent, "clientKeyRef", f"{path}.agent", None),
        labels=dict(_get(raw, "labels", path, {}) or {}),
        maintenance_windows=[dict(w) for w in _get(raw, "maintenanceWindows", path, []) or []],
    )


def fleet_spec_from_manifest(manifest: Mapping[str, Any]) -> FleetSpec:
    """The :class:`FleetSpec` of a Fleet manifest dict (camelCase, as validated and dumped).

    Raises :class:`InvalidInput` naming the first missing field."""
    name = _get(_get(manifest, "metadata", ""), "name", "metadata")
    spec = _get(manifest, "spec", "")
    accounts = [
        AccountSpec(
            name=_get(raw, "name", f"spec.accounts[{i}]"),
            aws_account_id=_get(raw, "accountId", f"spec.accounts[{i}]"),
            role_arn=_get(raw, "roleArn", f"spec.accounts[{i}]"),
            external_id=_get(raw, "externalId", f"spec.accounts[{i}]", None),
        )
        for i, raw in enumerate(_get(spec, "accounts", "spec", []) or [])
    ]
    clusters = [
        _cluster(raw, f"spec.clusters[{i}]")
        for i, raw in enumerate(_get(spec, "clusters", "spec", []) or [])
    ]
    return FleetSpec(
        name=name,
        rings=list(_get(spec, "rings", "spec")),
        accounts=accounts,
        clusters=clusters,
        freezes=[dict(f) for f in _get(spec, "freezes", "spec", []) or []],
        manifest=dict(manifest),
    )
