"""PodSpec, PodStatus, Pod and PodTemplateSpec: structure, rules, aliases and passthrough fields."""

from __future__ import annotations

from typing import Any

import pytest

from agent.api.kube import Container, Pod, PodSpec, PodStatus, PodTemplateSpec, Toleration
from common.kubemodel import ObjectMeta, parse_manifest

from .helpers import PAUSE, container, issues, only_issue, pod, pod_issue, pod_ok


def test_a_pod_needs_at_least_one_container() -> None:
    issue = pod_issue(containers=[])
    assert issue.path == "spec.containers"
    assert "a pod must have at least one container" in issue.message
    data = pod()
    del data["spec"]["containers"]
    missing = only_issue(Pod, data)
    assert (missing.path, missing.message) == ("spec.containers", "required field is missing")


def test_distinct_container_names_are_accepted() -> None:
    parsed = pod_ok(containers=[container("a"), container("b")], initContainers=[container("c")])
    assert [c.name for c in parsed.spec.containers] == ["a", "b"]


def test_a_container_name_used_twice_is_refused() -> None:
    issue = pod_issue(containers=[container("a"), container("a")])
    assert issue.path == "spec.containers[1].name"
    assert "'a' is used twice" in issue.message


def test_an_init_container_cannot_reuse_a_container_name() -> None:
    issue = pod_issue(initContainers=[container("setup"), container("app")])
    assert issue.path == "spec.initContainers[1].name"


@pytest.mark.parametrize("policy", ["Always", "OnFailure", "Never"])
def test_pod_restart_policies(policy: str) -> None:
    assert pod_ok(restartPolicy=policy).spec.restart_policy == policy


def test_an_unknown_pod_restart_policy_is_refused() -> None:
    issue = pod_issue(restartPolicy="Sometimes")
    assert issue.path == "spec.restartPolicy"
    assert issue.message.startswith("unsupported value")


def test_sidecars_are_init_containers_that_restart_always() -> None:
    parsed = pod_ok(
        initContainers=[container("setup"), container("proxy", restartPolicy="Always")],
    )
    assert [c.name for c in parsed.spec.sidecar_containers] == ["proxy"]
    assert pod_ok().spec.sidecar_containers == []


SCHEDULING: dict[str, Any] = {
    "nodeSelector": {"karpenter.sh/capacity-type": "spot"},
    "priority": 1000,
    "priorityClassName": "high",
    "schedulerName": "default-scheduler",
    "nodeName": "ip-10-0-1-2.us-west-2.compute.internal",
    "terminationGracePeriodSeconds": 30,
    "serviceAccountName": "web",
    "volumes": [{"name": "data", "emptyDir": {"sizeLimit": "1Gi"}}],
}

PASSTHROUGH: dict[str, Any] = {
    "activeDeadlineSeconds": 600,
    "automountServiceAccountToken": False,
    "dnsConfig": {"options": [{"name": "ndots", "value": "2"}]},
    "dnsPolicy": "ClusterFirst",
    "enableServiceLinks": True,
    "ephemeralContainers": [{"name": "debug", "image": "busybox"}],
    "hostAliases": [{"ip": "10.0.0.1", "hostnames": ["db"]}],
    "hostIPC": False,
    "hostNetwork": False,
    "hostPID": False,
    "hostUsers": True,
    "hostname": "web-0",
    "hostnameOverride": "web-zero",
    "imagePullSecrets": [{"name": "regcred"}],
    "os": {"name": "linux"},
    "preemptionPolicy": "PreemptLowerPriority",
    "readinessGates": [{"conditionType": "example.com/ready"}],
    "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}],
    "resources": {"limits": {"cpu": "2"}},
    "runtimeClassName": "runc",
    "schedulingGates": [{"name": "example.com/wait"}],
    "securityContext": {"runAsUser": 1000, "fsGroup": 2000},
    "serviceAccount": "web",
    "setHostnameAsFQDN": False,
    "shareProcessNamespace": False,
    "subdomain": "web",
}


def test_typed_scheduling_fields_are_read() -> None:
    parsed = pod_ok(**SCHEDULING)
    assert parsed.spec.node_selector == {"karpenter.sh/capacity-type": "spot"}
    assert parsed.spec.priority == 1000
    assert parsed.spec.termination_grace_period_seconds == 30
    assert parsed.spec.volumes[0]["emptyDir"] == {"sizeLimit": "1Gi"}


def test_every_other_pod_spec_field_is_accepted_and_kept() -> None:
    parsed = pod_ok(**PASSTHROUGH)
    assert parsed.spec.host_ipc is False
    assert parsed.spec.host_pid is False
    assert parsed.spec.set_hostname_as_fqdn is False
    assert parsed.spec.security_context == {"runAsUser": 1000, "fsGroup": 2000}


