"""Conformance of the ``karpenter.k8s.aws/v1`` EC2NodeClass to the AWS provider's CEL validation
tests: role or instance profile, AMI families and aliases, tags, kubelet and metadata options.

Each object goes to the real API server (the chart's CRDs must admit or refuse it as the
provider's do) and through driftwave's own validation (see ``test_core_apis.Admission``).
Objects are written as the provider's Go objects are sent (durations as Go prints them).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.conformance.karpenter import mirrors
from tests.conformance.test_core_apis import Admission, api

SUITE = "aws-apis"
SOURCE = "pkg/apis/v1/ec2nodeclass_validation_cel_test.go"
TOP = "CEL/Validation / "
FAMILIES = ["AL2", "AL2023", "Bottlerocket", "Windows2019", "Windows2022", "Windows2025"]
"""The AMI families with aliases (``Custom`` aside)."""

__all__ = ["api", "nodeclass"]


def nodeclass(**spec: Any) -> dict[str, Any]:
    """The EC2NodeClass the provider's tests start from; ``spec`` keys are set (None removes)."""
    base: dict[str, Any] = {
        "amiFamily": "AL2023",
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "role": "role-1",
        "securityGroupSelectorTerms": [{"tags": {"*": "*"}}],
        "subnetSelectorTerms": [{"tags": {"*": "*"}}],
    }
    for key, value in spec.items():
        if value is None:
            base.pop(key, None)
        else:
            base[key] = copy.deepcopy(value)
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "nodeclass"},
        "spec": base,
    }


def paths(found: list[Any]) -> list[str]:
    """The field paths of driftwave's issues."""
    return [issue.path for issue in found]


# --- role / instance profile -----------------------------------------------------------------


@mirrors(SOURCE, TOP + "should succeed if just specifying role")
def test_role_alone(api: Admission) -> None:
    assert api.admitted(nodeclass())["spec"]["role"] == "role-1"


@mirrors(SOURCE, TOP + "should succeed if just specifying instance profile")
def test_instance_profile_alone(api: Admission) -> None:
    stored = api.admitted(nodeclass(role=None, instanceProfile="test-instance-profile"))
    assert stored["spec"]["instanceProfile"] == "test-instance-profile"


@mirrors(SOURCE, TOP + "should fail if specifying both instance profile and role")
def test_role_and_instance_profile(api: Admission) -> None:
    assert paths(api.refused(nodeclass(instanceProfile="test-instance-profile"))) == ["spec.role"]


@mirrors(SOURCE, TOP + "should fail if not specifying one of instance profile and role")
def test_neither_role_nor_instance_profile(api: Admission) -> None:
    assert paths(api.refused(nodeclass(role=None))) == ["spec.role"]


@mirrors(SOURCE, TOP + "UserData / should succeed if user data is empty")
def test_no_user_data(api: Admission) -> None:
    assert "userData" not in api.admitted(nodeclass())["spec"]


# --- AMIFamily -------------------------------------------------------------------------------


@mirrors(SOURCE, TOP + "AMIFamily / should succeed with valid families")
@pytest.mark.parametrize("family", [*FAMILIES, "Custom"])
def test_valid_families(api: Admission, family: str) -> None:
    doc = nodeclass(amiFamily=family, amiSelectorTerms=[{"id": "ami-0123456789abcdef"}])
    assert api.admitted(doc)["spec"]["amiFamily"] == family


@mirrors(SOURCE, TOP + "AMIFamily / should fail with the ubuntu family")
def test_ubuntu_family(api: Admission) -> None:
    doc = nodeclass(amiFamily="Ubuntu", amiSelectorTerms=[{"id": "ami-0123456789abcdef"}])
    assert paths(api.refused(doc)) == ["spec.amiFamily"]


@mirrors(
    SOURCE, TOP + "AMIFamily / should succeed when the amiFamily matches amiSelectorTerms[].alias"
)
@pytest.mark.parametrize("family", FAMILIES)
def test_family_matching_alias(api: Admission, family: str) -> None:
    doc = nodeclass(amiFamily=family, amiSelectorTerms=[{"alias": f"{family.lower()}@latest"}])
    assert api.admitted(doc)["spec"]["amiFamily"] == family


