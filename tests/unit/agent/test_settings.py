"""The agent's settings (:mod:`agent.settings`): read from the environment, the command line's
values over it, and a bad value named with its variable (or option) and the rule."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from agent.settings import VARIABLES, AgentSettingsError, load_agent_settings
from driftwave.cli import app

ALL = (
    "DRIFTWAVE_AGENT_TOKEN",
    "POD_NAME",
    "POD_NAMESPACE",
    "DRIFTWAVE_CLUSTER_NAME",
    "AWS_REGION",
    "AWS_PROFILE",
    "DRIFTWAVE_INTERRUPTION_QUEUE",
    "CLUSTER_CA_BUNDLE",
    "DRIFTWAVE_AGENT_TLS_CERT_FILE",
    "DRIFTWAVE_AGENT_TLS_KEY_FILE",
    "DRIFTWAVE_AGENT_CLIENT_CA_FILE",
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ALL:
        monkeypatch.delenv(name, raising=False)


def test_each_setting_reads_its_variable() -> None:
    assert sorted(VARIABLES.values()) == sorted(ALL)


def test_the_defaults_without_an_environment() -> None:
    settings = load_agent_settings()
    assert settings.token == ""
    assert settings.pod_name == ""
    assert settings.lease_namespace == "kube-system"
    assert settings.cluster_name is None
    assert settings.region is None
    assert settings.cluster_ca_bundle is None
    assert (settings.tls_cert_file, settings.tls_key_file, settings.client_ca_file) == (
        None,
        None,
        None,
    )


def test_the_environment_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DRIFTWAVE_AGENT_TOKEN", "s3cret")
    monkeypatch.setenv("POD_NAME", "agent-0")
    monkeypatch.setenv("POD_NAMESPACE", "driftwave")
    monkeypatch.setenv("DRIFTWAVE_CLUSTER_NAME", "prod-1")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_PROFILE", "ops")
    monkeypatch.setenv("DRIFTWAVE_INTERRUPTION_QUEUE", "prod-1-interruptions")
    monkeypatch.setenv("CLUSTER_CA_BUNDLE", "Q0E=")
    monkeypatch.setenv("DRIFTWAVE_AGENT_TLS_CERT_FILE", "/var/run/driftwave/tls/tls.crt")
    monkeypatch.setenv("DRIFTWAVE_AGENT_TLS_KEY_FILE", "/var/run/driftwave/tls/tls.key")
    monkeypatch.setenv("DRIFTWAVE_AGENT_CLIENT_CA_FILE", "/var/run/driftwave/client-ca/ca.crt")
    settings = load_agent_settings()
    assert (settings.token, settings.pod_name, settings.lease_namespace) == (
        "s3cret",
        "agent-0",
        "driftwave",
    )
    assert (settings.cluster_name, settings.region, settings.profile) == (
        "prod-1",
        "eu-west-1",
        "ops",
    )
    assert settings.interruption_queue == "prod-1-interruptions"
    assert settings.cluster_ca_bundle == "Q0E="
    assert str(settings.tls_cert_file) == "/var/run/driftwave/tls/tls.crt"
    assert str(settings.tls_key_file) == "/var/run/driftwave/tls/tls.key"
    assert str(settings.client_ca_file) == "/var/run/driftwave/client-ca/ca.crt"


def test_an_empty_variable_counts_as_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POD_NAMESPACE", "")
    monkeypatch.setenv("DRIFTWAVE_CLUSTER_NAME", "")
    settings = load_agent_settings()
    assert (settings.lease_namespace, settings.cluster_name) == ("kube-system", None)


def test_the_command_line_beats_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POD_NAMESPACE", "from-env")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    settings = load_agent_settings({"lease_namespace": "from-cli"})
    assert (settings.lease_namespace, settings.region) == ("from-cli", "eu-west-1")


def test_a_bad_variable_is_named_with_the_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POD_NAMESPACE", "Not_A_Namespace")
    with pytest.raises(AgentSettingsError) as caught:
        load_agent_settings()
    assert str(caught.value).startswith("bad setting POD_NAMESPACE: 'Not_A_Namespace' (rule: ")
    assert "a Kubernetes namespace" in str(caught.value)


def test_a_bad_option_is_named_as_the_option() -> None:
    with pytest.raises(AgentSettingsError, match=r"^bad setting --lease-namespace: 'x_' \(rule"):
        load_agent_settings({"lease_namespace": "x_"})


def test_serve_exits_1_naming_a_bad_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Checked before the cluster is reached: no kubeconfig or service account is needed."""
    monkeypatch.setenv("POD_NAMESPACE", "Bad")
    result = CliRunner().invoke(
        app, ["agent", "serve", "--in-cluster", "--cluster-name", "prod-1", "--port", "0"]
    )
    assert result.exit_code == 1
    assert "error: bad setting POD_NAMESPACE: 'Bad' (rule: a Kubernetes namespace" in result.output
