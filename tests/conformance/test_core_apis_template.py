"""Conformance of a NodePool's NodeClaim template (taints, requirements, labels, termination
grace period) to Karpenter's CEL validation tests, including the runtime validation Karpenter
runs on an admitted NodePool: driftwave refuses before it is applied what that validation would
mark not ready."""

from __future__ import annotations

import pytest

from tests.conformance.karpenter import mirrors
from tests.conformance.test_core_apis import (
    CORE_RESTRICTED_LABEL_DOMAINS,
    CORE_RESTRICTED_LABELS,
    CORE_WELL_KNOWN_LABELS,
    Admission,
    api,
    core_nodepool,
    req,
    template,
    template_metadata,
)

SUITE = "core-apis"
SOURCE = "pkg/apis/v1/nodepool_validation_cel_test.go"
TAINTS = "CEL/Validation / Taints / "
REQUIREMENTS = "CEL/Validation / Requirements / "
LABELS = "CEL/Validation / Labels / "
ZONE = "topology.kubernetes.io/zone"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
BAD_KEYS = ["test.com.com}", "Test.com/test", "test/test/test", "test/", "/test"]
"""Keys that are not qualified names (Karpenter's tests try each as a taint and requirement)."""
LONG = "a1b2c3d4e5" * 25
LONG_KEYS = [f"test.com.test.{LONG}/test", f"test.com.test/test-{LONG}"]
"""Keys of a prefix, or a name, over Kubernetes' length limits (the CRD admits them)."""
BAD_BOUNDS = [
    (op, values)
    for op in ("Gt", "Lt", "Gte", "Lte")
    for values in ((), ("1", "2"), ("a",), ("-1",))
]

__all__ = ["api"]


def with_reqs(*reqs: dict[str, object]) -> dict[str, object]:
    """The core NodePool requiring exactly ``reqs``."""
    return template(core_nodepool(), requirements=list(reqs))


def with_taints(*taints: dict[str, str]) -> dict[str, object]:
    """The core NodePool with these taints."""
    return template(core_nodepool(), taints=list(taints))


def with_labels(**labels: str) -> dict[str, object]:
    """The core NodePool whose template carries these labels."""
    return template_metadata(core_nodepool(), labels=labels)


# --- Taints ----------------------------------------------------------------------------------


@mirrors(SOURCE, TAINTS + "should succeed for valid taints")
def test_valid_taints(api: Admission) -> None:
    taints = [
        {"key": "a", "value": "b", "effect": "NoSchedule"},
        {"key": "c", "value": "d", "effect": "NoExecute"},
        {"key": "e", "value": "f", "effect": "PreferNoSchedule"},
        {"key": "Test", "value": "f", "effect": "PreferNoSchedule"},
        {"key": "test.com/Test", "value": "f", "effect": "PreferNoSchedule"},
        {"key": "test.com.com/test", "value": "f", "effect": "PreferNoSchedule"},
        {"key": "key-only", "effect": "NoExecute"},
    ]
    stored = api.admitted(with_taints(*taints), runtime=True)
    assert stored["spec"]["template"]["spec"]["taints"] == taints


@mirrors(SOURCE, TAINTS + "should fail for invalid taint keys")
@pytest.mark.parametrize("key", BAD_KEYS)
def test_invalid_taint_keys(api: Admission, key: str) -> None:
    found = api.refused(with_taints({"key": key, "effect": "NoSchedule"}), runtime=True)
    assert [issue.path for issue in found] == ["spec.template.spec.taints[0].key"]


@mirrors(SOURCE, TAINTS + "should fail at runtime for taint keys that are too long")
@pytest.mark.parametrize("key", LONG_KEYS, ids=["long prefix", "long name"])
def test_too_long_taint_keys(api: Admission, key: str) -> None:
    found = api.refused_at_runtime_only(with_taints({"key": key, "effect": "NoSchedule"}))
    assert [issue.path for issue in found] == ["spec.template.spec.taints[0].key"]


@mirrors(SOURCE, TAINTS + "should fail for missing taint key")
@pytest.mark.parametrize("taint", [{"effect": "NoSchedule"}, {"key": "", "effect": "NoSchedule"}])
def test_missing_taint_key(api: Admission, taint: dict[str, str]) -> None:
    found = api.refused(with_taints(taint), runtime=True)
    assert [issue.path for issue in found] == ["spec.template.spec.taints[0].key"]


@mirrors(SOURCE, TAINTS + "should fail for invalid taint value")
def test_invalid_taint_value(api: Admission) -> None:
    taint = {"key": "invalid-value", "effect": "NoSchedule", "value": "???"}
    found = api.refused(with_taints(taint), runtime=True)
    assert [issue.path for issue in found] == ["spec.template.spec.taints[0].value"]


