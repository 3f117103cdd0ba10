"""The NodePool as a whole: nodeClassRef, weight, limits, static pools (replicas), expireAfter
placement, defaults, status, and the schema-wide rules (unknown fields, camelCase only, strict
types)."""

from __future__ import annotations

from typing import Any

import pytest

from agent.api.nodepool import NodePool
from common.kubemodel import ManifestInvalid, parse_manifest

from .helpers import (
    REQS,
    TEMPLATE,
    issues,
    nodepool,
    pool_ok,
    pool_refused,
    with_field,
    without_field,
)

REF = f"{TEMPLATE}.nodeClassRef"


def test_minimal_nodepool_is_accepted() -> None:
    pool = pool_ok(nodepool())
    assert pool.name == "default"
    assert pool.spec.template.spec.node_class_ref.name == "default"


@pytest.mark.parametrize(
    ("path", "value"),
    [("apiVersion", "karpenter.sh/v1beta1"), ("apiVersion", "v1"), ("kind", "Provisioner")],
)
def test_other_api_versions_and_kinds_are_refused(path: str, value: str) -> None:
    pool_refused(with_field(nodepool(), path, value), path, "must be one of")


@pytest.mark.parametrize(
    "path",
    ["metadata", "spec", "spec.template", f"{TEMPLATE}", REF, REQS],
)
def test_required_fields(path: str) -> None:
    pool_refused(without_field(nodepool(), path), path, "required field is missing")


# --- nodeClassRef ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ref",
    [
        {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
        {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "kwok"},
        {"group": "example.com", "kind": "Anything", "name": "x"},
    ],
    ids=["aws", "kwok", "other"],
)
def test_node_class_ref_with_group_kind_and_name_is_accepted(ref: dict[str, str]) -> None:
    parsed = pool_ok(with_field(nodepool(), REF, ref)).spec.template.spec.node_class_ref
    assert (parsed.group, parsed.kind, parsed.name) == (ref["group"], ref["kind"], ref["name"])


@pytest.mark.parametrize("field", ["group", "kind", "name"])
def test_node_class_ref_fields_are_required(field: str) -> None:
    pool_refused(without_field(nodepool(), f"{REF}.{field}"), f"{REF}.{field}", "required")


@pytest.mark.parametrize("field", ["group", "kind", "name"])
def test_node_class_ref_fields_may_not_be_empty(field: str) -> None:
    pool_refused(
        with_field(nodepool(), f"{REF}.{field}", ""), f"{REF}.{field}", f"{field} may not be empty"
    )


@pytest.mark.parametrize("group", ["karpenter.k8s.aws/v1", "/", "karpenter.k8s.aws/"])
def test_node_class_ref_group_with_a_version_is_refused(group: str) -> None:
    pool_refused(with_field(nodepool(), f"{REF}.group", group), f"{REF}.group", "(pattern ^[^/]*$)")


def test_v1beta1_node_class_ref_with_api_version_is_refused() -> None:
    data = with_field(nodepool(), f"{REF}.apiVersion", "karpenter.k8s.aws/v1beta1")
    pool_refused(data, f"{REF}.apiVersion", "unknown field")


# --- weight ----------------------------------------------------------------------------------


@pytest.mark.parametrize("weight", [1, 50, 100])
def test_weight_within_range_is_accepted(weight: int) -> None:
    assert pool_ok(with_field(nodepool(), "spec.weight", weight)).spec.weight == weight


@pytest.mark.parametrize(
    ("weight", "fragment"),
    [
        (0, "must be at least 1"),
        (-5, "must be at least 1"),
        (101, "must be at most 100"),
        ("10", "must be an integer"),
        (True, "must be an integer"),
        (1.5, "must be an integer"),
    ],
    ids=str,
)
def test_weight_outside_range_or_not_an_integer_is_refused(weight: object, fragment: str) -> None:
    pool_refused(with_field(nodepool(), "spec.weight", weight), "spec.weight", fragment)


