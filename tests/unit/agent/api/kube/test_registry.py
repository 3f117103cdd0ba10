"""The kind registry, the generic reader, and an audit of the aliases that are not camelCase."""

from __future__ import annotations

import importlib
import inspect
from typing import Any, get_args

import pytest
from pydantic.alias_generators import to_camel

import agent.api.kube as kube
from agent.api.kube import KUBE_KINDS, Deployment, parse_object
from common.kubemodel import KubeModel, ManifestInvalid

from .helpers import deployment, pod

EXPECTED_KINDS = {
    ("v1", "Pod"),
    ("v1", "Node"),
    ("apps/v1", "Deployment"),
    ("apps/v1", "ReplicaSet"),
    ("apps/v1", "StatefulSet"),
    ("apps/v1", "DaemonSet"),
    ("batch/v1", "Job"),
    ("policy/v1", "PodDisruptionBudget"),
}


def test_the_registry_holds_exactly_the_kinds_the_agent_reads() -> None:
    assert set(KUBE_KINDS) == EXPECTED_KINDS


@pytest.mark.parametrize(("key", "model"), sorted(KUBE_KINDS.items()))
def test_each_model_declares_its_api_version_and_kind(
    key: tuple[str, str], model: type[KubeModel]
) -> None:
    fields = model.model_fields
    assert get_args(fields["api_version"].annotation) == (key[0],)
    assert get_args(fields["kind"].annotation) == (key[1],)
    assert fields["metadata"].is_required()
    assert model.__name__ == key[1]


def test_parse_object_picks_the_model_by_api_version_and_kind() -> None:
    assert isinstance(parse_object(deployment()), Deployment)
    assert type(parse_object(pod())).__name__ == "Pod"


@pytest.mark.parametrize(
    "data",
    [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}},
        {"apiVersion": "apps/v1beta1", "kind": "Deployment", "metadata": {"name": "web"}},
        {"kind": "Pod", "metadata": {"name": "web"}},
        {"apiVersion": 1, "kind": "Pod"},
    ],
)
def test_parse_object_refuses_kinds_the_agent_does_not_read(data: dict[str, Any]) -> None:
    with pytest.raises(ManifestInvalid) as caught:
        parse_object(data)
    assert [i.path for i in caught.value.issues] == ["kind"]
    assert "is not an object the agent reads" in caught.value.issues[0].message


def test_parse_object_refuses_a_document_that_is_not_a_mapping() -> None:
    with pytest.raises(ManifestInvalid) as caught:
        parse_object(["not", "a", "mapping"])
    assert caught.value.issues[0].message == "must be a mapping"


def test_parse_object_reports_field_issues_with_paths() -> None:
    data = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "spec": {"taint": []}}
    with pytest.raises(ManifestInvalid) as caught:
        parse_object(data)
    assert [i.path for i in caught.value.issues] == ["spec.taint"]
    assert caught.value.kind == "Node"
    assert caught.value.name == "n"


MODULES = [
    "common",
    "containers",
    "node",
    "pod",
    "policy",
    "scheduling",
    "selectors",
    "workloads",
]


def _models() -> list[type[KubeModel]]:
    """Every public model class defined in the package's modules."""
    found: list[type[KubeModel]] = []
    for module_name in MODULES:
        module = importlib.import_module(f"{kube.__name__}.{module_name}")
        found.extend(
            obj
            for name, obj in vars(module).items()
            if inspect.isclass(obj)
            and issubclass(obj, KubeModel)
            and obj.__module__ == module.__name__
            and not name.startswith("_")
        )
    return found


EXPECTED_ALIASES = {
    ("PodSpec", "host_ipc"): "hostIPC",
    ("PodSpec", "host_pid"): "hostPID",
    ("PodSpec", "set_hostname_as_fqdn"): "setHostnameAsFQDN",
    ("PodStatus", "host_ip"): "hostIP",
    ("PodStatus", "host_ips"): "hostIPs",
    ("PodStatus", "pod_ip"): "podIP",
    ("PodStatus", "pod_ips"): "podIPs",
    ("NodeSpec", "provider_id"): "providerID",
    ("NodeSpec", "pod_cidr"): "podCIDR",
    ("NodeSpec", "pod_cidrs"): "podCIDRs",
    ("NodeSpec", "external_id"): "externalID",
    ("NodeSystemInfo", "machine_id"): "machineID",
    ("NodeSystemInfo", "system_uuid"): "systemUUID",
    ("NodeSystemInfo", "boot_id"): "bootID",
}


def test_exactly_the_expected_fields_have_non_camel_case_aliases() -> None:
    found = {
        (model.__name__, name): info.alias
        for model in _models()
        for name, info in model.model_fields.items()
        if info.alias != to_camel(name)
    }
    assert found == EXPECTED_ALIASES


def test_every_public_model_is_exported() -> None:
    names = {model.__name__ for model in _models()}
    assert len(names) > 40
    assert names <= set(kube.__all__)
