"""Builders of small valid manifests and helpers that read the issues a manifest is refused with."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agent.api.kube import Deployment, Pod
from common.kubemodel import FieldIssue, KubeModel, ManifestInvalid, parse_manifest

PAUSE = "public.ecr.aws/eks-distro/kubernetes/pause:3.7"


def container(name: str = "app", **fields: Any) -> dict[str, Any]:
    """A container manifest with a name and image, plus ``fields``."""
    return {"name": name, "image": PAUSE, **fields}


def pod(**spec: Any) -> dict[str, Any]:
    """A Pod manifest with one container; ``spec`` keys are added to (or replace) its spec."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [container()], **spec},
    }


def deployment(
    *, selector: dict[str, Any] | None = None, labels: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    """A Deployment manifest selecting ``app: web``; ``spec`` keys are added to its spec."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 2,
            "selector": selector if selector is not None else {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": labels if labels is not None else {"app": "web"}},
                "spec": {"containers": [container()]},
            },
            **spec,
        },
    }


def with_pod_spec(manifest: dict[str, Any], **spec: Any) -> dict[str, Any]:
    """A copy of a workload manifest with ``spec`` keys added to its pod template's spec."""
    out = copy.deepcopy(manifest)
    out["spec"]["template"]["spec"].update(spec)
    return out


def issues(model: type[KubeModel], data: Any) -> list[FieldIssue]:
    """The issues ``data`` is refused with; fails the test if it is accepted."""
    with pytest.raises(ManifestInvalid) as caught:
        parse_manifest(model, data)
    return caught.value.issues


def only_issue(model: type[KubeModel], data: Any) -> FieldIssue:
    """The single issue ``data`` is refused with; fails the test unless there is exactly one."""
    found = issues(model, data)
    assert len(found) == 1, found
    return found[0]


def pod_issue(**spec: Any) -> FieldIssue:
    """The single issue of a Pod whose spec has ``spec`` added."""
    return only_issue(Pod, pod(**spec))


def pod_ok(**spec: Any) -> Pod:
    """Parse a Pod whose spec has ``spec`` added; it must be accepted and round-trip."""
    data = pod(**spec)
    parsed = parse_manifest(Pod, data)
    assert parsed.to_manifest() == data
    return parsed


def deployment_ok(data: dict[str, Any]) -> Deployment:
    """Parse a Deployment manifest; it must be accepted and round-trip."""
    parsed = parse_manifest(Deployment, data)
    assert parsed.to_manifest() == data
    return parsed
