"""``karpenter.k8s.aws/v1`` EC2NodeClass: how nodes are launched on EC2 (AMIs, subnets, security
groups, IAM, metadata options, block devices, kubelet settings), with Karpenter v1's rules.

Field set and rules follow the Karpenter AWS provider's v1 CRD (v1.14 release). The defaults
``metadataOptions`` (IMDSv2 required, hop limit 1) are applied when the field is absent.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from agent.api.blockdevices import BlockDeviceMappings
from agent.api.kubelet import KubeletConfiguration
from agent.api.nodeclass_status import EC2NodeClassStatus
from common.kubemodel import KubeModel, ObjectMeta, rule_error
from common.selectors import (
    ALIAS_TO_AMI_FAMILY,
    AMISelectorTerm,
    CapacityReservationSelectorTerm,
    PlacementGroupSelector,
    SecurityGroupSelectorTerm,
    SubnetSelectorTerm,
)

AMIFamily = Literal[
    "AL2", "AL2023", "Bottlerocket", "Custom", "Windows2019", "Windows2022", "Windows2025"
]
Enabled = Literal["enabled", "disabled"]

RESTRICTED_TAG_KEYS = (
    "eks:eks-cluster-name",
    "karpenter.sh/nodepool",
    "karpenter.sh/nodeclaim",
    "karpenter.k8s.aws/ec2nodeclass",
)


class MetadataOptions(KubeModel):
    """``metadataOptions``: the instance metadata service (IMDS) settings of launched nodes."""

    http_endpoint: Enabled = "enabled"
    http_protocol_ipv6: Enabled = Field(default="disabled", alias="httpProtocolIPv6")
    http_put_response_hop_limit: Annotated[int, Field(ge=1, le=64)] = 1
    http_tokens: Literal["required", "optional"] = "required"


class ConnectionTracking(KubeModel):
    """``connectionTracking``: idle timeouts of tracked connections on the primary ENI."""

    tcp_established_timeout: Annotated[int, Field(ge=60, le=432000)] | None = None
    udp_stream_timeout: Annotated[int, Field(ge=60, le=180)] | None = None
    udp_timeout: Annotated[int, Field(ge=30, le=60)] | None = None

    @model_validator(mode="after")
    def _some(self) -> ConnectionTracking:
        if self.model_fields_set == set():
            raise rule_error(
                "set at least one of tcpEstablishedTimeout, udpStreamTimeout or udpTimeout"
            )
        return self


class CPUOptions(KubeModel):
    """``cpuOptions``: processor features of launched instances."""

    nested_virtualization: Enabled | None = None


class NetworkInterface(KubeModel):
    """``networkInterfaces[]``: an ENI to attach at launch."""

    device_index: Annotated[int, Field(ge=0)]
    interface_type: Literal["interface", "efa-only"]
    network_card_index: Annotated[int, Field(ge=0)]


class EC2NodeClassSpec(KubeModel):
    """``spec`` of an EC2NodeClass."""

    ami_family: AMIFamily | None = None
    ami_selector_terms: Annotated[list[AMISelectorTerm], Field(min_length=1, max_length=30)]
    subnet_selector_terms: Annotated[list[SubnetSelectorTerm], Field(min_length=1, max_length=30)]
    security_group_selector_terms: Annotated[
        list[SecurityGroupSelectorTerm], Field(min_length=1, max_length=30)
    ]
    capacity_reservation_selector_terms: (
        Annotated[list[CapacityReservationSelectorTerm], Field(max_length=30)] | None
    ) = None
    associate_public_ip_address: bool | None = Field(default=None, alias="associatePublicIPAddress")
    role: Annotated[str, Field(min_length=1)] | None = None
    instance_profile: Annotated[str, Field(min_length=1)] | None = None
    tags: dict[str, str] | None = None
    kubelet: KubeletConfiguration | None = None
    block_device_mappings: BlockDeviceMappings | None = None
    instance_store_policy: Literal["RAID0"] | None = None
    detailed_monitoring: bool | None = None
    metadata_options: MetadataOptions = Field(default_factory=MetadataOptions)
    user_data: str | None = None
    context: str | None = None
    ip_prefix_count: Annotated[int, Field(ge=0)] | None = None
    connection_tracking: ConnectionTracking | None = None
    cpu_options: CPUOptions | None = None
    network_interfaces: Annotated[list[NetworkInterface], Field(max_length=150)] | None = None
    placement_group_selector: PlacementGroupSelector | None = None

    @field_validator("tags")
    @classmethod
    def _tags(cls, tags: dict[str, str] | None) -> dict[str, str] | None:
        for key in tags or {}:
            if key == "":
                raise ValueError("empty tag keys aren't supported")
            if key in RESTRICTED_TAG_KEYS or key.startswith("kubernetes.io/cluster"):
                raise ValueError(
                    f"tag {key!r} is restricted: Karpenter sets it on every instance itself "
                    "(rule: tags may not set kubernetes.io/cluster*, eks:eks-cluster-name, "
                    "karpenter.sh/nodepool, karpenter.sh/nodeclaim, karpenter.k8s.aws/ec2nodeclass)"
                )
        return tags

    @model_validator(mode="after")
    def _rules(self) -> EC2NodeClassSpec:
        if (self.role is None) == (self.instance_profile is None):
            raise rule_error(
                "set exactly one of 'role' or 'instanceProfile' "
                "(rule: must specify exactly one of role and instanceProfile)",
                "role",
            )
        aliases = [t.alias_family for t in self.ami_selector_terms if t.alias_family]
        if aliases and len(self.ami_selector_terms) != 1:
            raise rule_error(
                "an alias term must be the only amiSelectorTerm (rule: 'alias' is mutually "
                "exclusive, cannot be set with a combination of other amiSelectorTerms)",
                "amiSelectorTerms",
            )
        if not aliases and self.ami_family is None:
            raise rule_error(
                "amiFamily is required when amiSelectorTerms has no alias "
                "(rule: must specify amiFamily if amiSelectorTerms does not contain an alias)",
                "amiFamily",
            )
        if aliases and self.ami_family is not None:
            expected = ALIAS_TO_AMI_FAMILY[aliases[0]]
            if self.ami_family not in (expected, "Custom"):
                raise rule_error(
                    f"amiFamily {self.ami_family} does not match the alias family "
                    f"{aliases[0]} (rule: if set, amiFamily must be '{expected}' or 'Custom' "
                    f"when using an {expected} alias)",
                    "amiFamily",
                )
        self._check_interfaces()
        return self

    def _check_interfaces(self) -> None:
        interfaces = self.network_interfaces or []
        if interfaces and not any(
            i.device_index == 0 and i.network_card_index == 0 and i.interface_type == "interface"
            for i in interfaces
        ):
            raise rule_error(
                "networkInterfaces must include a primary interface (deviceIndex 0, "
                "networkCardIndex 0, interfaceType 'interface')",
                "networkInterfaces",
            )
        pairs = [(i.network_card_index, i.device_index) for i in interfaces]
        efa_cards = [i.network_card_index for i in interfaces if i.interface_type == "efa-only"]
        if len(set(pairs)) != len(pairs) or len(set(efa_cards)) != len(efa_cards):
            raise rule_error(
                "networkInterfaces must not repeat a networkCardIndex/deviceIndex pair and may "
                "have at most one efa-only device per network card",
                "networkInterfaces",
            )

    @property
    def resolved_ami_family(self) -> str:
        """The AMI family in force: ``amiFamily``, else the alias's family."""
        if self.ami_family is not None:
            return self.ami_family
        family = self.ami_selector_terms[0].alias_family
        return ALIAS_TO_AMI_FAMILY[family] if family else "Custom"


class EC2NodeClass(KubeModel):
    """A ``karpenter.k8s.aws/v1`` EC2NodeClass."""

    api_version: Literal["karpenter.k8s.aws/v1"] = "karpenter.k8s.aws/v1"
    kind: Literal["EC2NodeClass"] = "EC2NodeClass"
    metadata: ObjectMeta
    spec: EC2NodeClassSpec
    status: EC2NodeClassStatus | None = None

    @property
    def name(self) -> str:
        """The EC2NodeClass's name."""
        return self.metadata.name or ""
