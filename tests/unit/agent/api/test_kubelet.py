"""EC2NodeClass ``kubelet``: reserved resources, eviction thresholds and their grace periods, image
garbage collection thresholds, and the other kubelet settings."""

from __future__ import annotations

from typing import Any

import pytest

from .helpers import (
    TEMPLATE,
    ec2nodeclass,
    nodeclass_ok,
    nodeclass_refused,
    nodepool,
    pool_refused,
    with_field,
)

KUBELET = "spec.kubelet"
SIGNALS = [
    "memory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "pid.available",
]


def with_kubelet(**kubelet: Any) -> dict[str, Any]:
    return ec2nodeclass(kubelet=kubelet)


def test_full_kubelet_is_accepted() -> None:
    kubelet = {
        "clusterDNS": ["10.100.0.10"],
        "maxPods": 110,
        "podsPerCore": 10,
        "systemReserved": {
            "cpu": "100m",
            "memory": "100Mi",
            "ephemeral-storage": "1Gi",
            "pid": "100",
        },
        "kubeReserved": {
            "cpu": "200m",
            "memory": "100Mi",
            "ephemeral-storage": "3Gi",
            "pid": "200",
        },
        "evictionHard": dict.fromkeys(SIGNALS, "5%"),
        "evictionSoft": {"memory.available": "500Mi", "nodefs.available": "15%"},
        "evictionSoftGracePeriod": {"memory.available": "1m", "nodefs.available": "1m30s"},
        "evictionMaxPodGracePeriod": 60,
        "imageGCHighThresholdPercent": 85,
        "imageGCLowThresholdPercent": 80,
        "cpuCFSQuota": True,
    }
    parsed = nodeclass_ok(with_kubelet(**kubelet)).spec.kubelet
    assert parsed is not None
    assert (parsed.cluster_dns, parsed.cpu_cfs_quota) == (["10.100.0.10"], True)
    assert parsed.image_gc_high_threshold_percent == 85


# --- maxPods, podsPerCore ----------------------------------------------------------------------


@pytest.mark.parametrize("field", ["maxPods", "podsPerCore"])
@pytest.mark.parametrize("value", [0, 1, 737])
def test_pod_counts_of_zero_or_more_are_accepted(field: str, value: int) -> None:
    nodeclass_ok(with_kubelet(**{field: value}))


@pytest.mark.parametrize("field", ["maxPods", "podsPerCore"])
@pytest.mark.parametrize(("value", "fragment"), [(-1, "at least 0"), ("110", "must be an integer")])
def test_negative_or_non_integer_pod_counts_are_refused(
    field: str, value: object, fragment: str
) -> None:
    nodeclass_refused(with_kubelet(**{field: value}), f"{KUBELET}.{field}", fragment)


# --- systemReserved, kubeReserved --------------------------------------------------------------


@pytest.mark.parametrize("field", ["systemReserved", "kubeReserved"])
@pytest.mark.parametrize(
    "reserved",
    [
        {"cpu": "0"},
        {"cpu": "1", "memory": "1.5Gi"},
        {"ephemeral-storage": "10G", "pid": "1000"},
        {"memory": "+100Mi"},
        {"cpu": "1e3"},
    ],
    ids=["zero", "cpu-memory", "storage-pid", "plus", "exponent"],
)
def test_reserved_resources_are_accepted(field: str, reserved: dict[str, str]) -> None:
    nodeclass_ok(with_kubelet(**{field: reserved}))


@pytest.mark.parametrize("field", ["systemReserved", "kubeReserved"])
@pytest.mark.parametrize("key", ["gpu", "nvidia.com/gpu", "pods", "CPU"])
def test_reserved_resources_other_than_cpu_memory_storage_pid_are_refused(
    field: str, key: str
) -> None:
    issue = nodeclass_refused(
        with_kubelet(**{field: {"cpu": "1", key: "1"}}),
        f"{KUBELET}.{field}",
        f"valid keys for {field} are cpu, memory, ephemeral-storage, pid",
    )
    assert repr(key) in issue.message


@pytest.mark.parametrize("field", ["systemReserved", "kubeReserved"])
@pytest.mark.parametrize("value", ["-1", "-100Mi", "-0.5"])
def test_negative_reserved_quantities_are_refused(field: str, value: str) -> None:
    nodeclass_refused(
        with_kubelet(**{field: {"memory": value}}),
        f"{KUBELET}.{field}",
        f"{field} value cannot be a negative resource quantity",
    )


