"""Hypothesis strategies for the hash differential: NodePools and EC2NodeClasses drawn over every
field Karpenter hashes, written out empty or left out, with the values' many spellings
(durations, quantities, booleans left unset or false), so driftwave's hash is held against
Karpenter's over what a user can write, not over a few examples."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tests.differential.objects import Manifest, ec2nodeclass, nodepool

_DURATIONS = ["0s", "30s", "1m", "60s", "90s", "1m30s", "1h", "60m", "720h", "43200m"]


def _maybe(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | values


def _string_map(keys: list[str], values: list[str]) -> st.SearchStrategy[dict[str, str]]:
    return st.dictionaries(st.sampled_from(keys), st.sampled_from(values), max_size=3)


def _taint(keys: list[str]) -> st.SearchStrategy[Manifest]:
    return st.fixed_dictionaries(
        {
            "key": st.sampled_from(keys),
            "effect": st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute"]),
        },
        optional={
            "value": st.sampled_from(["x", "y"]),
            "timeAdded": st.sampled_from(["2025-01-02T03:04:05Z", "2026-06-30T23:59:59Z"]),
        },
    )


def _taints(keys: list[str]) -> st.SearchStrategy[list[Manifest]]:
    """Taints with distinct key/effect pairs (taints and startup taints take different keys:
    a pair may appear once across both)."""
    return st.lists(_taint(keys), max_size=3, unique_by=lambda t: (t["key"], t["effect"]))


@st.composite
def any_nodepool(draw: st.DrawFn) -> Manifest:
    """A NodePool whose template sets, leaves out or writes out empty each hashed field."""
    metadata = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "labels": _string_map(["team", "tier", "example.com/owner"], ["a", "b", ""]),
                "annotations": _string_map(["note", "example.com/cost"], ["x", ""]),
            },
        )
    )
    spec = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "taints": _taints(["dedicated", "gpu"]),
                "startupTaints": _taints(["example.com/booting"]),
                "expireAfter": st.sampled_from([*_DURATIONS[1:], "Never"]),
                "terminationGracePeriod": st.sampled_from(_DURATIONS),
            },
        )
    )
    pool = nodepool(metadata=metadata or None, spec=spec)
    ref = pool["spec"]["template"]["spec"]["nodeClassRef"]
    ref["name"] = draw(st.sampled_from(["default", "other"]))
    return pool


def _ebs() -> st.SearchStrategy[Manifest]:
    return st.fixed_dictionaries(
        {"volumeSize": st.sampled_from(["20Gi", "20G", "100Gi", "1Ti", "1024Gi", "1000G", "1T"])},
        optional={
            "deleteOnTermination": st.booleans(),
            "encrypted": st.booleans(),
            "iops": st.sampled_from([3000, 16000]),
            "kmsKeyID": st.sampled_from(["arn:aws:kms:us-east-1:111122223333:key/k"]),
            "snapshotID": st.sampled_from(["snap-0123456789abcdef0"]),
            "throughput": st.sampled_from([125, 500]),
            "volumeType": st.sampled_from(["gp3", "io2"]),
        },
    )


def _mapping() -> st.SearchStrategy[Manifest]:
    return st.fixed_dictionaries(
        {"deviceName": st.sampled_from(["/dev/xvda", "/dev/xvdb"])},
        optional={"ebs": _ebs(), "rootVolume": st.booleans()},
    )


def _kubelet() -> st.SearchStrategy[Manifest]:
    return st.fixed_dictionaries(
        {},
        optional={
            "clusterDNS": st.lists(st.sampled_from(["10.0.0.10", "169.254.20.10"]), unique=True),
            "maxPods": st.sampled_from([20, 110]),
            "podsPerCore": st.sampled_from([0, 10]),
            "systemReserved": _string_map(["cpu", "memory"], ["100m", "200Mi"]),
            "kubeReserved": _string_map(["cpu", "ephemeral-storage"], ["200m", "1Gi"]),
            "evictionHard": _string_map(["memory.available"], ["5%", "500Mi"]),
            "imageGCHighThresholdPercent": st.sampled_from([85, 90]),
            "imageGCLowThresholdPercent": st.sampled_from([20, 80]),
            "cpuCFSQuota": st.booleans(),
        },
    )


@st.composite
def any_ec2nodeclass(draw: st.DrawFn) -> Manifest:
    """An EC2NodeClass whose spec sets, leaves out or writes out empty each hashed field."""
    ami_terms, family = draw(
        st.sampled_from(
            [
                ([{"alias": "al2023@latest"}], None),
                ([{"alias": "al2023@latest"}], "AL2023"),
                ([{"alias": "bottlerocket@latest"}], None),
                ([{"id": "ami-0123456789abcdef0"}], "AL2023"),
                ([{"tags": {"team": "a"}}], "Custom"),
            ]
        )
    )
    spec: Manifest = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "tags": _string_map(["team", "env"], ["a", "b", ""]),
                "userData": st.sampled_from(["", "echo hi"]),
                "context": st.sampled_from(["ctx-1"]),
                "detailedMonitoring": st.booleans(),
                "associatePublicIPAddress": st.booleans(),
                "instanceStorePolicy": st.just("RAID0"),
                "ipPrefixCount": st.sampled_from([0, 2]),
                "kubelet": _kubelet(),
                "blockDeviceMappings": st.lists(
                    _mapping(), max_size=2, unique_by=lambda m: m["deviceName"]
                ).filter(lambda ms: sum(bool(m.get("rootVolume")) for m in ms) <= 1),
                "metadataOptions": st.fixed_dictionaries(
                    {},
                    optional={
                        "httpEndpoint": st.sampled_from(["enabled", "disabled"]),
                        "httpTokens": st.sampled_from(["required", "optional"]),
                        "httpPutResponseHopLimit": st.sampled_from([1, 2]),
                    },
                ),
                "connectionTracking": st.fixed_dictionaries(
                    {"tcpEstablishedTimeout": st.sampled_from([60, 432000])},
                    optional={"udpTimeout": st.sampled_from([30, 60])},
                ),
            },
        )
    )
    grace = draw(_maybe(st.sampled_from(["1m", "60s", "90s", "1m30s"])))
    if grace is not None:
        kubelet = spec.setdefault("kubelet", {})
        kubelet["evictionSoft"] = {"memory.available": "500Mi"}
        kubelet["evictionSoftGracePeriod"] = {"memory.available": grace}
    spec["amiSelectorTerms"] = ami_terms
    if family is not None:
        spec["amiFamily"] = family
    return ec2nodeclass(spec)


__all__ = ["any_ec2nodeclass", "any_nodepool"]