@mirrors(SOURCE, TAINTS + "should fail for invalid taint effect")
def test_invalid_taint_effect(api: Admission) -> None:
    found = api.refused(with_taints({"key": "invalid-effect", "effect": "???"}), runtime=True)
    assert [issue.path for issue in found] == ["spec.template.spec.taints[0].effect"]


@mirrors(SOURCE, TAINTS + "should not fail for same key with different effects")
def test_same_taint_key_different_effects(api: Admission) -> None:
    taints = [{"key": "a", "effect": "NoSchedule"}, {"key": "a", "effect": "NoExecute"}]
    stored = api.admitted(with_taints(*taints), runtime=True)
    assert stored["spec"]["template"]["spec"]["taints"] == taints


# --- Requirements ----------------------------------------------------------------------------


@mirrors(SOURCE, REQUIREMENTS + "should succeed for valid requirement keys")
def test_valid_requirement_keys(api: Admission) -> None:
    keys = ["Test", "test.com/Test", "test.com.com/test", "key-only"]
    stored = api.admitted(with_reqs(*(req(key, "Exists") for key in keys)), runtime=True)
    assert [r["key"] for r in stored["spec"]["template"]["spec"]["requirements"]] == keys


@mirrors(SOURCE, REQUIREMENTS + "should fail for invalid requirement keys")
@pytest.mark.parametrize("key", BAD_KEYS)
def test_invalid_requirement_keys(api: Admission, key: str) -> None:
    found = api.refused(with_reqs(req(key, "Exists")), runtime=True)
    assert [issue.path for issue in found] == ["spec.template.spec.requirements[0].key"]


@mirrors(SOURCE, REQUIREMENTS + "should fail at runtime for requirement keys that are too long")
@pytest.mark.parametrize("key", LONG_KEYS, ids=["long prefix", "long name"])
def test_too_long_requirement_keys(api: Admission, key: str) -> None:
    found = api.refused_at_runtime_only(with_reqs(req(key, "Exists")))
    assert [issue.path for issue in found] == ["spec.template.spec.requirements[0].key"]


@mirrors(SOURCE, REQUIREMENTS + "should fail for the karpenter.sh/nodepool label")
def test_nodepool_label_requirement(api: Admission) -> None:
    found = api.refused(with_reqs(req("karpenter.sh/nodepool", "In", "pool-a")), runtime=True)
    assert [issue.path for issue in found] == ["spec.template.spec.requirements[0].key"]


@mirrors(SOURCE, REQUIREMENTS + "should allow supported ops")
def test_supported_ops(api: Admission) -> None:
    reqs = [
        req(ZONE, "In", "test"),
        req(ZONE, "Gt", "1"),
        req(ZONE, "Lt", "1"),
        req(ZONE, "NotIn"),
        req(ZONE, "Exists"),
    ]
    stored = api.admitted(with_reqs(*reqs), runtime=True)
    assert stored["spec"]["template"]["spec"]["requirements"] == reqs


@mirrors(SOURCE, REQUIREMENTS + "should fail for unsupported ops")
def test_unsupported_ops(api: Admission) -> None:
    found = api.refused(with_reqs(req(ZONE, "unknown", "test")), runtime=True)
    assert [issue.path for issue in found] == ["spec.template.spec.requirements[0].operator"]


@mirrors(SOURCE, REQUIREMENTS + "should fail for restricted domains")
@pytest.mark.parametrize("domain", CORE_RESTRICTED_LABEL_DOMAINS)
def test_restricted_domains(api: Admission, domain: str) -> None:
    found = api.refused(with_reqs(req(f"{domain}/test", "In", "test")), runtime=True)
    assert [issue.path for issue in found] == ["spec.template.spec.requirements[0].key"]


@mirrors(SOURCE, REQUIREMENTS + "should fail for restricted labels")
@pytest.mark.parametrize("label", CORE_RESTRICTED_LABELS)
def test_restricted_labels(api: Admission, label: str) -> None:
    found = api.refused(with_reqs(req(f"{label}/test", "In", "test")), runtime=True)
    assert [issue.path for issue in found] == ["spec.template.spec.requirements[0].key"]


@mirrors(SOURCE, REQUIREMENTS + "should allow kubernetes domains")
@pytest.mark.parametrize("domain", ["kubernetes.io", "k8s.io"])
def test_kubernetes_domains(api: Admission, domain: str) -> None:
    api.admitted(with_reqs(req(f"{domain}/test", "In", "test")), runtime=True)


@mirrors(SOURCE, REQUIREMENTS + "should allow kubernetes subdomains exceptions")
@pytest.mark.parametrize("domain", ["kubernetes.io", "k8s.io"])
def test_kubernetes_subdomains(api: Admission, domain: str) -> None:
    api.admitted(with_reqs(req(f"subdomain.{domain}/test", "In", "test")), runtime=True)


