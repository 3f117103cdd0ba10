"""The Go types Karpenter hashes for static drift, field by field, in Go's declaration order:
``NodeClaimTemplate`` (``karpenter.sh`` v1, what a NodePool's hash covers) and
``EC2NodeClassSpec`` (``karpenter.k8s.aws`` v1). Field order, Go names, JSON names, pointer-ness
and ``hash`` tags all change the hash, so each follows the Karpenter release the agent follows
(v1.14.1); fields tagged ``ignore`` are listed because they still count for a struct being zero.
"""

from __future__ import annotations

from agent.hashing.gohash import (
    Bool,
    Field,
    Int,
    Map,
    MetaDuration,
    MetaTime,
    Nillable,
    Ptr,
    Slice,
    Str,
    Struct,
)

_INT32 = Int("i")
_INT64 = Int("q")
_OPT_STR = Ptr(Str())
_UNHASHED = Slice(Str())
"""A list field the hash ignores (its element type never matters)."""

TAINT = Struct(
    "Taint",
    (
        Field("Key", "key", Str()),
        Field("Value", "value", Str()),
        Field("Effect", "effect", Str()),
        Field("TimeAdded", "timeAdded", Ptr(MetaTime())),
    ),
)

NODECLAIM_TEMPLATE = Struct(
    "NodeClaimTemplate",
    (
        Field(
            "ObjectMeta",
            "metadata",
            Struct(
                "ObjectMeta",
                (
                    Field("Labels", "labels", Map(Str())),
                    Field("Annotations", "annotations", Map(Str())),
                ),
            ),
        ),
        Field(
            "Spec",
            "spec",
            Struct(
                "NodeClaimTemplateSpec",
                (
                    Field("Taints", "taints", Slice(TAINT)),
                    Field("StartupTaints", "startupTaints", Slice(TAINT)),
                    Field("Requirements", "requirements", _UNHASHED, "ignore"),
                    Field(
                        "NodeClassRef",
                        "nodeClassRef",
                        Ptr(
                            Struct(
                                "NodeClassReference",
                                (
                                    Field("Kind", "kind", Str()),
                                    Field("Name", "name", Str()),
                                    Field("Group", "group", Str()),
                                ),
                            )
                        ),
                    ),
                    Field("TerminationGracePeriod", "terminationGracePeriod", Ptr(MetaDuration())),
                    Field("ExpireAfter", "expireAfter", Nillable()),
                ),
            ),
        ),
    ),
)
"""``karpenter.sh/v1`` ``NodeClaimTemplate``: ``NodePool.Hash()`` hashes ``spec.template``."""

_KUBELET = Struct(
    "KubeletConfiguration",
    (
        Field("ClusterDNS", "clusterDNS", Slice(Str())),
        Field("MaxPods", "maxPods", Ptr(_INT32)),
        Field("PodsPerCore", "podsPerCore", Ptr(_INT32)),
        Field("SystemReserved", "systemReserved", Map(Str())),
        Field("KubeReserved", "kubeReserved", Map(Str())),
        Field("EvictionHard", "evictionHard", Map(Str())),
        Field("EvictionSoft", "evictionSoft", Map(Str())),
        Field("EvictionSoftGracePeriod", "evictionSoftGracePeriod", Map(MetaDuration())),
        Field("EvictionMaxPodGracePeriod", "evictionMaxPodGracePeriod", Ptr(_INT32)),
        Field("ImageGCHighThresholdPercent", "imageGCHighThresholdPercent", Ptr(_INT32)),
        Field("ImageGCLowThresholdPercent", "imageGCLowThresholdPercent", Ptr(_INT32)),
        Field("CPUCFSQuota", "cpuCFSQuota", Ptr(Bool())),
    ),
)

_BLOCK_DEVICE = Struct(
    "BlockDevice",
    (
        Field("DeleteOnTermination", "deleteOnTermination", Ptr(Bool())),
        Field("Encrypted", "encrypted", Ptr(Bool())),
        Field("IOPS", "iops", Ptr(_INT64)),
        Field("KMSKeyID", "kmsKeyID", _OPT_STR),
        Field("SnapshotID", "snapshotID", _OPT_STR),
        Field("Throughput", "throughput", Ptr(_INT64)),
        Field("VolumeInitializationRate", "volumeInitializationRate", Ptr(_INT32)),
        Field("VolumeSize", "volumeSize", _OPT_STR, "string"),
        Field("VolumeType", "volumeType", _OPT_STR),
    ),
)

