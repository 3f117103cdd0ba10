"""Containers and their resource requirements (core/v1 Container, ResourceRequirements).

The agent reads a container's name, image, resources and (for init containers) restart policy;
every other Container field is accepted as it is written so that real manifests load unchanged.
Resource rules follow the API server: quantities are never negative, a request never exceeds its
limit, and resources that cannot be overcommitted (hugepages and extended resources such as
``nvidia.com/gpu``) need a limit equal to the request and, when extended, whole numbers.
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import Field, model_validator

from agent.api.kube.common import NonEmptyStr, ResourceList
from agent.api.quantity import parse_quantity
from common.kubemodel import KubeModel, rule_error

ContainerRestartPolicy = Literal["Always", "OnFailure", "Never"]

_NATIVE_DOMAIN = "kubernetes.io/"
_HUGEPAGES_PREFIX = "hugepages-"
_QUOTA_PREFIX = "requests."


def is_native_resource(name: str) -> bool:
    """Whether ``name`` is a Kubernetes resource (``cpu``, ``memory``, ``kubernetes.io/...``)."""
    return "/" not in name or _NATIVE_DOMAIN in name


def is_extended_resource(name: str) -> bool:
    """Whether ``name`` is an extended resource with its own domain (``nvidia.com/gpu``)."""
    return not is_native_resource(name) and not name.startswith(_QUOTA_PREFIX)


def is_overcommit_allowed(name: str) -> bool:
    """Whether a request for ``name`` may be lower than its limit (false for hugepages, GPUs)."""
    return is_native_resource(name) and not name.startswith(_HUGEPAGES_PREFIX)


class ResourceRequirements(KubeModel):
    """Compute resource requests and limits of a container (or of a whole pod)."""

    requests: ResourceList = Field(default_factory=dict)
    limits: ResourceList = Field(default_factory=dict)
    claims: Any = None

    @model_validator(mode="after")
    def _requests_fit_limits(self) -> Self:
        for part, resources in (("requests", self.requests), ("limits", self.limits)):
            for name, value in resources.items():
                if is_extended_resource(name) and parse_quantity(value).denominator != 1:
                    raise rule_error(
                        f"{value} is not a whole number "
                        f"(rule: extended resources such as {name} are counted in whole units)",
                        field=f"{part}.{name}",
                    )
        for name, request in self.requests.items():
            limit = self.limits.get(name)
            if limit is None:
                if not is_overcommit_allowed(name):
                    raise rule_error(
                        f"{name} is requested but has no limit (rule: a resource that cannot "
                        "be overcommitted needs a limit equal to its request)",
                        field=f"limits.{name}",
                    )
                continue
            if parse_quantity(request) == parse_quantity(limit):
                continue
            if not is_overcommit_allowed(name):
                raise rule_error(
                    f"request {request} differs from the limit {limit} (rule: {name} cannot "
                    "be overcommitted, so its request must equal its limit)",
                    field=f"requests.{name}",
                )
            if parse_quantity(request) > parse_quantity(limit):
                raise rule_error(
                    f"request {request} is greater than the limit {limit} "
                    f"(rule: a {name} request must be less than or equal to the {name} limit)",
                    field=f"requests.{name}",
                )
        return self


class Container(KubeModel):
    """A container of a pod; the fields the agent does not use are kept as written."""

    name: NonEmptyStr
    image: str | None = None
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    restart_policy: ContainerRestartPolicy | None = None
    restart_policy_rules: Any = None

    command: Any = None
    args: Any = None
    env: Any = None
    env_from: Any = None
    ports: Any = None
    volume_mounts: Any = None
    volume_devices: Any = None
    liveness_probe: Any = None
    readiness_probe: Any = None
    startup_probe: Any = None
    lifecycle: Any = None
    security_context: Any = None
    image_pull_policy: Any = None
    working_dir: Any = None
    stdin: Any = None
    stdin_once: Any = None
    tty: Any = None
    termination_message_path: Any = None
    termination_message_policy: Any = None
    resize_policy: Any = None

    @model_validator(mode="after")
    def _rules_need_policy(self) -> Self:
        if self.restart_policy_rules and self.restart_policy is None:
            raise rule_error(
                "restartPolicyRules is set without restartPolicy (rule: a container with "
                "restart rules must also set its restartPolicy)",
                field="restartPolicy",
            )
        return self