@mirrors(
    SOURCE,
    TOP + "AMIFamily / should succeed when the amiFamily is custom with amiSelectorTerms[].alias",
)
@pytest.mark.parametrize("family", FAMILIES)
def test_custom_family_with_alias(api: Admission, family: str) -> None:
    doc = nodeclass(amiFamily="Custom", amiSelectorTerms=[{"alias": f"{family.lower()}@latest"}])
    assert api.admitted(doc)["spec"]["amiFamily"] == "Custom"


@mirrors(
    SOURCE,
    TOP + "AMIFamily / should fail when then amiFamily does not match amiSelectorTerms[].alias",
)
@pytest.mark.parametrize(
    ("family", "alias_family"),
    [(f, a) for f in FAMILIES for a in FAMILIES if f != a],
)
def test_family_not_matching_alias(api: Admission, family: str, alias_family: str) -> None:
    doc = nodeclass(
        amiFamily=family, amiSelectorTerms=[{"alias": f"{alias_family.lower()}@latest"}]
    )
    assert paths(api.refused(doc)) == ["spec.amiFamily"]


@mirrors(SOURCE, TOP + "AMIFamily / should fail when neither amiFamily nor an alias are specified")
def test_neither_family_nor_alias(api: Admission) -> None:
    doc = nodeclass(amiFamily=None, amiSelectorTerms=[{"id": "ami-01234567890abcdef"}])
    assert paths(api.refused(doc)) == ["spec.amiFamily"]


# --- Tags ------------------------------------------------------------------------------------


@mirrors(SOURCE, TOP + "Tags / should succeed when tags are empty")
def test_empty_tags(api: Admission) -> None:
    assert api.admitted(nodeclass(tags={}))["spec"]["tags"] == {}


@mirrors(SOURCE, TOP + "Tags / should succeed if tags aren't in restricted tag keys")
def test_unrestricted_tags(api: Admission) -> None:
    tags = {
        "karpenter.sh/custom-key": "value",
        "karpenter.sh/managed": "true",
        "kubernetes.io/role/key": "value",
    }
    assert api.admitted(nodeclass(tags=tags))["spec"]["tags"] == tags


@mirrors(SOURCE, TOP + "Tags / should fail if tags contain a restricted domain key")
@pytest.mark.parametrize(
    "key",
    [
        "karpenter.sh/nodepool",
        "kubernetes.io/cluster/test",
        "eks:eks-cluster-name",
        "karpenter.k8s.aws/ec2nodeclass",
        "karpenter.sh/nodeclaim",
    ],
)
def test_restricted_tags(api: Admission, key: str) -> None:
    assert paths(api.refused(nodeclass(tags={key: "value"}))) == ["spec.tags"]


# --- Kubelet ---------------------------------------------------------------------------------

KUBELET = TOP + "Kubelet / "
SIGNALS = {
    "memory.available": "5%",
    "nodefs.available": "10%",
    "nodefs.inodesFree": "15%",
    "imagefs.available": "5%",
    "imagefs.inodesFree": "5%",
    "pid.available": "5%",
}
GRACE = {
    "memory.available": "1m0s",
    "nodefs.available": "1m30s",
    "nodefs.inodesFree": "5m0s",
    "imagefs.available": "1h0m0s",
    "imagefs.inodesFree": "24h0m0s",
    "pid.available": "1m0s",
}


def kubelet(**fields: Any) -> dict[str, Any]:
    """The provider's EC2NodeClass with this kubelet configuration."""
    return nodeclass(kubelet=fields)


@mirrors(SOURCE, KUBELET + "should fail on kubeReserved with invalid keys")
def test_kube_reserved_invalid_key(api: Admission) -> None:
    assert paths(api.refused(kubelet(kubeReserved={"pods": "2"}))) == ["spec.kubelet.kubeReserved"]


@mirrors(SOURCE, KUBELET + "should fail on systemReserved with invalid keys")
def test_system_reserved_invalid_key(api: Admission) -> None:
    found = api.refused(kubelet(systemReserved={"pods": "2"}))
    assert paths(found) == ["spec.kubelet.systemReserved"]


