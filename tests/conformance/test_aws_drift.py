"""Conformance of the AWS drift checks to the AWS provider's ``NodeClaim Drift`` tests
(``pkg/cloudprovider/suite_test.go``): AMI, security-group, subnet and capacity-reservation
drift, what happens when a check cannot be made, and which EC2NodeClass fields drift statically.

Each test asks :func:`agent.lifecycle.drift.drift_reason` about a launched NodeClaim stamped with
its EC2NodeClass's hashes, given what EC2 says of the instance (its subnet, security groups and
capacity reservation). Where Karpenter's provider returns an error (a check that cannot be made),
its drift controller records no drift: driftwave answers "not drifted" directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclaim import NodeClaim
from agent.api.nodeclass_status import (
    AMIRequirement,
    EC2NodeClassStatus,
    ResolvedAMI,
    ResolvedCapacityReservation,
    ResolvedSecurityGroup,
    ResolvedSubnet,
)
from agent.api.nodepool import NodePool
from agent.hashing.stamps import stamped
from agent.lifecycle.drift import drift_reason
from tests.conformance.karpenter import mirrors
from tests.conformance.test_core_nodeclaim_disruption import Bench, nodeclaim, nodepool
from tests.support.clouddrift import UNDESCRIBED, cloud_describing

SUITE = "aws-drift"
SOURCE = "pkg/cloudprovider/suite_test.go"
DRIFT = "CloudProvider / NodeClaim Drift / "
AMD_AMI, ARM_AMI = "ami-0amd", "ami-0arm"
VALID_GROUP = "sg-0valid"
SUBNETS = [
    ResolvedSubnet(id="subnet-0one", zone="us-east-1a"),
    ResolvedSubnet(id="subnet-0two", zone="us-east-1b"),
]


def _arch(value: str) -> list[AMIRequirement]:
    return [AMIRequirement(key="kubernetes.io/arch", operator="In", values=[value])]


def resolved(**changes: Any) -> EC2NodeClassStatus:
    """The provider test's resolved status: two subnets, one security group, an arm64 and an
    amd64 image (``changes`` replace parts)."""
    parts: dict[str, Any] = {
        "subnets": SUBNETS,
        "security_groups": [ResolvedSecurityGroup(id=VALID_GROUP)],
        "amis": [
            ResolvedAMI(id=ARM_AMI, requirements=_arch("arm64")),
            ResolvedAMI(id=AMD_AMI, requirements=_arch("amd64")),
        ],
        "instance_profile": "test-profile",
    }
    parts.update(changes)
    return EC2NodeClassStatus(**parts)


def ec2nodeclass(spec: dict[str, Any] | None = None, **status: Any) -> EC2NodeClass:
    """An EC2NodeClass with ``spec`` (a plain one by default) and the resolved status."""
    body = spec or {
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "role": "test-role",
        "subnetSelectorTerms": [{"tags": {"sn-key-1": "sn-value-1"}}],
        "securityGroupSelectorTerms": [{"tags": {"sg-key": "sg-value"}}],
    }
    found = EC2NodeClass.model_validate({"metadata": {"name": "default"}, "spec": body})
    return found.model_copy(update={"status": resolved(**status)})


@dataclass
class Instance:
    """What EC2 says of the NodeClaim's instance (None: it cannot be described)."""

    subnet: str | None = "subnet-0one"
    groups: list[str] | None = field(default_factory=lambda: [VALID_GROUP])
    reservation: str | None = None


def launched(nodeclass: EC2NodeClass, image: str | None = AMD_AMI, **labels: str) -> NodeClaim:
    """An amd64 NodeClaim launched from ``nodeclass`` with ``image``, stamped with its hashes."""
    manifest = nodeclaim(labels={"karpenter.sh/capacity-type": "on-demand", **labels})
    if image is None:
        del manifest["status"]["imageID"]
    else:
        manifest["status"]["imageID"] = image
    return stamped(NodeClaim.model_validate(manifest), nodepool(), nodeclass)