@mirrors(SOURCE, REQUIREMENTS + "should allow well known label exceptions")
@pytest.mark.parametrize(
    "label",
    [
        k
        for k in CORE_WELL_KNOWN_LABELS
        if k not in ("karpenter.sh/nodepool", "karpenter.sh/capacity-type")
    ],
)
def test_well_known_labels(api: Admission, label: str) -> None:
    api.admitted(with_reqs(req(label, "In", "test")), runtime=True)


@mirrors(SOURCE, REQUIREMENTS + "should allow non-empty set after removing overlapped value")
def test_overlapping_in_and_not_in(api: Admission) -> None:
    reqs = [req(ZONE, "In", "test", "foo"), req(ZONE, "NotIn", "test", "bar")]
    stored = api.admitted(with_reqs(*reqs), runtime=True)
    assert stored["spec"]["template"]["spec"]["requirements"] == reqs


@mirrors(SOURCE, REQUIREMENTS + "should allow empty requirements")
def test_empty_requirements(api: Admission) -> None:
    stored = api.admitted(with_reqs(), runtime=True)
    assert stored["spec"]["template"]["spec"]["requirements"] == []


def _bound_ids(case: tuple[str, tuple[str, ...]]) -> str:
    return f"{case[0]}-{'-'.join(case[1]) or 'none'}"


@mirrors(SOURCE, REQUIREMENTS + "should fail with invalid GT or LT values")
@pytest.mark.parametrize("case", [c for c in BAD_BOUNDS if c[0] in ("Gt", "Lt")], ids=_bound_ids)
def test_invalid_gt_lt(api: Admission, case: tuple[str, tuple[str, ...]]) -> None:
    found = api.refused(with_reqs(req(ZONE, case[0], *case[1])), runtime=True)
    assert [issue.path for issue in found] == ["spec.template.spec.requirements[0].values"]


@mirrors(SOURCE, REQUIREMENTS + "should fail with invalid GTE or LTE values")
@pytest.mark.parametrize("case", [c for c in BAD_BOUNDS if c[0] in ("Gte", "Lte")], ids=_bound_ids)
def test_invalid_gte_lte(api: Admission, case: tuple[str, tuple[str, ...]]) -> None:
    found = api.refused(with_reqs(req(ZONE, case[0], *case[1])), runtime=True)
    assert [issue.path for issue in found] == ["spec.template.spec.requirements[0].values"]


@mirrors(SOURCE, REQUIREMENTS + "should error when minValues is negative")
def test_negative_min_values(api: Admission) -> None:
    found = api.refused(with_reqs(req(INSTANCE_TYPE, "In", "t-1", minValues=-1)))
    assert [issue.path for issue in found] == ["spec.template.spec.requirements[0].minValues"]


@mirrors(SOURCE, REQUIREMENTS + "should error when minValues is zero")
def test_zero_min_values(api: Admission) -> None:
    found = api.refused(with_reqs(req(INSTANCE_TYPE, "In", "t-1", minValues=0)))
    assert [issue.path for issue in found] == ["spec.template.spec.requirements[0].minValues"]


@mirrors(SOURCE, REQUIREMENTS + "should error when minValues is more than 50")
def test_min_values_over_50(api: Admission) -> None:
    found = api.refused(with_reqs(req(INSTANCE_TYPE, "Exists", minValues=51)))
    assert [issue.path for issue in found] == ["spec.template.spec.requirements[0].minValues"]


@mirrors(SOURCE, REQUIREMENTS + "should allow more than 50 values if minValues is not specified.")
def test_many_values_without_min_values(api: Admission) -> None:
    values = [f"instance{i}" for i in range(90)]
    stored = api.admitted(with_reqs(req(INSTANCE_TYPE, "In", *values)))
    assert stored["spec"]["template"]["spec"]["requirements"][0]["values"] == values


@mirrors(
    SOURCE,
    REQUIREMENTS + "should error when minValues is greater than the number of unique values "
    "specified within In operator",
)
def test_min_values_over_value_count(api: Admission) -> None:
    found = api.refused(with_reqs(req(INSTANCE_TYPE, "In", "t-1", minValues=2)))
    assert [issue.path for issue in found] == ["spec.template.spec.requirements[0].minValues"]


# --- Labels ----------------------------------------------------------------------------------


@mirrors(SOURCE, LABELS + "should allow unrecognized labels")
def test_unrecognized_labels(api: Admission) -> None:
    stored = api.admitted(with_labels(foo="quirky-otter"), runtime=True)
    assert stored["spec"]["template"]["metadata"]["labels"] == {"foo": "quirky-otter"}


