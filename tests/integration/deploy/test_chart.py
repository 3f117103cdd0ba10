"""The agent's Helm chart through the real helm: ``helm lint --strict`` passes for the default
values and each interesting set; ``helm template`` renders objects valid against the Kubernetes
1.31 OpenAPI schemas (kubernetes-validate; cert-manager's Certificate, not a Kubernetes kind, is
checked field by field), RBAC that follows the driver, the hardened Deployment serving HTTPS from
its TLS Secret (mutual TLS and cert-manager as values), container arguments the real CLI
accepts, and the NetworkPolicy and PodDisruptionBudget switches; the values schema makes helm
refuse bad values, naming the field.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from tests.support.helm import CHART, Helm, HelmError
from tests.support.tlsca import TestCA

VALUES: dict[str, Any] = {"clusterName": "prod-1", "region": "us-east-1"}
ROLE = "arn:aws:iam::111122223333:role/driftwave-agent"
QUEUE = "https://sqs.us-east-1.amazonaws.com/111122223333/queue"
VALUE_SETS: list[dict[str, Any]] = [
    {},
    {"driver": "karpenter"},
    {"networkPolicy": {"enabled": False}, "podDisruptionBudget": {"enabled": False}},
    {"interruptionQueue": QUEUE,
     "networkPolicy": {"fleetCIDRs": ["10.8.0.0/16", "10.9.0.0/16"]},
     "serviceAccount": {"annotations": {"eks.amazonaws.com/role-arn": ROLE}}},
    {"serviceAccount": {"name": "agent-sa"}, "replicas": 3, "image": {"tag": "1.2.3"},
     "podDisruptionBudget": {"maxUnavailable": "50%"}, "service": {"type": "NodePort"}},
    {"tls": {"secretName": "agent-serving", "clientCA": {"secretName": "fleet-client-ca"},
             "certManager": {"enabled": True, "issuerRef": {"name": "internal-ca"},
                             "dnsNames": ["agent.prod-1.example.internal"],
                             "annotations": {"example.com/owner": "platform"}}}},
]  # fmt: skip
SET_IDS = ["defaults", "karpenter", "switched-off", "irsa-queue-cidrs", "renamed", "mtls-cm"]
CERT_MANAGER = VALUE_SETS[-1]


def objects(helm: Helm, values: dict[str, Any] | None = None, **kw: Any) -> list[dict[str, Any]]:
    return helm.template({**VALUES, **(values or {})}, **kw)


def by_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


@pytest.mark.parametrize("values", VALUE_SETS, ids=SET_IDS)
def test_helm_lint_strict_passes(helm: Helm, values: dict[str, Any]) -> None:
    report = helm.lint({**VALUES, **values})
    assert "1 chart(s) linted, 0 chart(s) failed" in report, report


def test_helm_lint_fails_on_what_the_chart_requires(helm: Helm) -> None:
    with pytest.raises(HelmError, match="clusterName") as failed:
        helm.lint({"region": "us-east-1"})
    assert "1 chart(s) failed" in failed.value.output


@pytest.mark.parametrize("values", VALUE_SETS, ids=SET_IDS)
def test_every_object_is_valid_kubernetes(helm: Helm, values: dict[str, Any]) -> None:
    docs = objects(helm, values)
    kinds = sorted(d["kind"] for d in docs)
    expected = {"ClusterRole", "ClusterRoleBinding", "Deployment", "Role", "RoleBinding",
                "Service", "ServiceAccount"}  # fmt: skip
    assert expected <= set(kinds)
    for doc in docs:
        if doc["kind"] == "Certificate":  # cert-manager's kind: test_cert_manager_certificate
            continue
        kubernetes_validate.validate(doc, "1.31", strict=True)
        if doc["kind"] not in ("ClusterRole", "ClusterRoleBinding"):
            assert doc["metadata"]["namespace"] == "driftwave", doc["kind"]
    assert not by_kind(docs, "CustomResourceDefinition"), "CRDs come from crds/, not templates"


def test_the_crds_come_with_the_chart(helm: Helm) -> None:
    crds = by_kind(objects(helm, include_crds=True), "CustomResourceDefinition")
    names = sorted(c["metadata"]["name"] for c in crds)
    assert names == ["ec2nodeclasses.karpenter.k8s.aws", "nodeclaims.karpenter.sh",
                     "nodepools.karpenter.sh"]  # fmt: skip
    for crd in crds:
        kubernetes_validate.validate(crd, "1.31", strict=True)
    committed = {p.name for p in (CHART / "crds").glob("*.yaml")}
    assert len(committed) == len(crds)


def rules(docs: list[dict[str, Any]], kind: str = "ClusterRole") -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for role in by_kind(docs, kind)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_rbac_follows_the_driver(helm: Helm) -> None:
    native, karpenter = rules(objects(helm)), rules(objects(helm, {"driver": "karpenter"}))
    for granted in (native, karpenter):
        assert ("karpenter.k8s.aws", "ec2nodeclasses", "patch") in granted
        assert ("", "pods", "watch") in granted
        assert not any("*" in rule or rule[2] in ("escalate", "bind") for rule in granted)
        assert not any(resource == "secrets" for _, resource, _ in granted)
    assert ("karpenter.sh", "nodeclaims", "create") in native
    assert ("", "nodes", "delete") in native
    assert ("", "pods/eviction", "create") in native
    assert not {r for r in karpenter if r[2] == "create"}, "karpenter: no creations"
    assert {r for r in karpenter if r[2] not in ("get", "list", "watch")} == {
        ("karpenter.k8s.aws", "ec2nodeclasses", "patch"),
        ("karpenter.sh", "nodeclaims", "delete"),  # a rollback's never-Ready NodeClaims
    }
    assert ("", "pods", "create") not in native, "the agent never makes pods"
    role = by_kind(objects(helm), "Role")[0]
    lease = next(r for r in role["rules"] if r.get("resourceNames"))
    assert lease["resourceNames"] == ["driftwave-agent"]
    assert rules(objects(helm), "Role") == {
        ("coordination.k8s.io", "leases", "create"),
        ("coordination.k8s.io", "leases", "get"),
        ("coordination.k8s.io", "leases", "update"),
    }


def test_the_bindings_name_the_release_and_its_service_account(helm: Helm) -> None:
    docs = objects(helm, {"serviceAccount": {"name": "agent-sa"}}, release="dw", namespace="ops")
    assert [a["metadata"]["name"] for a in by_kind(docs, "ServiceAccount")] == ["agent-sa"]
    for kind, role in (("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")):
        binding = by_kind(docs, kind)[0]
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": role,
                                      "name": "dw"}  # fmt: skip
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "agent-sa",
                                        "namespace": "ops"}]  # fmt: skip
    pod = by_kind(docs, "Deployment")[0]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "agent-sa"
    no_account = objects(helm, {"serviceAccount": {"create": False}})
    assert not by_kind(no_account, "ServiceAccount")


def test_the_deployment(helm: Helm) -> None:
    deployment = by_kind(objects(helm), "Deployment")[0]
    spec = deployment["spec"]["template"]["spec"]
    container = spec["containers"][0]
    assert deployment["spec"]["replicas"] == 2
    assert container["image"] == "driftwave:0.1.0", "the tag defaults to the appVersion"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert "--leader-elect" in container["args"]
    assert container["args"][container["args"].index("--lease-namespace") + 1] == "driftwave"
    assert container["args"][container["args"].index("--driver") + 1] == "native"
    token = next(v for v in spec["volumes"] if v["name"] == "token")
    assert token["secret"] == {"secretName": "driftwave-agent-token",
                               "items": [{"key": "token", "path": "token"}]}  # fmt: skip


def test_the_agent_serves_https_from_its_tls_secret(helm: Helm) -> None:
    pod = by_kind(objects(helm), "Deployment")[0]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    args = container["args"]
    assert args[args.index("--tls-cert-file") + 1] == "/var/run/driftwave/tls/tls.crt"
    assert args[args.index("--tls-key-file") + 1] == "/var/run/driftwave/tls/tls.key"
    assert "--client-ca-file" not in args
    assert args[args.index("--host") + 1] == "0.0.0.0"
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"]["scheme"] == "HTTPS"
    tls = next(v for v in pod["volumes"] if v["name"] == "tls")
    assert tls["secret"]["secretName"] == "driftwave-agent-tls"
    mount = next(m for m in container["volumeMounts"] if m["name"] == "tls")
    assert mount["mountPath"] == "/var/run/driftwave/tls"
    assert "subPath" not in mount, "a subPath mount is never updated: no rotation"
    service = by_kind(objects(helm), "Service")[0]
    assert service["spec"]["ports"][0]["targetPort"] == "https"
    assert not by_kind(objects(helm), "Certificate")

    docs = objects(helm, CERT_MANAGER)
    pod = by_kind(docs, "Deployment")[0]["spec"]["template"]["spec"]
    args = pod["containers"][0]["args"]
    assert args[args.index("--client-ca-file") + 1] == "/var/run/driftwave/client-ca/ca.crt"
    volumes = {v["name"]: v.get("secret") for v in pod["volumes"]}
    assert volumes["tls"]["secretName"] == "agent-serving"
    assert volumes["client-ca"] == {"secretName": "fleet-client-ca",
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}]}  # fmt: skip


def test_cert_manager_certificate(helm: Helm) -> None:
    (certificate,) = by_kind(objects(helm, CERT_MANAGER), "Certificate")
    assert certificate["apiVersion"] == "cert-manager.io/v1"
    assert certificate["metadata"]["annotations"] == {"example.com/owner": "platform"}
    spec = certificate["spec"]
    assert spec["secretName"] == "agent-serving"
    assert spec["issuerRef"] == {"name": "internal-ca", "kind": "ClusterIssuer",
                                 "group": "cert-manager.io"}  # fmt: skip
    assert spec["dnsNames"] == ["driftwave-agent", "driftwave-agent.driftwave",
                                "driftwave-agent.driftwave.svc",
                                "agent.prod-1.example.internal"]  # fmt: skip
    assert spec["usages"] == ["server auth"]
    assert spec["privateKey"]["rotationPolicy"] == "Always"
    no_issuer = {"tls": {"certManager": {"enabled": True}}}
    with pytest.raises(HelmError, match=r"tls\.certManager\.issuerRef\.name is required"):
        objects(helm, no_issuer)


def test_the_container_arguments_are_the_real_commands(helm: Helm, tmp_path: Path) -> None:
    docs = objects(helm, {**CERT_MANAGER, "interruptionQueue": QUEUE})
    container = by_kind(docs, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]
    args = [str(a) for a in container["args"]]
    assert args[args.index("--interruption-queue") + 1] == QUEUE
    token = Path(args[args.index("--token-file") + 1])
    args[args.index("--token-file") + 1] = __file__  # a readable file in place of the Secret
    ca = TestCA(tmp_path)  # and real TLS files in place of the mounted ones
    served = ca.issue("agent")
    for option, path in (("--tls-cert-file", served.cert), ("--tls-key-file", served.key),
                         ("--client-ca-file", ca.ca_file)):  # fmt: skip
        args[args.index(option) + 1] = str(path)
    done = subprocess.run(
        [sys.executable, "-m", "driftwave", *args],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert "not running in a cluster" in done.stderr, done.stderr
    assert token == Path("/var/run/driftwave/token")


def test_networkpolicy_and_pdb_can_be_turned_off(helm: Helm) -> None:
    assert by_kind(objects(helm), "NetworkPolicy")
    assert by_kind(objects(helm), "PodDisruptionBudget")
    off = {"networkPolicy": {"enabled": False}, "podDisruptionBudget": {"enabled": False}}
    docs = objects(helm, off)
    assert not by_kind(docs, "NetworkPolicy")
    assert not by_kind(docs, "PodDisruptionBudget")
    policy = by_kind(objects(helm, {"networkPolicy": {"fleetCIDRs": ["10.8.0.0/16"]}}),
                     "NetworkPolicy")  # fmt: skip
    sources = policy[0]["spec"]["ingress"][0]["from"]
    assert {"ipBlock": {"cidr": "10.8.0.0/16"}} in sources
    assert {"namespaceSelector": {"matchLabels": {
        "kubernetes.io/metadata.name": "driftwave-fleet"}}} in sources  # fmt: skip


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"clusterName": ""}, "clusterName"),
        ({"clusterName": "prod 1"}, "clusterName"),
        ({"driver": "kops"}, "driver"),
        ({"region": "US East"}, "region"),
        ({"replicas": 0}, "replicas"),
        ({"replicas": "two"}, "replicas"),
        ({"port": 70000}, "port"),
        ({"clustername": "prod-1"}, "clustername"),
        ({"networkPolicy": {"fleetCIDRs": ["10.8.0.0"]}}, "fleetCIDRs"),
        ({"networkPolicy": {"enabeld": False}}, "enabeld"),
        ({"token": {"secretName": ""}}, "secretName"),
        ({"interruptionQueue": "sqs://queue"}, "interruptionQueue"),
        ({"tls": {"secretName": "Agent TLS"}}, "secretName"),
        ({"tls": {"clientCa": {"secretName": "ca"}}}, "clientCa"),
        ({"tls": {"certManager": {"duration": "90 days"}}}, "duration"),
        ({"driver": "karpenter", "interruptionQueue": QUEUE}, "interruptionQueue"),
        ({"image": {"pullPolicy": "Sometimes"}}, "pullPolicy"),
        ({"resources": {"requests": {"cpu": "lots"}}}, "cpu"),
        ({"podDisruptionBudget": {"maxUnavailable": "half"}}, "maxUnavailable"),
    ],
)
def test_helm_refuses_bad_values_naming_the_field(
    helm: Helm, values: dict[str, Any], field: str
) -> None:
    merged = {**VALUES, **values}
    for run in (lambda: helm.template(merged), lambda: helm.lint(merged)):
        with pytest.raises(HelmError, match="values don't meet the specifications") as refused:
            run()
        assert field in refused.value.output, refused.value.output