@pytest.mark.parametrize("field", ["systemReserved", "kubeReserved"])
@pytest.mark.parametrize("value", ["lots", "1GB", "", "1 Gi"])
def test_reserved_values_that_are_not_quantities_are_refused(field: str, value: str) -> None:
    nodeclass_refused(
        with_kubelet(**{field: {"memory": value}}), f"{KUBELET}.{field}", "is not a quantity"
    )


@pytest.mark.parametrize("field", ["systemReserved", "kubeReserved"])
def test_reserved_values_must_be_strings(field: str) -> None:
    nodeclass_refused(
        with_kubelet(**{field: {"cpu": 1}}), f"{KUBELET}.{field}.cpu", "must be a string"
    )


# The CRD refuses any reserved value that starts with '-' (!self[x].startsWith('-')).
@pytest.mark.parametrize("field", ["systemReserved", "kubeReserved"])
def test_minus_zero_reserved_quantity_is_refused(field: str) -> None:
    nodeclass_refused(
        with_kubelet(**{field: {"cpu": "-0"}}), f"{KUBELET}.{field}", "negative resource quantity"
    )


# --- evictionHard, evictionSoft ----------------------------------------------------------------


@pytest.mark.parametrize("field", ["evictionHard", "evictionSoft"])
@pytest.mark.parametrize(
    "value",
    ["0%", "5%", "5.5%", "10.25%", "99.99%", "100%", "100.0%", "100.00%", "100Mi", "1.5Gi", "0"],
)
def test_eviction_thresholds_as_percentages_or_quantities_are_accepted(
    field: str, value: str
) -> None:
    kubelet: dict[str, Any] = {field: dict.fromkeys(SIGNALS, value)}
    if field == "evictionSoft":
        kubelet["evictionSoftGracePeriod"] = dict.fromkeys(SIGNALS, "1m")
    nodeclass_ok(with_kubelet(**kubelet))


@pytest.mark.parametrize("field", ["evictionHard", "evictionSoft"])
@pytest.mark.parametrize("value", ["101%", "-5%", "100.5%", "lots", "5%%", "%", "1GB"])
def test_eviction_thresholds_that_are_neither_are_refused(field: str, value: str) -> None:
    kubelet: dict[str, Any] = {field: {"memory.available": value}}
    if field == "evictionSoft":
        kubelet["evictionSoftGracePeriod"] = {"memory.available": "1m"}
    issue = nodeclass_refused(with_kubelet(**kubelet), f"{KUBELET}.{field}", "must be a percentage")
    assert "memory.available" in issue.message


@pytest.mark.parametrize("field", ["evictionHard", "evictionSoft", "evictionSoftGracePeriod"])
@pytest.mark.parametrize(
    "key", ["memory.free", "nodefs.inodesfree", "allocatableMemory.available", ""]
)
def test_eviction_keys_other_than_the_six_signals_are_refused(field: str, key: str) -> None:
    value = "1m" if field == "evictionSoftGracePeriod" else "5%"
    issue = nodeclass_refused(
        with_kubelet(**{field: {key: value}}), f"{KUBELET}.{field}", "is not an eviction signal"
    )
    for signal in SIGNALS:
        assert signal in issue.message


# The CRD's percentage pattern: \d{1,2}(\.\d{1,2})?% or 100(\.0{1,2})?% (ASCII digits).
@pytest.mark.parametrize("value", ["5.125%", "1e1%", "+5%", "5_0%", "5.%", "\uff15%"])
def test_eviction_percentages_outside_the_crd_pattern_are_refused(value: str) -> None:
    nodeclass_refused(
        with_kubelet(evictionHard={"memory.available": value}),
        f"{KUBELET}.evictionHard",
        "must be a percentage",
    )


# --- evictionSoft / evictionSoftGracePeriod pairing --------------------------------------------


def test_matching_soft_thresholds_and_grace_periods_are_accepted() -> None:
    nodeclass_ok(
        with_kubelet(
            evictionSoft={"memory.available": "10%", "pid.available": "10%"},
            evictionSoftGracePeriod={"memory.available": "1m", "pid.available": "2m"},
        )
    )