def reason(
    claim: NodeClaim,
    nodeclass: EC2NodeClass,
    instance: Instance | None = None,
    pool: NodePool | None = None,
) -> str | None:
    """driftwave's drift reason for ``claim`` against ``nodeclass`` on ``instance``."""
    seen = instance or Instance()
    return drift_reason(
        claim,
        pool or nodepool(),
        nodeclass,
        cloud_describing(seen.subnet, seen.groups, seen.reservation),
    )


@mirrors(SOURCE, DRIFT + "should not fail if NodeClass does not exist")
def test_no_nodeclass() -> None:
    nodeclass = ec2nodeclass()
    assert drift_reason(launched(nodeclass), nodepool(), None, UNDESCRIBED) is None


@mirrors(SOURCE, DRIFT + "should not fail if NodePool does not exist")
def test_no_nodepool() -> None:
    bench = Bench()
    old = ec2nodeclass()
    bench.add(None, old, nodeclaim(), stamp=lambda c: stamped(c, nodepool(), old))
    bench.cluster.update(ec2nodeclass(amis=[ResolvedAMI(id="ami-0new", requirements=[])]))
    assert bench.drifted() is None


@mirrors(SOURCE, DRIFT + "should return drifted if the AMI is not valid")
def test_invalid_ami() -> None:
    nodeclass = ec2nodeclass()
    assert reason(launched(nodeclass, image="ami-0fake"), nodeclass) == "AMIDrift"


@mirrors(SOURCE, DRIFT + "should return drifted if there are multiple drift reasons")
def test_multiple_reasons() -> None:
    claim = launched(ec2nodeclass(), image="ami-0fake")
    retagged = ec2nodeclass({**ec2nodeclass().spec.to_manifest(), "tags": {"changed": "yes"}})
    instance = Instance(subnet="subnet-0fake", groups=["sg-0fake"])
    assert reason(claim, retagged, instance) == "NodeClassDrift"


@mirrors(SOURCE, DRIFT + "should return drifted if the subnet is not valid")
def test_invalid_subnet() -> None:
    nodeclass = ec2nodeclass()
    assert reason(launched(nodeclass), nodeclass, Instance(subnet="subnet-0fake")) == "SubnetDrift"


@mirrors(SOURCE, DRIFT + "should return an error if subnets are empty")
def test_no_subnets() -> None:
    nodeclass = ec2nodeclass(subnets=[])
    # no subnet resolved: no drift can be found, not even the instance's other subnet
    assert reason(launched(nodeclass), nodeclass, Instance(subnet="subnet-0fake")) is None


@mirrors(SOURCE, DRIFT + "should not return drifted if the NodeClaim is valid")
def test_valid_claim() -> None:
    nodeclass = ec2nodeclass()
    assert reason(launched(nodeclass), nodeclass) is None


@mirrors(SOURCE, DRIFT + "should return an error if the security groups are empty")
def test_no_security_groups() -> None:
    nodeclass = ec2nodeclass(security_groups=[])
    assert reason(launched(nodeclass), nodeclass, Instance(groups=["sg-0fake"])) is None


@mirrors(
    SOURCE,
    DRIFT + "should return drifted if the instance security groups doesn't match the discovered "
    "values",
)
def test_other_security_group() -> None:
    nodeclass = ec2nodeclass()
    found = reason(launched(nodeclass), nodeclass, Instance(groups=["sg-0fake"]))
    assert found == "SecurityGroupDrift"


@mirrors(
    SOURCE,
    DRIFT + "should return drifted if there are more instance security groups present than in "
    "the discovered values",
)
def test_more_instance_groups() -> None:
    nodeclass = ec2nodeclass()
    found = reason(launched(nodeclass), nodeclass, Instance(groups=["sg-0fake", VALID_GROUP]))
    assert found == "SecurityGroupDrift"