# --- limits ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "limits",
    [
        {"cpu": "1000"},
        {"cpu": 1000},
        {"cpu": "500m", "memory": "1000Gi"},
        {"memory": "32Gi", "nvidia.com/gpu": 8, "ephemeral-storage": "1Ti"},
        {"cpu": "1e3", "memory": "1.5Gi"},
        {},
    ],
    ids=["string", "int", "milli", "gpu", "exponent", "empty"],
)
def test_limits_of_quantities_are_accepted(limits: dict[str, Any]) -> None:
    assert pool_ok(with_field(nodepool(), "spec.limits", limits)).spec.limits == limits


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("lots", "is not a quantity"),
        ("1GB", "is not a quantity"),
        ("1 Gi", "is not a quantity"),
        ("", "is not a quantity"),
        ("1Ki1", "is not a quantity"),
        (True, "must be a quantity"),
        (None, "must be a quantity"),
        (["1"], "must be a quantity"),
    ],
    ids=str,
)
def test_limits_that_are_not_quantities_are_refused(value: object, fragment: str) -> None:
    data = with_field(nodepool(), "spec.limits", {"memory": "1Gi", "cpu": value})
    pool_refused(data, "spec.limits.cpu", fragment)


# --- static NodePools ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        {"replicas": 0},
        {"replicas": 3},
        {"replicas": 3, "limits": {"nodes": "10"}},
        {"replicas": 3, "limits": {}},
        {"weight": 10, "limits": {"cpu": "100"}},
    ],
    ids=["zero", "three", "limits-nodes", "empty-limits", "dynamic"],
)
def test_static_pool_with_only_limits_nodes_and_no_weight_is_accepted(spec: dict[str, Any]) -> None:
    pool = pool_ok(nodepool(**spec))
    assert pool.spec.replicas == spec.get("replicas")


@pytest.mark.parametrize(
    "limits", [{"cpu": "100"}, {"nodes": "10", "memory": "1Ti"}], ids=["cpu", "nodes-and-memory"]
)
def test_static_pool_with_other_limits_is_refused(limits: dict[str, str]) -> None:
    pool_refused(
        nodepool(replicas=2, limits=limits),
        "spec.limits",
        "only 'limits.nodes' is supported on static NodePools",
    )


def test_static_pool_with_weight_is_refused() -> None:
    pool_refused(
        nodepool(replicas=2, weight=10), "spec.weight", "'weight' is not supported on static"
    )


@pytest.mark.parametrize(
    ("replicas", "fragment"), [(-1, "must be at least 0"), ("3", "must be an integer")]
)
def test_replicas_must_be_a_non_negative_integer(replicas: object, fragment: str) -> None:
    pool_refused(nodepool(replicas=replicas), "spec.replicas", fragment)


# --- expireAfter placement, defaults ---------------------------------------------------------


def test_expire_after_belongs_in_the_template_spec() -> None:
    pool = pool_ok(with_field(nodepool(), f"{TEMPLATE}.expireAfter", "168h"))
    assert pool.spec.template.spec.expire_after == "168h"


def test_expire_after_in_disruption_is_an_unknown_field_in_v1() -> None:
    data = with_field(nodepool(), "spec.disruption.expireAfter", "720h")
    pool_refused(data, "spec.disruption.expireAfter", "unknown field")


def test_full_manifest_carries_the_defaults() -> None:
    full = pool_ok(nodepool()).to_full_manifest()
    assert full["spec"]["template"]["spec"]["expireAfter"] == "720h"
    assert "terminationGracePeriod" not in full["spec"]["template"]["spec"]
    assert full["spec"]["disruption"]["consolidateAfter"] == "0s"
    assert full["apiVersion"] == "karpenter.sh/v1"
    assert full["kind"] == "NodePool"


def test_api_version_and_kind_default_when_built_from_python() -> None:
    pool = NodePool.model_validate(
        {k: v for k, v in nodepool().items() if k not in ("apiVersion", "kind")}
    )
    assert (pool.api_version, pool.kind) == ("karpenter.sh/v1", "NodePool")


# --- unknown fields, snake_case, strict types ------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        f"{TEMPLATE}.requirments",
        f"{TEMPLATE}.kubelet",
        f"{TEMPLATE}.resources",
        f"{TEMPLATE}.nodeClass",
        "spec.templat",
        "spec.disruption.consolidationPolicies",
        "spec.ttlSecondsAfterEmpty",
        "spec.template.labels",
        "metadata.labelz",
        "status.ready",
        "extra",
    ],
)
def test_unknown_fields_are_refused_with_their_path(path: str) -> None:
    pool_refused(
        with_field(nodepool(), path, "x"),
        path,
        "unknown field: the schema has no field of this name",
    )