_BLOCK_DEVICE_MAPPING = Struct(
    "BlockDeviceMapping",
    (
        Field("DeviceName", "deviceName", _OPT_STR),
        Field("EBS", "ebs", Ptr(_BLOCK_DEVICE)),
        Field("RootVolume", "rootVolume", Bool()),
    ),
)

_NETWORK_INTERFACE = Struct(
    "NetworkInterface",
    (
        Field("NetworkCardIndex", "networkCardIndex", _INT32),
        Field("DeviceIndex", "deviceIndex", _INT32),
        Field("InterfaceType", "interfaceType", Str()),
    ),
)

EC2NODECLASS_SPEC = Struct(
    "EC2NodeClassSpec",
    (
        Field("SubnetSelectorTerms", "subnetSelectorTerms", _UNHASHED, "ignore"),
        Field("SecurityGroupSelectorTerms", "securityGroupSelectorTerms", _UNHASHED, "ignore"),
        Field(
            "CapacityReservationSelectorTerms",
            "capacityReservationSelectorTerms",
            _UNHASHED,
            "ignore",
        ),
        Field(
            "PlacementGroupSelector",
            "placementGroupSelector",
            Ptr(
                Struct(
                    "PlacementGroupSelector",
                    (Field("Name", "name", _OPT_STR), Field("ID", "id", _OPT_STR)),
                )
            ),
        ),
        Field("AssociatePublicIPAddress", "associatePublicIPAddress", Ptr(Bool())),
        Field("IPPrefixCount", "ipPrefixCount", Ptr(_INT32), "ignore"),
        Field("AMISelectorTerms", "amiSelectorTerms", _UNHASHED, "ignore"),
        Field("AMIFamily", "amiFamily", _OPT_STR, "ignore"),
        Field("UserData", "userData", _OPT_STR),
        Field("Role", "role", Str()),
        Field("InstanceProfile", "instanceProfile", _OPT_STR),
        Field("Tags", "tags", Map(Str())),
        Field("Kubelet", "kubelet", Ptr(_KUBELET)),
        Field("BlockDeviceMappings", "blockDeviceMappings", Slice(Ptr(_BLOCK_DEVICE_MAPPING))),
        Field("InstanceStorePolicy", "instanceStorePolicy", _OPT_STR),
        Field("NetworkInterfaces", "networkInterfaces", Slice(Ptr(_NETWORK_INTERFACE))),
        Field("DetailedMonitoring", "detailedMonitoring", Ptr(Bool())),
        Field(
            "MetadataOptions",
            "metadataOptions",
            Ptr(
                Struct(
                    "MetadataOptions",
                    (
                        Field("HTTPEndpoint", "httpEndpoint", _OPT_STR),
                        Field("HTTPProtocolIPv6", "httpProtocolIPv6", _OPT_STR),
                        Field("HTTPPutResponseHopLimit", "httpPutResponseHopLimit", Ptr(_INT64)),
                        Field("HTTPTokens", "httpTokens", _OPT_STR),
                    ),
                )
            ),
        ),
        Field(
            "ConnectionTracking",
            "connectionTracking",
            Ptr(
                Struct(
                    "ConnectionTracking",
                    (
                        Field("TCPEstablishedTimeout", "tcpEstablishedTimeout", Ptr(_INT32)),
                        Field("UDPStreamTimeout", "udpStreamTimeout", Ptr(_INT32)),
                        Field("UDPTimeout", "udpTimeout", Ptr(_INT32)),
                    ),
                )
            ),
        ),
        Field("Context", "context", _OPT_STR),
        Field(
            "CPUOptions",
            "cpuOptions",
            Ptr(
                Struct(
                    "CPUOptions", (Field("NestedVirtualization", "nestedVirtualization", _OPT_STR),)
                )
            ),
        ),
    ),
)
"""``karpenter.k8s.aws/v1`` ``EC2NodeClassSpec``."""

__all__ = ["EC2NODECLASS_SPEC", "NODECLAIM_TEMPLATE", "TAINT"]
