"""Applying a Fleet: upserting accounts, regions and clusters, marking dropped clusters removed,
refusing inconsistent input without writing anything; and reading clusters back."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

import fleet as fleet_package
from fleet.db import (
    AccountSpec,
    InvalidInput,
    NotFound,
    UnitOfWork,
    fleet_spec_from_manifest,
)
from fleet.db.repositories.convert import kept_status
from fleet.domain.manifests import load_fleet
from tests.support.statuses import agent_status
from tests.unit.fleet.db.factories import NOW, cluster, fleet_spec

LATER = NOW + timedelta(hours=1)
EXAMPLES = Path(fleet_package.__file__).parent / "examples"


def test_a_first_apply_adds_everything(engine: Engine) -> None:
    with UnitOfWork(engine, write=True) as uow:
        result = uow.fleets.apply(fleet_spec(cluster("b"), cluster("a", "prod")), NOW)
        uow.commit()
    assert (result.fleet, result.generation) == ("payments", 1)
    assert result.added == ("a", "b")
    assert result.accounts_added == ("main",)
    assert not result.changed
    assert not result.removed
    with UnitOfWork(engine) as uow:
        fleet = uow.fleets.get("payments")
        clusters = uow.clusters.list("payments")
        accounts = uow.fleets.accounts("payments")
    assert fleet.rings == ["canary", "dev", "prod"]
    assert fleet.freezes == [{"start": "2026-12-20T00:00:00Z", "end": "2027-01-04T00:00:00Z"}]
    assert fleet.spec == {"kind": "Fleet", "metadata": {"name": "payments"}}
    assert fleet.applied_at == NOW
    assert [c.name for c in clusters] == ["a", "b"]
    a = clusters[0]
    assert (a.ring, a.account.name, a.region.name, a.fleet.name) == (
        "prod",
        "main",
        "us-east-1",
        "payments",
    )
    assert a.labels == {"team": "payments"}
    assert a.maintenance_windows == [{"schedule": "0 22 * * 1-5", "duration": "4h"}]
    assert a.agent_endpoint == "https://a.agents.example:9443"
    assert a.credentials_ref == "env:TOKEN_A"
    assert a.created_at == a.updated_at == NOW
    assert (a.removed_at, a.last_status, a.last_seen_at) == (None, None, None)
    assert [(x.name, x.aws_account_id, x.external_id) for x in accounts] == [
        ("main", "123456789012", None)
    ]


def test_a_second_apply_reports_changed_removed_and_restored_clusters(engine: Engine) -> None:
    with UnitOfWork(engine, write=True) as uow:
        uow.fleets.apply(fleet_spec(cluster("keep"), cluster("edit"), cluster("drop")), NOW)
        uow.commit()
    with UnitOfWork(engine, write=True) as uow:
        edited = cluster("edit", "dev", region="eu-west-1", labels={"team": "core"})
        result = uow.fleets.apply(fleet_spec(cluster("keep"), edited, cluster("new")), LATER)
        uow.commit()
    assert (result.generation, result.added, result.changed, result.removed) == (
        2,
        ("new",),
        ("edit",),
        ("drop",),
    )
    assert not result.accounts_added
    with UnitOfWork(engine) as uow:
        active = {c.name: c for c in uow.clusters.list("payments")}
        everything = uow.clusters.list("payments", include_removed=True)
        with pytest.raises(NotFound, match="drop of fleet payments: it was removed"):
            uow.clusters.get("payments", "drop")
        dropped = uow.clusters.get("payments", "drop", include_removed=True)
    assert sorted(active) == ["edit", "keep", "new"]
    assert len(everything) == 4
    assert dropped.removed_at == LATER
    assert active["edit"].region.name == "eu-west-1"
    assert active["edit"].labels == {"team": "core"}
    assert active["edit"].updated_at == LATER
    assert active["keep"].updated_at == NOW
    with UnitOfWork(engine, write=True) as uow:
        back = uow.fleets.apply(fleet_spec(cluster("keep"), edited, cluster("drop")), LATER)
        uow.commit()
    assert (back.generation, back.added, back.removed) == (3, ("drop",), ("new",))
    with UnitOfWork(engine) as uow:
        assert uow.clusters.get("payments", "drop").removed_at is None


def test_an_unchanged_apply_leaves_the_generation_as_it_was(engine: Engine) -> None:
    spec = fleet_spec(cluster("a"))
    with UnitOfWork(engine, write=True) as uow:
        first = uow.fleets.apply(spec, NOW)
        result = uow.fleets.apply(spec, LATER)
        uow.commit()
    assert (first.created, first.unchanged, first.generation) == (True, False, 1)
    assert result.generation == 1
    assert result.unchanged
    assert not result.created
    with UnitOfWork(engine) as uow:
        assert uow.fleets.get("payments").generation == 1


def test_account_changes_are_reported(engine: Engine) -> None:
    with UnitOfWork(engine, write=True) as uow:
        uow.fleets.apply(fleet_spec(cluster("a")), NOW)
        spec = fleet_spec(cluster("a"))
        changed = AccountSpec("main", "123456789012", "arn:aws:iam::123456789012:role/x", "ext")
        other = AccountSpec("other", "210987654321", "arn:aws:iam::210987654321:role/y")
        result = uow.fleets.apply(
            type(spec)(spec.name, spec.rings, [changed, other], spec.clusters), LATER
        )
        accounts = uow.fleets.accounts("payments")
    assert (result.accounts_added, result.accounts_changed) == (("other",), ("main",))
    assert [(a.name, a.external_id) for a in accounts] == [("main", "ext"), ("other", None)]


@pytest.mark.parametrize(
    ("spec", "field", "rule"),
    [
        (fleet_spec(cluster("a", account="nobody")), "clusters[0].account", "names no account"),
        (fleet_spec(cluster("a", "qa")), "clusters[0].ring", "'qa' names no ring"),
        (fleet_spec(cluster("a"), cluster("a")), "clusters", r"must be unique \(a\)"),
        (fleet_spec(cluster("a"), name=""), "name", "must not be empty"),
    ],
)
def test_an_invalid_fleet_is_refused_naming_the_field_and_changes_nothing(
    engine: Engine, spec: Any, field: str, rule: str
) -> None:
    with UnitOfWork(engine, write=True) as uow:
        with pytest.raises(InvalidInput, match=rule) as error:
            uow.fleets.apply(spec, NOW)
        assert error.value.field == field
        uow.commit()
    with UnitOfWork(engine) as uow:
        assert uow.fleets.list() == []


def test_an_apply_not_committed_leaves_nothing(engine: Engine) -> None:
    with UnitOfWork(engine, write=True) as uow:
        uow.fleets.apply(fleet_spec(cluster("a")), NOW)
    with UnitOfWork(engine) as uow:
        assert uow.fleets.list() == []
        with pytest.raises(NotFound, match="fleet payments: no such fleet"):
            uow.fleets.get("payments")


def test_a_naive_timestamp_is_refused(engine: Engine) -> None:
    with UnitOfWork(engine, write=True) as uow, pytest.raises(InvalidInput, match="now"):
        uow.fleets.apply(fleet_spec(cluster("a")), NOW.replace(tzinfo=None))


def test_clusters_filter_by_ring_and_fleet(engine: Engine) -> None:
    with UnitOfWork(engine, write=True) as uow:
        uow.fleets.apply(fleet_spec(cluster("a"), cluster("b", "prod")), NOW)
        uow.fleets.apply(fleet_spec(cluster("z", "prod"), name="search"), NOW)
        uow.commit()
    with UnitOfWork(engine) as uow:
        assert [c.name for c in uow.clusters.list(ring="prod")] == ["b", "z"]
        assert [c.name for c in uow.clusters.list("search")] == ["z"]
        assert [f.name for f in uow.fleets.list()] == ["payments", "search"]
        by_id = uow.clusters.get_by_id(uow.clusters.get("search", "z").id)
        assert by_id.name == "z"
        with pytest.raises(NotFound, match="#999"):
            uow.clusters.get_by_id(999)
        with pytest.raises(NotFound, match="does not exist"):
            uow.clusters.get("search", "a")


def test_an_agent_status_is_recorded_and_an_older_one_ignored(engine: Engine) -> None:
    with UnitOfWork(engine, write=True) as uow:
        uow.fleets.apply(fleet_spec(cluster("a")), NOW)
        kept = agent_status(nodes=3, drifted=1).model_dump(mode="json")
        uow.clusters.record_status("payments", "a", kept, LATER)
        uow.clusters.record_status(
            "payments", "a", agent_status(nodes=9).model_dump(mode="json"), NOW
        )
        uow.commit()
    with UnitOfWork(engine) as uow:
        found = uow.clusters.get("payments", "a")
    assert found.last_status == agent_status(nodes=3, drifted=1)
    assert found.last_seen_at == LATER


def test_a_kept_status_reads_tolerantly_and_an_unreadable_one_as_none() -> None:
    older = agent_status(nodes=3).model_dump(mode="json", exclude={"agent"})
    newer = {**older, "addedLater": {"x": 1}}
    assert kept_status(older) == agent_status(nodes=3)
    assert kept_status(newer) == agent_status(nodes=3)
    assert kept_status({"nodes": 3}) is None
    assert kept_status(None) is None


def test_a_fleet_manifest_reads_into_a_spec() -> None:
    manifest = {
        "apiVersion": "driftwave.io/v1alpha1",
        "kind": "Fleet",
        "metadata": {"name": "payments"},
        "spec": {
            "rings": ["canary", "prod"],
            "accounts": [
                {"name": "prod", "accountId": "123456789012", "roleArn": "arn:x", "externalId": "e"}
            ],
            "clusters": [
                {
                    "name": "pay-1",
                    "account": "prod",
                    "region": "us-east-1",
                    "ring": "canary",
                    "agent": {"endpoint": "https://a:9443", "credentialsRef": "env:T"},
                    "maintenanceWindows": [{"schedule": "0 22 * * *", "duration": "4h"}],
                }
            ],
        },
    }
    spec = fleet_spec_from_manifest(manifest)
    assert spec.name == "payments"
    assert list(spec.rings) == ["canary", "prod"]
    assert spec.accounts[0].external_id == "e"
    assert spec.clusters[0].agent_endpoint == "https://a:9443"
    assert spec.clusters[0].credentials_ref == "env:T"
    assert dict(spec.clusters[0].labels) == {}
    assert list(spec.freezes) == []
    assert spec.manifest == manifest
    del manifest["spec"]["clusters"][0]["agent"]  # type: ignore[index]
    with pytest.raises(InvalidInput, match=r"spec\.clusters\[0\]\.agent: is required"):
        fleet_spec_from_manifest(manifest)


def test_a_manifest_without_accounts_or_clusters_is_an_empty_fleet() -> None:
    spec = fleet_spec_from_manifest({"metadata": {"name": "empty"}, "spec": {"rings": ["a"]}})
    assert (list(spec.accounts), list(spec.clusters)) == ([], [])
    with pytest.raises(InvalidInput, match=r"spec\.rings: is required"):
        fleet_spec_from_manifest({"metadata": {"name": "empty"}, "spec": {}})


def test_the_example_fleet_manifest_applies(engine: Engine) -> None:
    fleet = load_fleet(EXAMPLES / "fleet.yaml")
    spec = fleet_spec_from_manifest(fleet.to_manifest())
    with UnitOfWork(engine, write=True) as uow:
        result = uow.fleets.apply(spec, NOW)
        uow.commit()
    assert sorted(result.added) == sorted(c.name for c in fleet.spec.clusters)
    with UnitOfWork(engine) as uow:
        stored = uow.fleets.get(spec.name)
        clusters = uow.clusters.list(spec.name)
    assert stored.spec == fleet.to_manifest()
    assert stored.rings == list(fleet.spec.rings)
    assert {c.agent_endpoint for c in clusters} == {
        str(c.agent.endpoint) for c in fleet.spec.clusters
    }


def test_the_agents_tls_references_are_stored_and_their_changes_audited(engine: Engine) -> None:
    tls = {
        "ca_ref": "file:/etc/driftwave/agent-ca/ca.crt",
        "client_certificate_ref": "file:/etc/driftwave/client/tls.crt",
        "client_key_ref": "file:/etc/driftwave/client/tls.key",
    }
    with UnitOfWork(engine, write=True) as uow:
        uow.fleets.apply(fleet_spec(cluster("pay-1", **tls)), NOW)
        uow.commit()
    rotated = {**tls, "ca_ref": "file:/etc/driftwave/agent-ca/next.crt",
               "client_key_ref": "env:FLEET_CLIENT_KEY"}  # fmt: skip
    with UnitOfWork(engine, write=True) as uow:
        result = uow.fleets.apply(fleet_spec(cluster("pay-1", **rotated)), NOW)
        uow.commit()
    assert result.changed == ("pay-1",)
    change = result.clusters["pay-1"]
    assert change.before == {"caRef": tls["ca_ref"], "clientKeyRef": "(set)"}
    assert change.after == {"caRef": rotated["ca_ref"], "clientKeyRef": "(set)"}
    with UnitOfWork(engine) as uow:
        (stored,) = uow.clusters.list("payments")
        assert (stored.ca_ref, stored.client_certificate_ref, stored.client_key_ref) == (
            rotated["ca_ref"],
            rotated["client_certificate_ref"],
            rotated["client_key_ref"],
        )
