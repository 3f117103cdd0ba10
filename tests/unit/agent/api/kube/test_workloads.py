"""Deployment, ReplicaSet, StatefulSet, DaemonSet and Job: selectors, templates and counts."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agent.api.kube import DaemonSet, Deployment, Job, ReplicaSet, StatefulSet
from common.kubemodel import KubeModel, parse_manifest

from .helpers import container, deployment, deployment_ok, only_issue, with_pod_spec

APPS: list[tuple[type[KubeModel], str]] = [
    (Deployment, "Deployment"),
    (ReplicaSet, "ReplicaSet"),
    (StatefulSet, "StatefulSet"),
    (DaemonSet, "DaemonSet"),
]


def _apps(
    kind: str, *, selector: dict[str, Any] | None = None, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    data = deployment(selector=selector, labels=labels)
    data["kind"] = kind
    if kind == "DaemonSet":
        del data["spec"]["replicas"]
    return data


def _job(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "migrate"},
        "spec": {
            "template": {
                "metadata": {"labels": {"job-name": "migrate"}},
                "spec": {"containers": [container()], "restartPolicy": "Never"},
            },
            **spec,
        },
    }


@pytest.mark.parametrize(("model", "kind"), APPS)
@pytest.mark.parametrize(
    "selector",
    [
        {"matchLabels": {"app": "web"}},
        {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "api"]}]},
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "x", "operator": "DoesNotExist"}],
        },
    ],
)
def test_a_selector_that_matches_the_template_labels_is_accepted(
    model: type[KubeModel], kind: str, selector: dict[str, Any]
) -> None:
    data = _apps(kind, selector=selector, labels={"app": "web", "tier": "front"})
    assert parse_manifest(model, data).to_manifest() == data


@pytest.mark.parametrize(("model", "kind"), APPS)
@pytest.mark.parametrize(
    ("selector", "labels"),
    [
        ({"matchLabels": {"app": "web"}}, {"app": "api"}),
        ({"matchLabels": {"app": "web"}}, {}),
        ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}, None),
    ],
)
def test_a_selector_that_does_not_match_the_template_labels_is_refused(
    model: type[KubeModel],
    kind: str,
    selector: dict[str, Any],
    labels: dict[str, str] | None,
) -> None:
    issue = only_issue(model, _apps(kind, selector=selector, labels=labels))
    assert issue.path == "spec.template.metadata.labels"
    assert issue.message.startswith("selector does not match template labels (rule: ")


@pytest.mark.parametrize(("model", "kind"), APPS)
def test_an_empty_selector_is_refused(model: type[KubeModel], kind: str) -> None:
    issue = only_issue(model, _apps(kind, selector={}))
    assert issue.path == "spec.selector"
    assert "the selector is empty" in issue.message


@pytest.mark.parametrize(("model", "kind"), APPS)
def test_a_selector_is_required(model: type[KubeModel], kind: str) -> None:
    data = _apps(kind)
    del data["spec"]["selector"]
    issue = only_issue(model, data)
    assert (issue.path, issue.message) == ("spec.selector", "required field is missing")


@pytest.mark.parametrize(("model", "kind"), APPS)
def test_long_running_pods_must_restart_always(model: type[KubeModel], kind: str) -> None:
    ok = with_pod_spec(_apps(kind), restartPolicy="Always")
    assert parse_manifest(model, ok).to_manifest() == ok
    issue = only_issue(model, with_pod_spec(_apps(kind), restartPolicy="OnFailure"))
    assert issue.path == "spec.template.spec.restartPolicy"
    assert "restartPolicy OnFailure is not supported here" in issue.message


@pytest.mark.parametrize(("model", "kind"), APPS)
def test_min_ready_seconds_must_not_be_negative(model: type[KubeModel], kind: str) -> None:
    data = _apps(kind)
    data["spec"]["minReadySeconds"] = 10
    assert parse_manifest(model, data).to_manifest() == data
    data["spec"]["minReadySeconds"] = -1
    issue = only_issue(model, data)
    assert issue.path == "spec.minReadySeconds"
    assert "-1 is negative" in issue.message


@pytest.mark.parametrize(
    ("model", "kind"),
    [(Deployment, "Deployment"), (ReplicaSet, "ReplicaSet"), (StatefulSet, "StatefulSet")],
)
def test_replicas_may_be_zero_but_not_negative(model: type[KubeModel], kind: str) -> None:
    data = _apps(kind)
    data["spec"]["replicas"] = 0
    assert parse_manifest(model, data).to_manifest() == data
    data["spec"]["replicas"] = -1
    issue = only_issue(model, data)
    assert issue.path == "spec.replicas"
    assert "must be 0 or greater" in issue.message
    data["spec"]["replicas"] = "3"
    assert only_issue(model, data).message == "must be an integer"


@pytest.mark.parametrize(
    ("model", "kind"),
    [(Deployment, "Deployment"), (StatefulSet, "StatefulSet"), (DaemonSet, "DaemonSet")],
)
def test_revision_history_limit_must_not_be_negative(model: type[KubeModel], kind: str) -> None:
    data = _apps(kind)
    data["spec"]["revisionHistoryLimit"] = 0
    assert parse_manifest(model, data).to_manifest() == data
    data["spec"]["revisionHistoryLimit"] = -3
    assert only_issue(model, data).path == "spec.revisionHistoryLimit"


def test_daemon_sets_have_no_replicas() -> None:
    data = _apps("DaemonSet")
    data["spec"]["replicas"] = 1
    issue = only_issue(DaemonSet, data)
    assert issue.path == "spec.replicas"
    assert issue.message.startswith("unknown field")


def test_deployment_strategy_and_rollout_fields_are_kept() -> None:
    data = deployment(
        strategy={
            "type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0},
        },
        minReadySeconds=5,
        progressDeadlineSeconds=600,
        paused=False,
    )
    parsed = deployment_ok(data)
    assert parsed.spec.strategy == data["spec"]["strategy"]
    assert parsed.spec.progress_deadline_seconds == 600


@pytest.mark.parametrize(("ready", "deadline"), [(None, 0), (30, 30), (30, 10)])
def test_the_progress_deadline_must_exceed_min_ready_seconds(
    ready: int | None, deadline: int
) -> None:
    data = deployment(progressDeadlineSeconds=deadline)
    if ready is not None:
        data["spec"]["minReadySeconds"] = ready
    issue = only_issue(Deployment, data)
    assert issue.path == "spec.progressDeadlineSeconds"
    assert "is not greater than minReadySeconds" in issue.message


def test_label_values_match_case_sensitively() -> None:
    data = deployment(selector={"matchLabels": {"app": "web"}})
    other = copy.deepcopy(data)
    other["spec"]["template"]["metadata"]["labels"]["app"] = "WEB"
    deployment_ok(data)
    assert only_issue(Deployment, other).path == "spec.template.metadata.labels"


def test_stateful_set_fields_are_kept() -> None:
    data = _apps("StatefulSet")
    data["spec"].update(
        serviceName="web",
        podManagementPolicy="Parallel",
        updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
        persistentVolumeClaimRetentionPolicy={"whenDeleted": "Retain", "whenScaled": "Delete"},
        ordinals={"start": 1},
        volumeClaimTemplates=[
            {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}
        ],
    )
    parsed = parse_manifest(StatefulSet, data)
    assert parsed.spec.service_name == "web"
    assert parsed.spec.ordinals == {"start": 1}
    assert parsed.to_manifest() == data


# ---- Job -----------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["Never", "OnFailure"])
def test_a_job_accepts_never_and_on_failure(policy: str) -> None:
    data = with_pod_spec(_job(), restartPolicy=policy)
    parsed = parse_manifest(Job, data)
    assert parsed.spec.template.spec.restart_policy == policy


@pytest.mark.parametrize(("policy", "words"), [("Always", "is Always"), (None, "is not set")])
def test_a_job_refuses_other_restart_policies(policy: str | None, words: str) -> None:
    data = _job()
    if policy is None:
        del data["spec"]["template"]["spec"]["restartPolicy"]
    else:
        data["spec"]["template"]["spec"]["restartPolicy"] = policy
    issue = only_issue(Job, data)
    assert issue.path == "spec.template.spec.restartPolicy"
    assert f"restartPolicy {words}" in issue.message


def test_a_job_selector_is_optional_but_must_match_when_set() -> None:
    assert parse_manifest(Job, _job()).spec.selector is None
    matching = _job(selector={"matchLabels": {"job-name": "migrate"}}, manualSelector=True)
    assert parse_manifest(Job, matching).to_manifest() == matching
    other = _job(selector={"matchLabels": {"job-name": "other"}})
    issue = only_issue(Job, other)
    assert issue.path == "spec.template.metadata.labels"
    assert issue.message.startswith("selector does not match template labels")


def test_an_indexed_job_needs_completions() -> None:
    ok = _job(completionMode="Indexed", completions=4, parallelism=2)
    assert parse_manifest(Job, ok).spec.completions == 4
    issue = only_issue(Job, _job(completionMode="Indexed"))
    assert issue.path == "spec.completions"
    assert "completionMode Indexed without completions" in issue.message
    assert only_issue(Job, _job(completionMode="Random")).path == "spec.completionMode"


@pytest.mark.parametrize(
    "field",
    [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
        "ttlSecondsAfterFinished",
    ],
)
def test_job_counts_must_not_be_negative(field: str) -> None:
    assert parse_manifest(Job, _job(**{field: 0})).to_manifest() == _job(**{field: 0})
    issue = only_issue(Job, _job(**{field: -1}))
    assert issue.path == f"spec.{field}"
    assert "must be 0 or greater" in issue.message


def test_job_policies_are_kept() -> None:
    data = _job(
        suspend=False,
        podReplacementPolicy="Failed",
        podFailurePolicy={
            "rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]
        },
        successPolicy={"rules": [{"succeededCount": 1}]},
        managedBy="kueue.x-k8s.io/multikueue",
    )
    parsed = parse_manifest(Job, data)
    assert parsed.spec.pod_failure_policy == data["spec"]["podFailurePolicy"]
    assert parsed.to_manifest() == data


@pytest.mark.parametrize(
    ("model", "data"),
    [(Deployment, deployment()), (Job, _job())],
)
def test_a_workload_must_name_its_api_version(model: type[KubeModel], data: dict[str, Any]) -> None:
    data["apiVersion"] = "extensions/v1beta1"
    issue = only_issue(model, data)
    assert issue.path == "apiVersion"
    assert issue.message.startswith("unsupported value")


def test_status_is_passed_through() -> None:
    data = deployment()
    data["status"] = {"replicas": 2, "readyReplicas": 1, "conditions": [{"type": "Available"}]}
    assert deployment_ok(data).status == data["status"]