@pytest.mark.parametrize(
    "grace", [None, {}, {"pid.available": "1m"}], ids=["absent", "empty", "other-signal"]
)
def test_soft_threshold_without_a_grace_period_is_refused(grace: dict[str, str] | None) -> None:
    kubelet: dict[str, Any] = {"evictionSoft": {"memory.available": "10%"}}
    if grace is not None:
        kubelet["evictionSoftGracePeriod"] = grace
    issue = nodeclass_refused(
        with_kubelet(**kubelet),
        f"{KUBELET}.evictionSoft",
        "has no matching evictionSoftGracePeriod",
    )
    assert "memory.available" in issue.message


@pytest.mark.parametrize("soft", [None, {}], ids=["absent", "empty"])
def test_grace_period_without_a_soft_threshold_is_refused(soft: dict[str, str] | None) -> None:
    kubelet: dict[str, Any] = {"evictionSoftGracePeriod": {"nodefs.available": "1m"}}
    if soft is not None:
        kubelet["evictionSoft"] = soft
    nodeclass_refused(
        with_kubelet(**kubelet),
        f"{KUBELET}.evictionSoftGracePeriod",
        "has no matching evictionSoft",
    )


@pytest.mark.parametrize("grace", ["1m", "1m30s", "90s", "1h", "1.5h", "500ms", "0s"])
def test_grace_periods_as_go_durations_are_accepted(grace: str) -> None:
    nodeclass_ok(
        with_kubelet(
            evictionSoft={"memory.available": "10%"},
            evictionSoftGracePeriod={"memory.available": grace},
        )
    )


@pytest.mark.parametrize("grace", ["1 minute", "1d", "soon", ""])
def test_grace_period_that_is_not_a_duration_is_refused(grace: str) -> None:
    nodeclass_refused(
        with_kubelet(
            evictionSoft={"memory.available": "10%"},
            evictionSoftGracePeriod={"memory.available": grace},
        ),
        f"{KUBELET}.evictionSoftGracePeriod",
        "duration",
    )


# --- image garbage collection ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("high", "low"), [(85, 80), (100, 0), (1, 0), (None, 100), (0, None)], ids=str
)
def test_image_gc_high_above_low_is_accepted(high: int | None, low: int | None) -> None:
    kubelet: dict[str, int] = {}
    if high is not None:
        kubelet["imageGCHighThresholdPercent"] = high
    if low is not None:
        kubelet["imageGCLowThresholdPercent"] = low
    nodeclass_ok(with_kubelet(**kubelet))


@pytest.mark.parametrize(("high", "low"), [(80, 80), (70, 80), (0, 0)], ids=str)
def test_image_gc_high_not_above_low_is_refused(high: int, low: int) -> None:
    issue = nodeclass_refused(
        with_kubelet(imageGCHighThresholdPercent=high, imageGCLowThresholdPercent=low),
        f"{KUBELET}.imageGCHighThresholdPercent",
        "must be greater than imageGCLowThresholdPercent",
    )
    assert f"({high})" in issue.message


@pytest.mark.parametrize("field", ["imageGCHighThresholdPercent", "imageGCLowThresholdPercent"])
@pytest.mark.parametrize(
    ("value", "fragment"), [(-1, "at least 0"), (101, "at most 100"), ("50", "must be an integer")]
)
def test_image_gc_thresholds_outside_0_to_100_are_refused(
    field: str, value: object, fragment: str
) -> None:
    nodeclass_refused(with_kubelet(**{field: value}), f"{KUBELET}.{field}", fragment)


# --- names and types ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("imageGcHighThresholdPercent", 85, "unknown field"),
        ("clusterDns", ["10.0.0.10"], "unknown field"),
        ("cpuCfsQuota", True, "unknown field"),
        ("max_pods", 110, "unknown field"),
        ("maxPod", 110, "unknown field"),
        ("clusterDNS", "10.0.0.10", "must be a list"),
        ("cpuCFSQuota", "true", "must be a boolean"),
        ("evictionMaxPodGracePeriod", "60", "must be an integer"),
        ("evictionHard", ["memory.available"], "must be a mapping"),
    ],
)
def test_misnamed_or_mistyped_kubelet_fields_are_refused(
    field: str, value: object, fragment: str
) -> None:
    nodeclass_refused(with_kubelet(**{field: value}), f"{KUBELET}.{field}", fragment)


def test_kubelet_in_a_nodepool_template_is_an_unknown_field_in_v1() -> None:
    data = with_field(nodepool(), f"{TEMPLATE}.kubelet", {"maxPods": 110})
    pool_refused(data, f"{TEMPLATE}.kubelet", "unknown field")
