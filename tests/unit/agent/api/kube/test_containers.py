"""Containers and resource requirements: quantity rules, request/limit rules, passthrough fields."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.api.kube import (
    Container,
    Deployment,
    Pod,
    ResourceRequirements,
    is_extended_resource,
    is_native_resource,
    is_overcommit_allowed,
)
from common.kubemodel import parse_manifest

from .helpers import PAUSE, container, deployment, issues, only_issue, pod, pod_issue, pod_ok

GPU = "nvidia.com/gpu"


def _resources(**resources: Any) -> dict[str, Any]:
    return {"containers": [container(resources=resources)]}


def test_requests_and_limits_keep_their_values_as_written() -> None:
    resources = {"requests": {"cpu": 1, "memory": "128Mi"}, "limits": {"memory": "128Mi"}}
    parsed = pod_ok(**_resources(**resources))
    got = parsed.spec.containers[0].resources
    assert got.requests == {"cpu": 1, "memory": "128Mi"}
    assert isinstance(got.requests["cpu"], int)
    assert got.limits == {"memory": "128Mi"}


@pytest.mark.parametrize(
    ("part", "name", "value"),
    [
        ("requests", "cpu", "-1"),
        ("requests", "memory", "-128Mi"),
        ("limits", "cpu", -2),
        ("limits", "ephemeral-storage", "-1Gi"),
    ],
)
def test_negative_quantities_are_refused_at_their_path(part: str, name: str, value: Any) -> None:
    issue = pod_issue(**_resources(**{part: {name: value}}))
    assert issue.path == f"spec.containers[0].resources.{part}.{name}"
    assert "is negative" in issue.message
    assert "must be 0 or greater" in issue.message


def test_zero_quantities_are_accepted() -> None:
    parsed = pod_ok(**_resources(requests={"cpu": 0, "memory": "0"}))
    assert parsed.spec.containers[0].resources.requests["cpu"] == 0


def test_a_malformed_quantity_is_refused_at_its_path() -> None:
    issue = pod_issue(**_resources(requests={"cpu": "1 core"}))
    assert issue.path == "spec.containers[0].resources.requests.cpu"
    assert "is not a quantity" in issue.message


def test_a_boolean_is_not_a_quantity() -> None:
    issue = pod_issue(**_resources(limits={"memory": True}))
    assert issue.path == "spec.containers[0].resources.limits.memory"


@pytest.mark.parametrize(
    ("asked", "limit"),
    [(1, 2), ("500m", "0.5"), ("1Gi", "1024Mi"), ("128Mi", "128Mi"), ("1", "1000m")],
)
def test_a_request_up_to_its_limit_is_accepted(asked: Any, limit: Any) -> None:
    name = "memory" if str(asked).endswith("i") else "cpu"
    parsed = pod_ok(**_resources(requests={name: asked}, limits={name: limit}))
    assert parsed.spec.containers[0].resources.limits[name] == limit


@pytest.mark.parametrize(
    ("name", "asked", "limit"), [("cpu", 2, 1), ("cpu", "1001m", 1), ("memory", "1Gi", "1G")]
)
def test_a_request_above_its_limit_is_refused(name: str, asked: Any, limit: Any) -> None:
    issue = pod_issue(**_resources(requests={name: asked}, limits={name: limit}))
    assert issue.path == f"spec.containers[0].resources.requests.{name}"
    assert f"request {asked} is greater than the limit {limit}" in issue.message
    assert f"must be less than or equal to the {name} limit" in issue.message


def test_the_request_limit_rule_reports_the_path_inside_a_workload() -> None:
    data = deployment()
    data["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "2"},
        "limits": {"cpu": "1"},
    }
    issue = only_issue(Deployment, data)
    assert issue.path == "spec.template.spec.containers[0].resources.requests.cpu"


@given(asked=st.integers(0, 10**6), limit=st.integers(0, 10**6))
def test_cpu_requests_are_compared_with_limits_by_value(asked: int, limit: int) -> None:
    data = {"requests": {"cpu": f"{asked}m"}, "limits": {"cpu": f"{limit / 1000}"}}
    if asked <= limit:
        assert parse_manifest(ResourceRequirements, data).to_manifest() == data
    else:
        assert only_issue(ResourceRequirements, data).path == "requests.cpu"


@pytest.mark.parametrize(
    "resources",
    [
        {"limits": {GPU: 1}},
        {"requests": {GPU: 2}, "limits": {GPU: "2"}},
        {
            "requests": {"hugepages-2Mi": "64Mi", "memory": "1Gi"},
            "limits": {"hugepages-2Mi": "64Mi"},
        },
        {"requests": {"vpc.amazonaws.com/efa": 1}, "limits": {"vpc.amazonaws.com/efa": 1}},
    ],
)
def test_resources_that_cannot_be_overcommitted_accept_equal_requests(
    resources: dict[str, Any],
) -> None:
    assert pod_ok(**_resources(**resources)).spec.containers[0].resources.limits


def test_a_gpu_request_without_a_limit_is_refused_at_the_limit() -> None:
    issue = pod_issue(**_resources(requests={GPU: 1}))
    assert issue.path == f"spec.containers[0].resources.limits.{GPU}"
    assert "has no limit" in issue.message


@pytest.mark.parametrize("name", [GPU, "hugepages-1Gi"])
def test_a_request_below_a_non_overcommittable_limit_is_refused(name: str) -> None:
    issue = pod_issue(**_resources(requests={name: "1Gi"}, limits={name: "2Gi"}))
    assert issue.path == f"spec.containers[0].resources.requests.{name}"
    assert "must equal its limit" in issue.message


def test_extended_resources_must_be_whole_numbers() -> None:
    limit_issue = pod_issue(**_resources(limits={GPU: "500m"}))
    assert limit_issue.path == f"spec.containers[0].resources.limits.{GPU}"
    assert "is not a whole number" in limit_issue.message
    request_issue = only_issue(ResourceRequirements, {"requests": {GPU: 1.5}, "limits": {GPU: 2}})
    assert request_issue.path == f"requests.{GPU}"
    assert "is not a whole number" in request_issue.message


@pytest.mark.parametrize(
    ("name", "native", "extended", "overcommit"),
    [
        ("cpu", True, False, True),
        ("memory", True, False, True),
        ("ephemeral-storage", True, False, True),
        ("hugepages-2Mi", True, False, False),
        ("kubernetes.io/batch-cpu", True, False, True),
        (GPU, False, True, False),
        ("vpc.amazonaws.com/pod-eni", False, True, False),
        ("requests.example.com/foo", False, False, False),
    ],
)
def test_resource_name_classes(name: str, native: bool, extended: bool, overcommit: bool) -> None:
    assert is_native_resource(name) is native
    assert is_extended_resource(name) is extended
    assert is_overcommit_allowed(name) is overcommit


def test_pod_overhead_quantities_must_not_be_negative() -> None:
    assert pod_ok(overhead={"cpu": "250m", "memory": "120Mi"}).spec.overhead["cpu"] == "250m"
    issue = pod_issue(overhead={"cpu": "-250m"})
    assert issue.path == "spec.overhead.cpu"


def test_claims_are_passed_through() -> None:
    parsed = pod_ok(**_resources(claims=[{"name": "gpu", "request": "a100"}]))
    assert parsed.spec.containers[0].resources.claims == [{"name": "gpu", "request": "a100"}]


PASSTHROUGH: dict[str, Any] = {
    "command": ["/bin/sh", "-c"],
    "args": ["sleep 3600"],
    "env": [{"name": "LOG_LEVEL", "value": "debug"}],
    "envFrom": [{"configMapRef": {"name": "settings"}}],
    "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
    "volumeMounts": [{"mountPath": "/data", "name": "data"}],
    "volumeDevices": [{"devicePath": "/dev/xvda", "name": "raw"}],
    "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080}},
    "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 5},
    "startupProbe": {"exec": {"command": ["true"]}, "failureThreshold": 30},
    "lifecycle": {"preStop": {"sleep": {"seconds": 5}}},
    "securityContext": {"runAsNonRoot": True, "readOnlyRootFilesystem": True},
    "imagePullPolicy": "IfNotPresent",
    "workingDir": "/srv",
    "stdin": False,
    "stdinOnce": False,
    "tty": False,
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
    "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}],
}


def test_every_other_container_field_is_accepted_and_kept() -> None:
    data = container(**PASSTHROUGH)
    parsed = parse_manifest(Container, data)
    assert parsed.env == PASSTHROUGH["env"]
    assert parsed.image == PAUSE
    assert parsed.to_manifest() == data


def test_an_image_is_optional_as_in_the_api() -> None:
    assert parse_manifest(Container, {"name": "app"}).image is None


@pytest.mark.parametrize(("data", "path"), [({"name": ""}, "name"), ({"image": PAUSE}, "name")])
def test_a_container_needs_a_name(data: dict[str, Any], path: str) -> None:
    assert only_issue(Container, data).path == path


def test_a_misspelt_container_field_is_refused_at_its_path() -> None:
    data = deployment()
    data["spec"]["template"]["spec"]["containers"][0]["resoures"] = {"requests": {"cpu": 1}}
    issue = only_issue(Deployment, data)
    assert issue.path == "spec.template.spec.containers[0].resoures"
    assert issue.message.startswith("unknown field")


def test_snake_case_container_fields_are_refused_in_manifests() -> None:
    found = issues(Pod, pod(containers=[container(image_pull_policy="Always")]))
    assert [i.path for i in found] == ["spec.containers[0].image_pull_policy"]


@pytest.mark.parametrize("policy", ["Always", "OnFailure", "Never"])
def test_a_container_restart_policy_is_one_of_the_pod_policies(policy: str) -> None:
    parsed = pod_ok(initContainers=[container("init", restartPolicy=policy)])
    assert parsed.spec.init_containers[0].restart_policy == policy


def test_an_unknown_container_restart_policy_is_refused() -> None:
    issue = pod_issue(initContainers=[container("init", restartPolicy="Sometimes")])
    assert issue.path == "spec.initContainers[0].restartPolicy"
    assert issue.message.startswith("unsupported value")


def test_restart_rules_need_a_restart_policy() -> None:
    rules = [{"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}]
    ok = pod_ok(containers=[container(restartPolicy="Never", restartPolicyRules=rules)])
    assert ok.spec.containers[0].restart_policy_rules == rules
    issue = pod_issue(containers=[container(restartPolicyRules=rules)])
    assert issue.path == "spec.containers[0].restartPolicy"
    assert "restartPolicyRules is set without restartPolicy" in issue.message


def test_python_code_builds_containers_by_snake_case_names() -> None:
    built = Container(
        name="app",
        image=PAUSE,
        image_pull_policy="Always",
        resources=ResourceRequirements(requests={"cpu": "1"}, limits={"cpu": "1"}),
    )
    assert built.to_manifest() == {
        "name": "app",
        "image": PAUSE,
        "imagePullPolicy": "Always",
        "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}},
    }
