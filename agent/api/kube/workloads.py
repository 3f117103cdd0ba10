"""Workloads that own pods: Deployment, ReplicaSet, StatefulSet, DaemonSet and Job.

Deployment, ReplicaSet, StatefulSet and DaemonSet are apps/v1; Job is batch/v1. The agent reads
their replica counts, selectors and pod templates; rollout strategies, claim templates, failure
policies and status are kept as written. The API server's structural rules are enforced: counts
are never negative, an apps/v1 selector is non-empty and matches the template's labels, and the
template's restart policy fits the kind (Always for apps/v1; OnFailure or Never for a Job).
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import model_validator

from agent.api.kube.common import NonNegativeInt
from agent.api.kube.pod import PodTemplateSpec
from agent.api.kube.selectors import LabelSelector
from common.kubemodel import KubeModel, ObjectMeta, rule_error


def check_selector_matches_template(
    selector: LabelSelector, template: PodTemplateSpec, *, require_non_empty: bool
) -> None:
    """Raise a rule error unless ``selector`` selects the pods ``template`` creates."""
    if require_non_empty and selector.is_empty:
        raise rule_error(
            "the selector is empty (rule: an empty selector would select every pod in the "
            "namespace, so a workload's selector must have at least one term)",
            field="selector",
        )
    if not selector.matches(template.metadata.labels):
        raise rule_error(
            "selector does not match template labels "
            "(rule: the pods a workload creates must be selected by its own selector)",
            field="template.metadata.labels",
        )


def _check_restart_always(template: PodTemplateSpec) -> None:
    policy = template.spec.restart_policy
    if policy is not None and policy != "Always":
        raise rule_error(
            f"restartPolicy {policy} is not supported here "
            "(rule: pods of a long-running workload must use restartPolicy Always)",
            field="template.spec.restartPolicy",
        )


class _AppsSpec(KubeModel):
    """Fields and rules every apps/v1 workload spec shares."""

    selector: LabelSelector
    template: PodTemplateSpec
    min_ready_seconds: NonNegativeInt | None = None

    @model_validator(mode="after")
    def _selector_and_template(self) -> Self:
        check_selector_matches_template(self.selector, self.template, require_non_empty=True)
        _check_restart_always(self.template)
        return self


class DeploymentSpec(_AppsSpec):
    """The desired state of a Deployment."""

    replicas: NonNegativeInt | None = None
    strategy: Any = None
    revision_history_limit: NonNegativeInt | None = None
    progress_deadline_seconds: NonNegativeInt | None = None
    paused: bool | None = None

    @model_validator(mode="after")
    def _deadline_after_ready(self) -> Self:
        deadline = self.progress_deadline_seconds
        ready = self.min_ready_seconds or 0
        if deadline is not None and deadline <= ready:
            raise rule_error(
                f"progressDeadlineSeconds {deadline} is not greater than minReadySeconds "
                f"{ready} (rule: a rollout must be given longer than a pod needs to be ready)",
                field="progressDeadlineSeconds",
            )
        return self


class ReplicaSetSpec(_AppsSpec):
    """The desired state of a ReplicaSet."""

    replicas: NonNegativeInt | None = None


class StatefulSetSpec(_AppsSpec):
    """The desired state of a StatefulSet; claim templates and update policies kept as written."""

    replicas: NonNegativeInt | None = None
    service_name: str | None = None
    revision_history_limit: NonNegativeInt | None = None
    pod_management_policy: Any = None
    update_strategy: Any = None
    volume_claim_templates: Any = None
    persistent_volume_claim_retention_policy: Any = None
    ordinals: Any = None


class DaemonSetSpec(_AppsSpec):
    """The desired state of a DaemonSet (one pod per eligible node)."""

    revision_history_limit: NonNegativeInt | None = None
    update_strategy: Any = None


class JobSpec(KubeModel):
    """The desired state of a Job; failure and success policies kept as written."""

    template: PodTemplateSpec
    selector: LabelSelector | None = None
    manual_selector: bool | None = None
    parallelism: NonNegativeInt | None = None
    completions: NonNegativeInt | None = None
    completion_mode: Literal["NonIndexed", "Indexed"] | None = None
    active_deadline_seconds: NonNegativeInt | None = None
    backoff_limit: NonNegativeInt | None = None
    backoff_limit_per_index: NonNegativeInt | None = None
    max_failed_indexes: NonNegativeInt | None = None
    ttl_seconds_after_finished: NonNegativeInt | None = None
    suspend: bool | None = None
    managed_by: str | None = None
    pod_failure_policy: Any = None
    success_policy: Any = None
    pod_replacement_policy: Any = None
    scheduling: Any = None

    @model_validator(mode="after")
    def _template_rules(self) -> Self:
        if self.selector is not None:
            check_selector_matches_template(self.selector, self.template, require_non_empty=False)
        policy = self.template.spec.restart_policy
        if policy not in ("OnFailure", "Never"):
            raise rule_error(
                f"restartPolicy is {policy or 'not set'} "
                "(rule: a Job's pods must use restartPolicy OnFailure or Never)",
                field="template.spec.restartPolicy",
            )
        if self.completion_mode == "Indexed" and self.completions is None:
            raise rule_error(
                "completionMode Indexed without completions "
                "(rule: an Indexed Job needs completions to know its indexes)",
                field="completions",
            )
        return self


class Deployment(KubeModel):
    """A Deployment (apps/v1)."""

    api_version: Literal["apps/v1"]
    kind: Literal["Deployment"]
    metadata: ObjectMeta
    spec: DeploymentSpec
    status: dict[str, Any] | None = None


class ReplicaSet(KubeModel):
    """A ReplicaSet (apps/v1)."""

    api_version: Literal["apps/v1"]
    kind: Literal["ReplicaSet"]
    metadata: ObjectMeta
    spec: ReplicaSetSpec
    status: dict[str, Any] | None = None


class StatefulSet(KubeModel):
    """A StatefulSet (apps/v1)."""

    api_version: Literal["apps/v1"]
    kind: Literal["StatefulSet"]
    metadata: ObjectMeta
    spec: StatefulSetSpec
    status: dict[str, Any] | None = None


class DaemonSet(KubeModel):
    """A DaemonSet (apps/v1)."""

    api_version: Literal["apps/v1"]
    kind: Literal["DaemonSet"]
    metadata: ObjectMeta
    spec: DaemonSetSpec
    status: dict[str, Any] | None = None


class Job(KubeModel):
    """A Job (batch/v1)."""

    api_version: Literal["batch/v1"]
    kind: Literal["Job"]
    metadata: ObjectMeta
    spec: JobSpec
    status: dict[str, Any] | None = None