@mirrors(SOURCE, LABELS + "should fail for the karpenter.sh/nodepool label")
def test_nodepool_label(api: Admission) -> None:
    found = api.refused(with_labels(**{"karpenter.sh/nodepool": "pool-a"}), runtime=True)
    assert [issue.path for issue in found] == ["spec.template.metadata.labels"]


@mirrors(SOURCE, LABELS + "should fail for invalid label keys")
def test_invalid_label_keys(api: Admission) -> None:
    found = api.refused_at_runtime_only(with_labels(**{"spaces are not allowed": "otter"}))
    assert [issue.path for issue in found] == ["spec.template.metadata.labels"]


@mirrors(SOURCE, LABELS + "should fail at runtime for label keys that are too long")
@pytest.mark.parametrize("key", LONG_KEYS, ids=["long prefix", "long name"])
def test_too_long_label_keys(api: Admission, key: str) -> None:
    found = api.refused_at_runtime_only(with_labels(**{key: "otter"}))
    assert [issue.path for issue in found] == ["spec.template.metadata.labels"]


@mirrors(SOURCE, LABELS + "should fail for invalid label values")
def test_invalid_label_values(api: Admission) -> None:
    found = api.refused(with_labels(otter="/ is not allowed"), runtime=True)
    assert [issue.path for issue in found] == ["spec.template.metadata.labels"]


@mirrors(SOURCE, LABELS + "should fail for restricted label domains")
@pytest.mark.parametrize("domain", CORE_RESTRICTED_LABEL_DOMAINS)
def test_restricted_label_domains(api: Admission, domain: str) -> None:
    found = api.refused(with_labels(**{f"{domain}/unknown": "otter"}), runtime=True)
    assert [issue.path for issue in found] == ["spec.template.metadata.labels"]


@mirrors(SOURCE, LABELS + "should allow labels kOps require")
def test_kops_labels(api: Admission) -> None:
    labels = {"kops.k8s.io/instancegroup": "karpenter-nodes", "kops.k8s.io/gpu": "1"}
    stored = api.admitted(with_labels(**labels), runtime=True)
    assert stored["spec"]["template"]["metadata"]["labels"] == labels


@mirrors(SOURCE, LABELS + "should allow labels in kubernetes domains")
@pytest.mark.parametrize("key", ["kubernetes.io", "k8s.io"])
def test_kubernetes_domain_labels(api: Admission, key: str) -> None:
    api.admitted(with_labels(**{key: "test-value"}), runtime=True)


@mirrors(SOURCE, LABELS + "should allow labels prefixed with the kubernetes domain")
@pytest.mark.parametrize("domain", ["kubernetes.io", "k8s.io"])
def test_kubernetes_prefixed_labels(api: Admission, domain: str) -> None:
    api.admitted(with_labels(**{f"{domain}/key": "test-value"}), runtime=True)


@mirrors(SOURCE, LABELS + "should allow subdomain labels in restricted domains exceptions list")
@pytest.mark.parametrize("domain", ["kubernetes.io", "k8s.io"])
def test_kubernetes_subdomain_labels(api: Admission, domain: str) -> None:
    api.admitted(with_labels(**{f"subdomain.{domain}": "test-value"}), runtime=True)


@mirrors(SOURCE, LABELS + "should allow subdomain labels prefixed with the kubernetes domain")
@pytest.mark.parametrize("domain", ["kubernetes.io", "k8s.io"])
def test_kubernetes_subdomain_prefixed_labels(api: Admission, domain: str) -> None:
    api.admitted(with_labels(**{f"subdomain.{domain}/key": "test-value"}), runtime=True)


# --- TerminationGracePeriod ------------------------------------------------------------------


@mirrors(
    SOURCE,
    "CEL/Validation / TerminationGracePeriod / should succeed on a valid terminationGracePeriod",
)
@pytest.mark.parametrize("value", ["30s", "1h30m5s"], ids=["single unit", "multiple units"])
def test_valid_termination_grace_period(api: Admission, value: str) -> None:
    stored = api.admitted(template(core_nodepool(), terminationGracePeriod=value))
    assert stored["spec"]["template"]["spec"]["terminationGracePeriod"] == value


@mirrors(
    SOURCE,
    "CEL/Validation / TerminationGracePeriod / should fail on an invalid terminationGracePeriod",
)
@pytest.mark.parametrize(
    "value",
    ["-1s", "1hr", "Never", "FooNever"],
    ids=["negative", "invalid unit", "never", "partial match"],
)
def test_invalid_termination_grace_period(api: Admission, value: str) -> None:
    found = api.refused(template(core_nodepool(), terminationGracePeriod=value))
    assert [issue.path for issue in found] == ["spec.template.spec.terminationGracePeriod"]
