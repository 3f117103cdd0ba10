"""Fleet manifest rules: each refusal names the field path and the rule; defaults are documented."""

from __future__ import annotations

from typing import Any

import pytest

from fleet.domain.fleet import Fleet
from tests.unit.agent.api.helpers import accepted, refused, with_field, without_field
from tests.unit.fleet.domain.helpers import cluster, fleet

WINDOW: dict[str, Any] = {"schedule": "0 22 * * 1-5", "duration": "4h", "timeZone": "Europe/Berlin"}


def test_minimal_fleet_is_accepted_with_defaults() -> None:
    parsed = accepted(Fleet, fleet())
    assert parsed.name == "payments"
    assert parsed.spec.freezes == []
    first = parsed.spec.clusters[0]
    assert first.labels == {}
    assert first.maintenance_windows == []


def test_full_cluster_entry_round_trips() -> None:
    entry = cluster(
        "web-prod",
        "prod",
        labels={"team": "payments", "app.kubernetes.io/part-of": "checkout"},
        maintenanceWindows=[WINDOW, {"schedule": "@daily", "duration": "1h30m"}],
    )
    data = with_field(fleet(), "spec.clusters[1]", entry)
    data = with_field(
        data,
        "spec.freezes",
        [{"start": "2026-12-20T00:00:00Z", "end": "2027-01-04T00:00:00+01:00", "reason": "eoy"}],
    )
    parsed = accepted(Fleet, data)
    assert parsed.spec.clusters[1].maintenance_windows[1].time_zone == "UTC"


def test_a_fleet_may_have_no_clusters_yet() -> None:
    accepted(Fleet, with_field(fleet(), "spec.clusters", []))


@pytest.mark.parametrize(
    ("path", "value", "where", "fragment"),
    [
        ("spec.rings", [], "spec.rings", "at least 1"),
        ("spec.rings", ["canary", "prod", "prod"], "spec.rings[2]", "listed twice"),
        ("spec.rings", ["canary", "Prod"], "spec.rings[1]", "DNS label"),
        ("spec.clusters[0].ring", "dev", "spec.clusters[0].ring", "not in spec.rings"),
        ("spec.clusters[1].name", "web-canary", "spec.clusters[1].name", "listed twice"),
        ("spec.clusters[0].name", "web_canary", "spec.clusters[0].name", "DNS label"),
        ("spec.clusters[0].account", "other", "spec.clusters[0].account", "known: main"),
        ("spec.clusters[0].region", "useast1", "spec.clusters[0].region", "AWS region"),
        ("spec.clusters[0].labels", {"team": "a b"}, "spec.clusters[0].labels", "label syntax"),
        ("spec.clusters[0].labels", {"-x": "a"}, "spec.clusters[0].labels", "label syntax"),
        (
            "spec.clusters[0].agent.endpoint",
            "ftp://agent.example:21",
            "spec.clusters[0].agent.endpoint",
            "http(s) URL",
        ),
        (
            "spec.clusters[0].agent.endpoint",
            "https://agent.example:99999",
            "spec.clusters[0].agent.endpoint",
            "port",
        ),
        (
            "spec.clusters[0].agent.endpoint",
            "http://agent.example:9443",
            "spec.clusters[0].agent.endpoint",
            "rule: https:// for an agent off loopback",
        ),
        (
            "spec.clusters[0].agent",
            {"endpoint": "http://127.0.0.1:9101", "credentialsRef": "env:T", "caRef": "file:ca"},
            "spec.clusters[0].agent.caRef",
            "caRef needs an https:// endpoint",
        ),
        (
            "spec.clusters[0].agent",
            {"endpoint": "https://a:9443", "credentialsRef": "env:T", "clientKeyRef": "file:k"},
            "spec.clusters[0].agent.clientCertificateRef",
            "give both or neither",
        ),
        (
            "spec.clusters[0].agent.caRef",
            "s3://bucket/ca.pem",
            "spec.clusters[0].agent.caRef",
            "env:NAME, file:PATH or secretsmanager:ARN",
        ),
        (
            "spec.clusters[0].agent.credentialsRef",
            "env:1BAD",
            "spec.clusters[0].agent.credentialsRef",
            "env:NAME",
        ),
        (
            "spec.clusters[0].agent.credentialsRef",
            "secretsmanager:driftwave/token",
            "spec.clusters[0].agent.credentialsRef",
            "secretsmanager:ARN",
        ),
        ("spec.accounts[0].accountId", "1234", "spec.accounts[0].accountId", "12-digit"),
        ("spec.accounts[0].accountId", 123456789012, "spec.accounts[0].accountId", "quote it"),
        (
            "spec.accounts[0].roleArn",
            "arn:aws:iam::999999999999:role/x",
            "spec.accounts[0].roleArn",
            "belongs to account 999999999999",
        ),
        ("spec.accounts[0].roleArn", "driftwave", "spec.accounts[0].roleArn", "IAM role ARN"),
        ("spec.accounts[0].externalId", "a b", "spec.accounts[0].externalId", "2-1224"),
        ("spec.accounts[0].externalId", "x" * 1225, "spec.accounts[0].externalId", "2-1224"),
        ("spec.accounts[0].name", "Main", "spec.accounts[0].name", "DNS label"),
        ("spec.clusters[0].zone", "us-east-1a", "spec.clusters[0].zone", "unknown field"),
    ],
)
def test_fleet_rule(path: str, value: Any, where: str, fragment: str) -> None:
    refused(Fleet, with_field(fleet(), path, value), where, fragment)


