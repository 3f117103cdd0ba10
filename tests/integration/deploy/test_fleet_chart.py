"""The fleet's Helm chart through the real helm: ``helm lint --strict`` passes for each value
set (minimal; full with OIDC, ingress, monitoring and agent CAs; the team's existing Secrets;
everything optional switched off); ``helm template`` renders what the golden files hold, objects
valid against the Kubernetes 1.31 schemas, the migrations hook with a database URL it can read
on a first install, pods with no Kubernetes rights and no token, hardened containers, container
arguments the real CLI accepts, the sign-on file as the API reads it, NetworkPolicies per
component, and alerts on metrics the code exports; the values schema and the templates make
helm refuse bad values, naming the field and never printing a secret."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from typer.testing import CliRunner

from driftwave.cli import app
from fleet.api.authconfig import load_auth_config
from tests.integration.deploy.fleet import (
    EXISTING,
    FULL,
    GOLDEN,
    MINIMAL,
    OFF,
    RELEASE,
    VALUE_SETS,
    by_kind,
    hook,
    named,
    pod_specs,
)
from tests.support.helm import Helm, HelmError
from tests.support.promql import exported_metrics, unexported

SETS = list(VALUE_SETS.values())
IDS = list(VALUE_SETS)
MONITORING = {"ServiceMonitor", "PrometheusRule"}
"""The prometheus-operator's kinds (not in Kubernetes' own schemas)."""


def objects(helm: Helm, values: dict[str, Any]) -> list[dict[str, Any]]:
    return helm.template(values, release=RELEASE, namespace=RELEASE)


@pytest.mark.parametrize("values", SETS, ids=IDS)
def test_helm_lint_strict_passes(fleet_helm: Helm, values: dict[str, Any]) -> None:
    report = fleet_helm.lint(values)
    assert "1 chart(s) linted, 0 chart(s) failed" in report, report


@pytest.mark.parametrize("name", IDS)
def test_helm_template_renders_the_golden_files(fleet_helm: Helm, name: str) -> None:
    text = fleet_helm.rendered(VALUE_SETS[name], release=RELEASE, namespace=RELEASE)
    golden = GOLDEN / f"fleet-{name}.yaml"
    if os.environ.get("DRIFTWAVE_UPDATE_GOLDEN") == "1":
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text)
    assert golden.is_file(), f"no {golden.name}: see tests/integration/deploy/fleet.py"
    assert text == golden.read_text(), (
        f"the chart renders other than {golden.name}; if on purpose, regenerate (fleet.py)"
    )


@pytest.mark.parametrize("values", SETS, ids=IDS)
def test_every_object_is_valid_kubernetes(fleet_helm: Helm, values: dict[str, Any]) -> None:
    docs = objects(fleet_helm, values)
    kinds = {d["kind"] for d in docs}
    assert {"Deployment", "Job", "Service"} <= kinds
    for doc in docs:
        assert doc["metadata"]["namespace"] == RELEASE, doc["kind"]
        if doc["kind"] not in MONITORING:
            kubernetes_validate.validate(doc, "1.31", strict=True)


def test_the_full_set_renders_every_kind(fleet_helm: Helm) -> None:
    kinds = sorted(d["kind"] for d in objects(fleet_helm, FULL))
    assert kinds == sorted(
        ["ConfigMap", "Ingress", "Job", "PrometheusRule", "Service", "ServiceMonitor"]
        + ["Deployment"] * 3 + ["NetworkPolicy"] * 4 + ["PodDisruptionBudget"] * 3
        + ["Secret"] * 3 + ["ServiceAccount"] * 2
    )  # fmt: skip


@pytest.mark.parametrize("values", SETS, ids=IDS)
def test_no_kubernetes_rights_and_no_token(fleet_helm: Helm, values: dict[str, Any]) -> None:
    """The scheduler's lease is a row in the fleet database: nothing of the fleet talks to
    its own cluster's API server, so no Role, binding or token exists for it."""
    docs = objects(fleet_helm, values)
    rbac = {"Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"}
    assert not [d for d in docs if d["kind"] in rbac]
    for account in by_kind(docs, "ServiceAccount"):
        assert account["automountServiceAccountToken"] is False
    specs = pod_specs(docs)
    assert len(specs) == 4
    for name, spec in specs.items():
        assert spec["automountServiceAccountToken"] is False, name
        assert not [v for v in spec.get("volumes", []) if "projected" in v], name