HARD = KUBELET + "Eviction Signals / Eviction Hard / "


@mirrors(SOURCE, HARD + "should succeed on evictionHard with valid keys")
def test_eviction_hard_valid(api: Admission) -> None:
    stored = api.admitted(kubelet(evictionHard=SIGNALS))
    assert stored["spec"]["kubelet"]["evictionHard"] == SIGNALS


@mirrors(SOURCE, HARD + "should fail on evictionHard with invalid keys")
def test_eviction_hard_invalid_key(api: Admission) -> None:
    found = api.refused(kubelet(evictionHard={"memory": "5%"}))
    assert paths(found) == ["spec.kubelet.evictionHard"]


@mirrors(SOURCE, HARD + "should fail on invalid formatted percentage value in evictionHard")
def test_eviction_hard_malformed_percentage(api: Admission) -> None:
    found = api.refused(kubelet(evictionHard={"memory.available": "5%3"}))
    assert paths(found) == ["spec.kubelet.evictionHard"]


@mirrors(SOURCE, HARD + "should fail on invalid percentage value (too large) in evictionHard")
def test_eviction_hard_percentage_over_100(api: Admission) -> None:
    found = api.refused(kubelet(evictionHard={"memory.available": "110%"}))
    assert paths(found) == ["spec.kubelet.evictionHard"]


@mirrors(SOURCE, HARD + "should fail on invalid quantity value in evictionHard")
def test_eviction_hard_bad_quantity(api: Admission) -> None:
    found = api.refused(kubelet(evictionHard={"memory.available": "110GB"}))
    assert paths(found) == ["spec.kubelet.evictionHard"]


SOFT = KUBELET + "Eviction Soft / "
ONE_MINUTE = {"memory.available": "1m0s"}


@mirrors(SOURCE, SOFT + "should succeed on evictionSoft with valid keys")
def test_eviction_soft_valid(api: Admission) -> None:
    stored = api.admitted(kubelet(evictionSoft=SIGNALS, evictionSoftGracePeriod=GRACE))
    assert stored["spec"]["kubelet"]["evictionSoft"] == SIGNALS


@mirrors(SOURCE, SOFT + "should fail on evictionSoft with invalid keys")
def test_eviction_soft_invalid_key(api: Admission) -> None:
    doc = kubelet(evictionSoft={"memory": "5%"}, evictionSoftGracePeriod={"memory": "1m0s"})
    assert "spec.kubelet.evictionSoft" in paths(api.refused(doc))


@mirrors(SOURCE, SOFT + "should fail on invalid formatted percentage value in evictionSoft")
def test_eviction_soft_malformed_percentage(api: Admission) -> None:
    doc = kubelet(evictionSoft={"memory.available": "5%3"}, evictionSoftGracePeriod=ONE_MINUTE)
    assert paths(api.refused(doc)) == ["spec.kubelet.evictionSoft"]


@mirrors(SOURCE, SOFT + "should fail on invalid percentage value (too large) in evictionSoft")
def test_eviction_soft_percentage_over_100(api: Admission) -> None:
    doc = kubelet(evictionSoft={"memory.available": "110%"}, evictionSoftGracePeriod=ONE_MINUTE)
    assert paths(api.refused(doc)) == ["spec.kubelet.evictionSoft"]


@mirrors(SOURCE, SOFT + "should fail on invalid quantity value in evictionSoft")
def test_eviction_soft_bad_quantity(api: Admission) -> None:
    doc = kubelet(evictionSoft={"memory.available": "110GB"}, evictionSoftGracePeriod=ONE_MINUTE)
    assert paths(api.refused(doc)) == ["spec.kubelet.evictionSoft"]


@mirrors(SOURCE, SOFT + "should fail when eviction soft doesn't have matching grace period")
def test_eviction_soft_without_grace_period(api: Admission) -> None:
    found = api.refused(kubelet(evictionSoft={"memory.available": "200Mi"}))
    assert paths(found) == ["spec.kubelet.evictionSoft"]


GC = KUBELET + "GCThresholdPercent / "