@pytest.mark.parametrize("wrong", ["hostIpc", "hostPid", "setHostnameAsFqdn", "host_ipc"])
def test_misspelt_aliases_are_refused(wrong: str) -> None:
    issue = pod_issue(**{wrong: False})
    assert issue.path == f"spec.{wrong}"
    assert issue.message.startswith("unknown field")


def test_snake_case_names_are_refused_in_manifests() -> None:
    found = issues(Pod, pod(node_selector={"a": "b"}))
    assert [(i.path, i.message.split(":")[0]) for i in found] == [
        ("spec.node_selector", "unknown field")
    ]
    data = pod()
    data["api_version"] = data.pop("apiVersion")
    paths = sorted(i.path for i in issues(Pod, data))
    assert paths == ["apiVersion", "api_version"]


@pytest.mark.parametrize(
    ("fields", "path", "message"),
    [
        ({"priority": "100"}, "spec.priority", "must be an integer"),
        (
            {"nodeSelector": {"zone": 1}},
            "spec.nodeSelector.zone",
            'must be a string: quote it ("1")',
        ),
        ({"tolerations": {"key": "a"}}, "spec.tolerations", "must be a list"),
        ({"volumes": ["data"]}, "spec.volumes[0]", "must be a mapping"),
    ],
)
def test_strict_types(fields: dict[str, Any], path: str, message: str) -> None:
    issue = pod_issue(**fields)
    assert (issue.path, issue.message) == (path, message)


@pytest.mark.parametrize(("field", "value"), [("apiVersion", "v2"), ("kind", "Deployment")])
def test_a_pod_must_say_it_is_a_v1_pod(field: str, value: str) -> None:
    data = pod()
    data[field] = value
    issue = only_issue(Pod, data)
    assert issue.path == field
    assert issue.message.startswith("unsupported value")


STATUS: dict[str, Any] = {
    "phase": "Running",
    "conditions": [
        {
            "type": "PodScheduled",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": "2025-05-01T10:00:00Z",
        }
    ],
    "hostIP": "10.0.1.2",
    "hostIPs": [{"ip": "10.0.1.2"}],
    "podIP": "10.0.1.77",
    "podIPs": [{"ip": "10.0.1.77"}, {"ip": "2600:1f14::7"}],
    "startTime": "2025-05-01T10:00:00Z",
    "qosClass": "Burstable",
    "nominatedNodeName": "ip-10-0-1-2.us-west-2.compute.internal",
    "observedGeneration": 1,
    "containerStatuses": [{"name": "app", "ready": True, "restartCount": 0}],
    "initContainerStatuses": [],
    "resize": "InProgress",
}


def test_pod_status_reads_ips_phase_and_conditions() -> None:
    data = pod()
    data["status"] = STATUS
    parsed = parse_manifest(Pod, data)
    assert parsed.to_manifest() == data
    status = parsed.status
    assert status is not None
    assert status.host_ip == "10.0.1.2"
    assert [ip.ip for ip in status.pod_ips] == ["10.0.1.77", "2600:1f14::7"]
    assert status.pod_ip == "10.0.1.77"
    assert status.conditions[0].last_probe_time is None
    assert status.qos_class == "Burstable"


@pytest.mark.parametrize(
    ("field", "value", "path"),
    [
        ("phase", "Sleeping", "status.phase"),
        ("qosClass", "Premium", "status.qosClass"),
        ("podIPs", ["10.0.1.77"], "status.podIPs[0]"),
        ("podIps", [], "status.podIps"),
        ("hostIp", "10.0.1.2", "status.hostIp"),
    ],
)
def test_pod_status_refuses_wrong_values_and_names(field: str, value: Any, path: str) -> None:
    data = pod()
    data["status"] = {field: value}
    assert only_issue(Pod, data).path == path


def test_python_code_builds_pods_by_snake_case_names() -> None:
    built = Pod(
        api_version="v1",
        kind="Pod",
        metadata=ObjectMeta(name="p"),
        spec=PodSpec(
            containers=[Container(name="app", image=PAUSE)],
            tolerations=[Toleration(operator="Exists")],
            host_pid=True,
        ),
        status=PodStatus(pod_ip="10.0.0.1"),
    )
    assert built.to_manifest() == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {
            "containers": [{"name": "app", "image": PAUSE}],
            "tolerations": [{"operator": "Exists"}],
            "hostPID": True,
        },
        "status": {"podIP": "10.0.0.1"},
    }


def test_a_pod_template_needs_a_spec_and_defaults_its_metadata() -> None:
    template = parse_manifest(PodTemplateSpec, {"spec": {"containers": [container()]}})
    assert template.metadata.labels == {}
    assert template.to_manifest() == {"spec": {"containers": [container()]}}
    issue = only_issue(PodTemplateSpec, {"metadata": {"labels": {"app": "web"}}})
    assert (issue.path, issue.message) == ("spec", "required field is missing")
