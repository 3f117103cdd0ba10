"""EC2NodeClass ``blockDeviceMappings``: EBS volumes attached at launch, at most one root volume."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from common.kubemodel import KubeModel, matching, rule_error

VOLUME_SIZE = (
    r"^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi"
    r"|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G"
    r"|([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$"
)
"""Karpenter's CRD pattern of an EBS volume size (at most 64T)."""


class BlockDevice(KubeModel):
    """``blockDeviceMappings[].ebs``: one EBS volume."""

    delete_on_termination: bool | None = None
    encrypted: bool | None = None
    iops: int | None = None
    kms_key_id: str | None = Field(default=None, alias="kmsKeyID")
    snapshot_id: str | None = Field(default=None, alias="snapshotID")
    throughput: int | None = None
    volume_initialization_rate: Annotated[int, Field(ge=100, le=300)] | None = None
    volume_size: (
        Annotated[str, matching(VOLUME_SIZE, "a volume size such as 20Gi or 100G (at most 64T)")]
        | None
    ) = None
    volume_type: Literal["standard", "io1", "io2", "gp2", "sc1", "st1", "gp3"] | None = None

    @model_validator(mode="after")
    def _rules(self) -> BlockDevice:
        if self.snapshot_id is None and self.volume_size is None:
            raise rule_error(
                "set snapshotID or volumeSize (rule: snapshotID or volumeSize must be defined)",
                "volumeSize",
            )
        if self.volume_initialization_rate is not None and not self.snapshot_id:
            raise rule_error(
                "volumeInitializationRate needs a snapshotID (rule: snapshotID must be set when "
                "volumeInitializationRate is set)",
                "snapshotID",
            )
        return self


class BlockDeviceMapping(KubeModel):
    """``blockDeviceMappings[]``: a device name, its EBS volume, and whether it is the root."""

    device_name: str | None = None
    ebs: BlockDevice | None = None
    root_volume: bool | None = None


def _one_root(mappings: list[BlockDeviceMapping]) -> list[BlockDeviceMapping]:
    if sum(1 for m in mappings if m.root_volume) > 1:
        raise ValueError(
            "more than one mapping has rootVolume: true "
            "(rule: must have only one blockDeviceMappings with rootVolume)"
        )
    return mappings


BlockDeviceMappings = Annotated[
    list[BlockDeviceMapping], Field(max_length=50), AfterValidator(_one_root)
]