@mirrors(SOURCE, GC + "should succeed on a valid imageGCHighThresholdPercent")
def test_image_gc_high_threshold(api: Admission) -> None:
    stored = api.admitted(kubelet(imageGCHighThresholdPercent=10))
    assert stored["spec"]["kubelet"] == {"imageGCHighThresholdPercent": 10}


@mirrors(
    SOURCE,
    GC + "should fail when imageGCHighThresholdPercent is less than imageGCLowThresholdPercent",
)
def test_image_gc_high_below_low(api: Admission) -> None:
    doc = kubelet(imageGCHighThresholdPercent=50, imageGCLowThresholdPercent=60)
    assert paths(api.refused(doc)) == ["spec.kubelet.imageGCHighThresholdPercent"]


@mirrors(
    SOURCE,
    GC + "should fail when imageGCLowThresholdPercent is greather than imageGCHighThresheldPercent",
)
def test_image_gc_low_above_high(api: Admission) -> None:
    doc = kubelet(imageGCHighThresholdPercent=50, imageGCLowThresholdPercent=60)
    assert paths(api.refused(doc)) == ["spec.kubelet.imageGCHighThresholdPercent"]


GRACE_CONTEXT = KUBELET + "Eviction Soft Grace Period / "


@mirrors(SOURCE, GRACE_CONTEXT + "should succeed on evictionSoftGracePeriod with valid keys")
def test_eviction_soft_grace_period_valid(api: Admission) -> None:
    stored = api.admitted(kubelet(evictionSoft=SIGNALS, evictionSoftGracePeriod=GRACE))
    assert stored["spec"]["kubelet"]["evictionSoftGracePeriod"] == GRACE


@mirrors(SOURCE, GRACE_CONTEXT + "should fail on evictionSoftGracePeriod with invalid keys")
def test_eviction_soft_grace_period_invalid_key(api: Admission) -> None:
    found = api.refused(kubelet(evictionSoftGracePeriod={"memory": "1m0s"}))
    assert "spec.kubelet.evictionSoftGracePeriod" in paths(found)


@mirrors(
    SOURCE,
    GRACE_CONTEXT + "should fail when eviction soft grace period doesn't have matching threshold",
)
def test_eviction_soft_grace_period_without_threshold(api: Admission) -> None:
    found = api.refused(kubelet(evictionSoftGracePeriod=ONE_MINUTE))
    assert paths(found) == ["spec.kubelet.evictionSoftGracePeriod"]


# --- MetadataOptions -------------------------------------------------------------------------

METADATA = TOP + "MetadataOptions / "


@mirrors(SOURCE, METADATA + "should succeed for valid inputs")
def test_metadata_options_valid(api: Admission) -> None:
    options = {
        "httpEndpoint": "disabled",
        "httpProtocolIPv6": "enabled",
        "httpPutResponseHopLimit": 34,
        "httpTokens": "optional",
    }
    assert api.admitted(nodeclass(metadataOptions=options))["spec"]["metadataOptions"] == options


@mirrors(SOURCE, METADATA + "should fail for invalid for HTTPEndpoint")
def test_metadata_http_endpoint(api: Admission) -> None:
    found = api.refused(nodeclass(metadataOptions={"httpEndpoint": "test"}))
    assert paths(found) == ["spec.metadataOptions.httpEndpoint"]


@mirrors(SOURCE, METADATA + "should fail for invalid for HTTPProtocolIPv6")
def test_metadata_http_protocol_ipv6(api: Admission) -> None:
    found = api.refused(nodeclass(metadataOptions={"httpProtocolIPv6": "test"}))
    assert paths(found) == ["spec.metadataOptions.httpProtocolIPv6"]


@mirrors(SOURCE, METADATA + "should fail for invalid for HTTPPutResponseHopLimit")
def test_metadata_hop_limit(api: Admission) -> None:
    found = api.refused(nodeclass(metadataOptions={"httpPutResponseHopLimit": -5}))
    assert paths(found) == ["spec.metadataOptions.httpPutResponseHopLimit"]


@mirrors(SOURCE, METADATA + "should fail for invalid for HTTPTokens")
def test_metadata_http_tokens(api: Admission) -> None:
    found = api.refused(nodeclass(metadataOptions={"httpTokens": "test"}))
    assert paths(found) == ["spec.metadataOptions.httpTokens"]