@pytest.mark.parametrize("values", SETS, ids=IDS)
def test_hardened_pods(fleet_helm: Helm, values: dict[str, Any]) -> None:
    for name, spec in pod_specs(objects(fleet_helm, values)).items():
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        assert spec["securityContext"]["runAsUser"] == 65532, name
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        tmp = next(v for v in spec["volumes"] if v["name"] == "tmp")
        assert tmp == {"name": "tmp", "emptyDir": {}}, name
        for container in spec["containers"]:
            context = container["securityContext"]
            assert context["readOnlyRootFilesystem"] is True, name
            assert context["allowPrivilegeEscalation"] is False, name
            assert context["capabilities"]["drop"] == ["ALL"], name
            assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"], name
            assert container["resources"]["requests"]["memory"], name
            assert container["resources"]["limits"]["memory"], name


def test_the_deployments(fleet_helm: Helm) -> None:
    docs = objects(fleet_helm, FULL)
    api = named(docs, "Deployment", "driftwave-api")
    scheduler = named(docs, "Deployment", "driftwave-scheduler")
    worker = named(docs, "Deployment", "driftwave-worker")
    assert (api["spec"]["replicas"], scheduler["spec"]["replicas"]) == (2, 2)
    assert worker["spec"]["replicas"] == 3, "from values"
    container = worker["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"] == FULL["worker"]["resources"]
    assert container["args"][container["args"].index("--concurrency") + 1] == "8"
    probe = api["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]
    assert probe["httpGet"] == {"path": "/readyz", "port": "http"}
    assert container["image"] == "images.example.com/platform/driftwave:0.1.0"
    default = named(objects(fleet_helm, MINIMAL), "Deployment", "driftwave-api")
    assert default["spec"]["template"]["spec"]["containers"][0]["image"] == "driftwave:0.1.0"
    service = named(docs, "Service", "driftwave-api")
    assert service["spec"]["selector"] == api["spec"]["selector"]["matchLabels"]


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_the_migrations_hook_can_read_the_database_url_on_a_first_install(
    fleet_helm: Helm,
) -> None:
    """Hooks run before the release's objects exist: the Job's Secret (and ServiceAccount and
    NetworkPolicy) are hooks of a lower weight, deleted once the hooks ran."""
    docs = objects(fleet_helm, MINIMAL)
    job = named(docs, "Job", "driftwave-migrate")
    assert hook(job) == {
        "helm.sh/hook": "pre-install,pre-upgrade",
        "helm.sh/hook-weight": "0",
        "helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded",
    }
    spec = job["spec"]["template"]["spec"]
    container = spec["containers"][0]
    assert container["args"] == ["db", "upgrade"]
    ref = env_of(container)["DRIFTWAVE_DATABASE_URL"]["secretKeyRef"]
    secret = named(docs, "Secret", ref["name"])
    account = named(docs, "ServiceAccount", spec["serviceAccountName"])
    policy = named(docs, "NetworkPolicy", "driftwave-migrate")
    for made_first in (secret, account, policy):
        assert hook(made_first) == {
            "helm.sh/hook": "pre-install,pre-upgrade",
            "helm.sh/hook-weight": "-10",
            "helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded,hook-failed",
        }, made_first["kind"]
    assert secret["stringData"] == {"database-url": MINIMAL["database"]["url"]}
    release_secret = named(docs, "Secret", "driftwave")
    assert not hook(release_secret)
    assert set(release_secret["stringData"]) == {"database-url", "broker-url"}
    existing = objects(fleet_helm, EXISTING)
    job = named(existing, "Job", "driftwave-migrate")
    assert env_of(job["spec"]["template"]["spec"]["containers"][0])["DRIFTWAVE_DATABASE_URL"] == {
        "secretKeyRef": {"name": "fleet-database", "key": "dsn"}
    }
    assert not by_kind(existing, "Secret"), "the team's Secrets: the chart makes none"
    assert job["spec"]["template"]["spec"]["serviceAccountName"] == "platform-fleet"


def test_the_container_arguments_are_the_real_commands(fleet_helm: Helm) -> None:
    """Each container's command line names a real ``driftwave`` command and only its options
    (``--help`` after them: the parser refuses an unknown one before printing the help)."""
    runner = CliRunner()
    commands = set()
    for name, spec in pod_specs(objects(fleet_helm, FULL)).items():
        args = [str(a) for a in spec["containers"][0]["args"]]
        commands.add(args[0])
        result = runner.invoke(app, [*args, "--help"])
        assert result.exit_code == 0, f"{name}: {args}\n{result.output}"
    assert commands == {"api", "scheduler", "worker", "db"}
    refused = runner.invoke(app, ["worker", "--concurency", "8", "--help"])
    assert refused.exit_code != 0


def test_the_sign_on_file_and_secrets_reach_the_api(fleet_helm: Helm) -> None:
    docs = objects(fleet_helm, FULL)
    config = yaml.safe_load(named(docs, "ConfigMap", "driftwave-auth")["data"]["auth.yaml"])
    assert config == {
        "oidc": {"issuer": "https://login.example.com", "clientId": "driftwave",
                 "groupsClaim": "groups", "usernameClaim": "email",
                 "caFile": "/etc/driftwave/auth/issuer-ca.pem"},
        "groups": FULL["auth"]["groups"],
    }  # fmt: skip
    spec = named(docs, "Deployment", "driftwave-api")["spec"]["template"]["spec"]
    container = spec["containers"][0]
    env = env_of(container)
    assert env["DRIFTWAVE_AUTH_CONFIG"] == "/etc/driftwave/auth/auth.yaml"
    assert env["DRIFTWAVE_OIDC_CLIENT_SECRET"] == {
        "secretKeyRef": {"name": "driftwave", "key": "oidc-client-secret"}
    }
    assert env["DRIFTWAVE_SCHEDULER_INTERVAL"] == "2"
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts["auth"] == "/etc/driftwave/auth"
    assert mounts["agent-ca"] == "/etc/driftwave/agent-ca"
    assert mounts["agent-client"] == "/etc/driftwave/agent-client"
    cas = named(docs, "Secret", "driftwave-agent-ca")
    assert set(cas["stringData"]) == {"prod.pem", "staging.pem"}
    scheduler = named(docs, "Deployment", "driftwave-scheduler")["spec"]["template"]["spec"]
    assert "DRIFTWAVE_AUTH_CONFIG" not in env_of(scheduler["containers"][0])
    existing = named(objects(fleet_helm, EXISTING), "Deployment", "driftwave-api")
    env = env_of(existing["spec"]["template"]["spec"]["containers"][0])
    assert env["DRIFTWAVE_OIDC_CLIENT_SECRET"] == {
        "secretKeyRef": {"name": "fleet-oidc", "key": "clientSecret"}
    }


@pytest.mark.parametrize("values", SETS, ids=IDS)
def test_every_value_set_gives_the_api_a_sign_on_file_it_reads(
    fleet_helm: Helm, values: dict[str, Any], tmp_path: Path
) -> None:
    """The API listens on every address in the pod, which it does only with authentication on:
    without an issuer the file turns on the database's tokens alone."""
    docs = objects(fleet_helm, values)
    for key, text in named(docs, "ConfigMap", "driftwave-auth")["data"].items():
        # as mounted at /etc/driftwave/auth in the pod
        (tmp_path / key).write_text(text.replace("/etc/driftwave/auth/", f"{tmp_path}/"))
    config = load_auth_config(tmp_path / "auth.yaml")
    issuer = values.get("auth", {}).get("oidc", {}).get("issuer")
    assert (config.oidc.issuer if config.oidc else None) == issuer
    api = named(docs, "Deployment", "driftwave-api")["spec"]["template"]["spec"]
    assert env_of(api["containers"][0])["DRIFTWAVE_AUTH_CONFIG"] == "/etc/driftwave/auth/auth.yaml"


def egress_ports(policy: dict[str, Any]) -> set[int]:
    return {p["port"] for rule in policy["spec"]["egress"] for p in rule["ports"]}


def test_network_policies_per_component(fleet_helm: Helm) -> None:
    docs = objects(fleet_helm, FULL)
    api = named(docs, "NetworkPolicy", "driftwave-api")
    assert api["spec"]["ingress"] == [{
        "ports": [{"port": 8080, "protocol": "TCP"}],
        "from": FULL["networkPolicy"]["apiFrom"],
    }]  # fmt: skip
    assert egress_ports(api) == {53, 5432, 443, 8080}
    scheduler = named(docs, "NetworkPolicy", "driftwave-scheduler")
    assert scheduler["spec"]["ingress"] == [], "nothing connects to the scheduler"
    assert egress_ports(scheduler) == {53, 5432, 6379}
    worker = named(docs, "NetworkPolicy", "driftwave-worker")
    assert egress_ports(worker) == {53, 5432, 6379, 443, 8080}
    assert egress_ports(named(docs, "NetworkPolicy", "driftwave-migrate")) == {53, 5432}
    database = next(r for r in scheduler["spec"]["egress"] if r["ports"][0]["port"] == 5432)
    assert database["to"] == [{"ipBlock": {"cidr": "10.20.0.0/16"}}]
    off = objects(fleet_helm, OFF)
    assert not by_kind(off, "NetworkPolicy")
    assert not by_kind(off, "PodDisruptionBudget")


def test_every_alert_reads_an_exported_metric(fleet_helm: Helm, tmp_path: Path) -> None:
    rule = named(objects(fleet_helm, FULL), "PrometheusRule", "driftwave")
    alerts = {r["alert"]: r["expr"] for g in rule["spec"]["groups"] for r in g["rules"]}
    assert set(alerts) == {"DriftwaveSchedulerHeartbeatMissing", "DriftwaveRolloutsStalled",
                           "DriftwaveRolloutHalted", "DriftwaveGateFailed",
                           "DriftwaveAgentUnreachable"}  # fmt: skip
    assert unexported(alerts.values(), exported_metrics(tmp_path)) == {}
    for expr in alerts.values():
        assert 'namespace="driftwave", job="driftwave-api"' in expr, expr
    monitor = named(objects(fleet_helm, FULL), "ServiceMonitor", "driftwave")
    assert monitor["spec"]["endpoints"] == [{"port": "http", "path": "/metrics",
                                             "interval": "30s"}]  # fmt: skip
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"


DB_PASSWORD = "hunter2-db"


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"database": {"url": ""}}, "/database"),
        ({"broker": {"url": ""}}, "/broker"),
        ({"database": {"url": MINIMAL["database"]["url"], "existingSecret": "mine"}},
         "/database/url"),
        ({"databse": {"url": "postgresql://x@y/z"}}, "databse"),
        ({"api": {"replicas": 0}}, "/api/replicas"),
        ({"worker": {"replicas": "two"}}, "/worker/replicas"),
        ({"worker": {"concurrency": 0}}, "/worker/concurrency"),
        ({"image": {"pullPolicy": "Sometimes"}}, "/image/pullPolicy"),
        ({"auth": {"oidc": {"issuer": "https://login.example.com"}}}, "/auth/oidc/clientId"),
        ({"auth": {"oidc": {"issuer": "http://login.example.com", "clientId": "x"}}},
         "/auth/oidc/issuer"),
        ({"auth": {"groups": [{"group": "sre", "role": "root"}]}}, "/auth/groups/0/role"),
        ({"ingress": {"enabled": True}}, "/ingress/host"),
        ({"monitoring": {"interval": "often"}}, "/monitoring/interval"),
        ({"settings": {"PATH": "/tmp"}}, "/settings"),
        ({"settings": {"DRIFTWAVE_DATABASE_URL": "x"}}, "/settings/DRIFTWAVE_DATABASE_URL"),
        ({"networkPolicy": {"database": {"port": 5432, "to": [{"ipBlock": {"cidr": "10.0.0.1"}}]}}},
         "/networkPolicy/database/to/0/ipBlock/cidr"),
        ({"agentTLS": {"caBundles": {"prod.pem": "not a certificate"}}},
         "/agentTLS/caBundles/prod.pem"),
        ({"worker": {"resources": {"requests": {"cpu": "lots"}}}},
         "/worker/resources/requests/cpu"),
    ],
)  # fmt: skip
def test_helm_refuses_bad_values_naming_the_field(
    fleet_helm: Helm, values: dict[str, Any], field: str
) -> None:
    merged = {**MINIMAL, **values}
    for run in (lambda: fleet_helm.template(merged), lambda: fleet_helm.lint(merged)):
        with pytest.raises(HelmError) as refused:
            run()
        assert field in refused.value.output, refused.value.output
        assert DB_PASSWORD not in refused.value.output, "a secret is never printed"


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"database": {"url": f"mysql://fleet:{DB_PASSWORD}@db/fleet"}},
         "database.url: not a PostgreSQL URL (rule: postgresql://USER:PASSWORD@HOST:PORT/DATABASE"),
        ({"broker": {"url": f"amqp://fleet:{DB_PASSWORD}@mq//"}},
         "broker.url: not a Redis URL (rule: redis://[:PASSWORD@]HOST:PORT/DB"),
        ({"auth": {"oidc": {"issuer": "https://login.example.com", "clientId": "driftwave"}}},
         "auth.groups: at least one {group, role} is required with auth.oidc.issuer"),
    ],
)  # fmt: skip
def test_helm_refuses_a_malformed_url_without_printing_it(
    fleet_helm: Helm, values: dict[str, Any], message: str
) -> None:
    """The URLs carry passwords, so the templates check them (a schema pattern's error would
    print the value). helm lint renders in lint mode, where a template's ``fail`` is not an
    error: ``helm template``, ``install`` and ``upgrade`` refuse."""
    with pytest.raises(HelmError) as refused:
        fleet_helm.template({**MINIMAL, **values})
    assert message in refused.value.output, refused.value.output
    assert DB_PASSWORD not in refused.value.output