def test_accounts_must_be_unique() -> None:
    data = with_field(fleet(), "spec.accounts", [fleet()["spec"]["accounts"][0]] * 2)
    refused(Fleet, data, "spec.accounts[1].name", "listed twice")


def test_agent_is_required() -> None:
    refused(
        Fleet,
        without_field(fleet(), "spec.clusters[0].agent"),
        "spec.clusters[0].agent",
        "required",
    )


def test_role_arn_in_other_partitions_is_accepted() -> None:
    data = with_field(
        fleet(), "spec.accounts[0].roleArn", "arn:aws-us-gov:iam::123456789012:role/path/fleet"
    )
    accepted(Fleet, data)


def test_credentials_references_of_each_kind_are_accepted() -> None:
    for ref in (
        "env:DRIFTWAVE_TOKEN_A",
        "file:/etc/driftwave/token",
        "secretsmanager:arn:aws:secretsmanager:eu-west-1:123456789012:secret:dw/a-AbCdEf",
    ):
        accepted(Fleet, with_field(fleet(), "spec.clusters[0].agent.credentialsRef", ref))


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("schedule", "0 22 * *", "five cron fields"),
        ("schedule", "0 25 * * *", "not a valid cron expression"),
        ("schedule", "0 0 31 2 *", "never fires"),
        ("duration", "0s", "> 0s"),
        ("duration", "168h", "< 168h"),
        ("duration", "4 hours", "a duration"),
        ("timeZone", "Mars/Olympus", "unknown time zone"),
    ],
)
def test_window_rule(field: str, value: str, fragment: str) -> None:
    data = with_field(fleet(), "spec.clusters[0].maintenanceWindows", [dict(WINDOW)])
    data = with_field(data, f"spec.clusters[0].maintenanceWindows[0].{field}", value)
    refused(Fleet, data, f"spec.clusters[0].maintenanceWindows[0].{field}", fragment)


@pytest.mark.parametrize(
    ("freeze", "where", "fragment"),
    [
        ({"start": "2027-01-04T00:00:00Z", "end": "2026-12-20T00:00:00Z"}, "end", "end > start"),
        ({"start": "2026-12-20T00:00:00Z", "end": "2026-12-20T00:00:00Z"}, "end", "end > start"),
        ({"start": "2026-12-20", "end": "2027-01-04T00:00:00Z"}, "start", "RFC 3339"),
        ({"start": "2026-12-20T00:00:00", "end": "2027-01-04T00:00:00Z"}, "start", "offset"),
        ({"start": "2026-02-30T00:00:00Z", "end": "2027-01-04T00:00:00Z"}, "start", "real date"),
    ],
)
def test_freeze_rule(freeze: dict[str, str], where: str, fragment: str) -> None:
    data = with_field(fleet(), "spec.freezes", [freeze])
    refused(Fleet, data, f"spec.freezes[0].{where}", fragment)


def test_freeze_times_parse_with_offsets() -> None:
    data = with_field(
        fleet(),
        "spec.freezes",
        [{"start": "2026-12-20T00:00:00+01:00", "end": "2026-12-21T00:00:00Z"}],
    )
    freeze = accepted(Fleet, data).spec.freezes[0]
    assert freeze.start_time().utcoffset() is not None
    assert (freeze.end_time() - freeze.start_time()).total_seconds() == 25 * 3600


@pytest.mark.parametrize(
    "agent",
    [
        {"endpoint": "http://127.0.0.1:9101", "credentialsRef": "env:T"},
        {"endpoint": "http://[::1]:9101", "credentialsRef": "env:T"},
        {"endpoint": "http://localhost:9101", "credentialsRef": "env:T"},
        {
            "endpoint": "https://agent.prod-1.example.internal:9443",
            "credentialsRef": "env:T",
            "caRef": "file:/etc/driftwave/agent-ca/prod-1.crt",
            "clientCertificateRef": "file:/etc/driftwave/client/tls.crt",
            "clientKeyRef": "secretsmanager:arn:aws:secretsmanager:us-east-1:123456789012:"
            "secret:fleet-client-key",
        },
    ],
)
def test_loopback_http_and_https_with_tls_references_are_accepted(agent: dict[str, Any]) -> None:
    parsed = accepted(Fleet, with_field(fleet(), "spec.clusters[0].agent", agent))
    ref = parsed.spec.clusters[0].agent
    assert ref.ca_ref == agent.get("caRef")
    assert ref.client_key_ref == agent.get("clientKeyRef")