@mirrors(
    SOURCE,
    DRIFT + "should return drifted if more security groups are present than instance security "
    "groups then discovered from nodeclass",
)
def test_more_discovered_groups() -> None:
    groups = [
        ResolvedSecurityGroup(id=VALID_GROUP, name="test-securitygroup"),
        ResolvedSecurityGroup(id="sg-0fake", name="test-securitygroup"),
    ]
    nodeclass = ec2nodeclass(security_groups=groups)
    assert reason(launched(nodeclass), nodeclass) == "SecurityGroupDrift"


def _reservation(reservation_id: str) -> ResolvedCapacityReservation:
    return ResolvedCapacityReservation(
        availability_zone="us-east-1a",
        id=reservation_id,
        instance_match_criteria="targeted",
        instance_type="m5.large",
        owner_id="012345678901",
    )


@mirrors(SOURCE, DRIFT + "should dynamically drift nodeclaims for capacity reservations")
def test_capacity_reservation_drift() -> None:
    nodeclass = ec2nodeclass(capacity_reservations=[_reservation("cr-foo")])
    claim = launched(nodeclass)
    assert reason(claim, nodeclass, Instance(reservation="cr-foo")) is None
    found = reason(claim, nodeclass, Instance(reservation="cr-bar"))
    assert found == "CapacityReservationDrift"


@mirrors(SOURCE, DRIFT + "should not drift when capacity reservation falls back to on-demand")
def test_reservation_fallback() -> None:
    nodeclass = ec2nodeclass(capacity_reservations=[_reservation("cr-foo")])
    claim = launched(nodeclass)
    assert reason(claim, nodeclass, Instance(reservation="cr-foo")) is None
    emptied = ec2nodeclass(capacity_reservations=[])
    assert reason(claim, emptied, Instance(reservation=None)) is None


@mirrors(SOURCE, DRIFT + "should not return drifted if the security groups match")
def test_matching_groups() -> None:
    nodeclass = ec2nodeclass()
    assert reason(launched(nodeclass), nodeclass, Instance(groups=[VALID_GROUP])) is None


@mirrors(SOURCE, DRIFT + "should error if the NodeClaim doesn't have the instance-type label")
def test_no_instance_type_label() -> None:
    nodeclass = ec2nodeclass()
    claim = launched(nodeclass)
    labels = {
        k: v for k, v in claim.metadata.labels.items() if k != "node.kubernetes.io/instance-type"
    }
    unlabelled = claim.model_copy(
        update={"metadata": claim.metadata.model_copy(update={"labels": labels})}
    )
    assert reason(unlabelled, nodeclass) is None


@mirrors(SOURCE, DRIFT + "should error if the NodeClaim doesn't have ImageID")
def test_no_image_id() -> None:
    nodeclass = ec2nodeclass()
    # the AMI check cannot be made, so no later check is made either
    found = reason(launched(nodeclass, image=None), nodeclass, Instance(groups=["sg-0fake"]))
    assert found is None


@mirrors(SOURCE, DRIFT + "should error drift if NodeClaim doesn't have provider id")
def test_no_provider_id() -> None:
    nodeclass = ec2nodeclass()
    claim = launched(nodeclass)
    bare = claim.model_copy(update={"status": claim.status.model_copy(update={
        "provider_id": None, "image_id": None})})  # fmt: skip
    assert reason(bare, nodeclass, Instance(None, None)) is None


@mirrors(SOURCE, DRIFT + "should error if the underlying NodeClaim doesn't exist")
def test_instance_gone() -> None:
    nodeclass = ec2nodeclass(security_groups=[ResolvedSecurityGroup(id="sg-0other")])
    assert reason(launched(nodeclass), nodeclass, Instance(None, None)) is None


@mirrors(
    SOURCE,
    DRIFT + "should return drifted if the AMI no longer matches the existing NodeClaims instance "
    "type",
)
def test_ami_no_longer_fits_the_type() -> None:
    nodeclass = ec2nodeclass(amis=[ResolvedAMI(id=AMD_AMI, requirements=_arch("amd64"))])
    assert reason(launched(nodeclass, image=ARM_AMI), nodeclass) == "AMIDrift"
