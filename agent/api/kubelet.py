"""EC2NodeClass ``kubelet``: the kubelet settings Karpenter passes to nodes (and uses to compute
allocatable capacity), with the v1 CRD's rules on eviction signals and reserved resources."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, ValidationInfo, field_validator, model_validator

from agent.api.quantity import QuantityError, parse_quantity
from common.kubemodel import KubeModel, rule_error

EVICTION_SIGNALS = (
    "memory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "pid.available",
)
RESERVABLE = ("cpu", "memory", "ephemeral-storage", "pid")
_GO_DURATION = re.compile(r"0|\+?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|\u00b5s|ms|s|m|h))+")
"""A non-negative Go duration (time.ParseDuration), as the kubelet's grace periods are."""
_PERCENT = re.compile(r"([0-9]{1,2}(\.[0-9]{1,2})?|100(\.0{1,2})?)%")


def _signals(field: str, values: dict[str, str] | None, percent_ok: bool) -> None:
    for key, value in (values or {}).items():
        if key not in EVICTION_SIGNALS:
            raise ValueError(
                f"{key!r} is not an eviction signal; valid keys for {field} are "
                f"{', '.join(EVICTION_SIGNALS)}"
            )
        if not percent_ok:
            continue
        if value.endswith("%"):
            if not _PERCENT.fullmatch(value):
                raise ValueError(
                    f"{key}: {value!r} must be a percentage 0-100% with at most two decimals "
                    "(such as 5% or 7.5%) or a quantity"
                )
            continue
        try:
            parse_quantity(value)
        except QuantityError as exc:
            raise ValueError(f"{key}: {value!r} must be a percentage or a quantity") from exc


def _reserved(field: str, values: dict[str, str] | None) -> None:
    for key, value in (values or {}).items():
        if key not in RESERVABLE:
            raise ValueError(f"valid keys for {field} are {', '.join(RESERVABLE)}, not {key!r}")
        try:
            amount = parse_quantity(value)
        except QuantityError as exc:
            raise ValueError(f"{key}: {exc}") from exc
        if amount < 0 or value.startswith("-"):
            raise ValueError(
                f"{key}: {value!r} ({field} value cannot be a negative resource quantity)"
            )


class KubeletConfiguration(KubeModel):
    """``spec.kubelet`` of an EC2NodeClass (moved there from the NodePool in v1)."""

    cluster_dns: list[str] | None = Field(default=None, alias="clusterDNS")
    max_pods: Annotated[int, Field(ge=0)] | None = None
    pods_per_core: Annotated[int, Field(ge=0)] | None = None
    system_reserved: dict[str, str] | None = None
    kube_reserved: dict[str, str] | None = None
    eviction_hard: dict[str, str] | None = None
    eviction_soft: dict[str, str] | None = None
    eviction_soft_grace_period: dict[str, str] | None = None
    eviction_max_pod_grace_period: int | None = None
    image_gc_high_threshold_percent: Annotated[int, Field(ge=0, le=100)] | None = Field(
        default=None, alias="imageGCHighThresholdPercent"
    )
    image_gc_low_threshold_percent: Annotated[int, Field(ge=0, le=100)] | None = Field(
        default=None, alias="imageGCLowThresholdPercent"
    )
    cpu_cfs_quota: bool | None = Field(default=None, alias="cpuCFSQuota")

    @field_validator("system_reserved", "kube_reserved")
    @classmethod
    def _reserved(
        cls, values: dict[str, str] | None, info: ValidationInfo
    ) -> dict[str, str] | None:
        name = "systemReserved" if info.field_name == "system_reserved" else "kubeReserved"
        _reserved(name, values)
        return values

    @field_validator("eviction_hard", "eviction_soft")
    @classmethod
    def _eviction(cls, values: dict[str, str] | None) -> dict[str, str] | None:
        _signals("eviction thresholds", values, percent_ok=True)
        return values

    @field_validator("eviction_soft_grace_period")
    @classmethod
    def _grace(cls, values: dict[str, str] | None) -> dict[str, str] | None:
        _signals("evictionSoftGracePeriod", values, percent_ok=False)
        for key, value in (values or {}).items():
            if not _GO_DURATION.fullmatch(value):
                raise ValueError(
                    f"{key}: {value!r} is not a duration such as 90s, 1m30s or 2m; Karpenter "
                    "cannot decode an EC2NodeClass whose grace period is not a duration"
                )
        return values

    @model_validator(mode="after")
    def _rules(self) -> KubeletConfiguration:
        high, low = self.image_gc_high_threshold_percent, self.image_gc_low_threshold_percent
        if high is not None and low is not None and high <= low:
            raise rule_error(
                f"imageGCHighThresholdPercent ({high}) must be greater than "
                f"imageGCLowThresholdPercent ({low})",
                "imageGCHighThresholdPercent",
            )
        soft = set(self.eviction_soft or {})
        grace = set(self.eviction_soft_grace_period or {})
        if soft - grace:
            raise rule_error(
                f"evictionSoft {', '.join(sorted(soft - grace))} has no matching "
                "evictionSoftGracePeriod",
                "evictionSoft",
            )
        if grace - soft:
            raise rule_error(
                f"evictionSoftGracePeriod {', '.join(sorted(grace - soft))} has no matching "
                "evictionSoft",
                "evictionSoftGracePeriod",
            )
        return self