@pytest.mark.parametrize(
    "path",
    [
        "spec.disruption.consolidate_after",
        "spec.disruption.consolidation_policy",
        f"{TEMPLATE}.expire_after",
        f"{TEMPLATE}.termination_grace_period",
        f"{TEMPLATE}.startup_taints",
        "api_version",
    ],
)
def test_snake_case_keys_are_refused_in_manifests(path: str) -> None:
    pool_refused(with_field(nodepool(), path, "1m"), path, "unknown field")


def test_snake_case_instead_of_camel_case_names_both_fields() -> None:
    data = nodepool()
    spec = data["spec"]["template"]["spec"]
    spec["node_class_ref"] = spec.pop("nodeClassRef")
    found = issues(NodePool, data)
    assert {(i.path, i.message) for i in found} == {
        (
            f"{TEMPLATE}.node_class_ref",
            "unknown field: the schema has no field of this name; did you mean 'nodeClassRef'?",
        ),
        (REF, "required field is missing"),
    }


@pytest.mark.parametrize(
    ("path", "value", "fragment"),
    [
        ("spec.disruption.consolidateAfter", 30, "must be a string"),
        (f"{TEMPLATE}.expireAfter", 720, "must be a string"),
        (f"{REF}.name", 5, "must be a string"),
        ("metadata.name", 5, "must be a string"),
        (REQS, "kubernetes.io/arch", "must be a list"),
        (f"{REQS}[0].key", 1, "must be a string"),
        ("spec.template.metadata.labels", ["team"], "must be a mapping"),
        (REF, "default", "must be a mapping"),
        ("spec.disruption", "WhenEmpty", "must be a mapping"),
        ("spec.limits", ["cpu"], "must be a mapping"),
    ],
)
def test_strict_types(path: str, value: object, fragment: str) -> None:
    pool_refused(with_field(nodepool(), path, value), path, fragment)


def test_every_broken_field_is_reported() -> None:
    data = with_field(nodepool(), "spec.weight", 0)
    data = with_field(data, f"{REF}.group", "a/b")
    data = with_field(data, "spec.disruption.consolidateAfter", "soon")
    paths = {issue.path for issue in issues(NodePool, data)}
    assert paths == {"spec.weight", f"{REF}.group", "spec.disruption.consolidateAfter"}


def test_parse_error_names_the_kind_and_the_object() -> None:
    with pytest.raises(ManifestInvalid, match=r"^NodePool/default is invalid: spec\.weight: "):
        parse_manifest(NodePool, with_field(nodepool(), "spec.weight", 0))


def test_a_manifest_that_is_not_a_mapping_is_refused() -> None:
    found = issues(NodePool, ["not", "a", "mapping"])
    assert [i.message for i in found] == ["must be a mapping"]


# --- status ----------------------------------------------------------------------------------


def test_status_as_the_controller_writes_it_is_accepted() -> None:
    status = {
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "Ready",
                "message": "",
                "lastTransitionTime": "2024-08-07T10:00:00Z",
                "observedGeneration": 1,
            }
        ],
        "nodeClassObservedGeneration": 1,
        "nodes": 3,
        "resources": {"cpu": "12", "memory": "48Gi", "nodes": "3", "pods": "87"},
    }
    pool = pool_ok(with_field(nodepool(), "status", status))
    assert pool.status is not None
    assert pool.status.nodes == 3


@pytest.mark.parametrize(
    ("path", "value", "fragment"),
    [
        ("status.resources", {"cpu": "lots"}, "is not a quantity"),
        ("status.nodes", "3", "must be an integer"),
        ("status.conditions", [{"status": "True"}], "required field is missing"),
    ],
)
def test_malformed_status_is_refused(path: str, value: Any, fragment: str) -> None:
    expected = {
        "status.resources": "status.resources.cpu",
        "status.nodes": "status.nodes",
        "status.conditions": "status.conditions[0].type",
    }[path]
    pool_refused(with_field(nodepool(), path, value), expected, fragment)
