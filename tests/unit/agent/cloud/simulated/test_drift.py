"""The simulated cloud's ``is_drifted``: the cloud's part of drift over the subnet and security
groups an instance was launched with, by the rules the AWS adapter shares."""

from __future__ import annotations

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclass_status import ResolvedAMI, ResolvedSecurityGroup, ResolvedSubnet
from agent.catalog import Catalog
from agent.clock import VirtualClock
from agent.cloud.simulated import AMICatalog, SimulatedCloud

from ..helpers import INSTANCE_TYPE, claim, ready, req

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")


def _networked(amis: AMICatalog) -> EC2NodeClass:
    """A ready node class whose status resolved a subnet per zone and two security groups."""
    base = ready(amis)
    assert base.status is not None
    status = base.status.model_copy(
        update={
            "subnets": [ResolvedSubnet(id=f"subnet-0{z[-1]}", zone=z) for z in ZONES],
            "security_groups": [
                ResolvedSecurityGroup(id="sg-01"),
                ResolvedSecurityGroup(id="sg-02"),
            ],
        }
    )
    return base.model_copy(update={"status": status})


def _with(nodeclass: EC2NodeClass, **status: object) -> EC2NodeClass:
    assert nodeclass.status is not None
    changed = nodeclass.status.model_copy(update=status)
    return nodeclass.model_copy(update={"status": changed})


def test_is_drifted_answers_each_reason(
    catalog: Catalog, clock: VirtualClock, amis: AMICatalog
) -> None:
    cloud = SimulatedCloud(catalog, clock, amis)
    nodeclass = _networked(amis)
    launched = cloud.create(claim(req(INSTANCE_TYPE, "In", "m5.large")), nodeclass)
    subnet, groups = cloud.network_of(launched)
    assert subnet is not None
    assert groups == ("sg-01", "sg-02")
    assert cloud.is_drifted(launched, nodeclass) is None

    newer = [ResolvedAMI(id="ami-0fffffffffffffff0", requirements=[])]
    assert cloud.is_drifted(launched, _with(nodeclass, amis=newer)) == "AMIDrift"
    assert nodeclass.status is not None
    one_group = nodeclass.status.security_groups[:1]
    assert cloud.is_drifted(launched, _with(nodeclass, security_groups=one_group)) == (
        "SecurityGroupDrift"
    )
    elsewhere = [s for s in nodeclass.status.subnets if s.id != subnet]
    assert cloud.is_drifted(launched, _with(nodeclass, subnets=elsewhere)) == "SubnetDrift"


def test_an_instance_it_does_not_know_has_no_network_drift(
    catalog: Catalog, clock: VirtualClock, amis: AMICatalog
) -> None:
    cloud = SimulatedCloud(catalog, clock, amis)
    nodeclass = _networked(amis)
    launched = cloud.create(claim(req(INSTANCE_TYPE, "In", "m5.large")), nodeclass)
    unknown = launched.model_copy(
        update={
            "status": launched.status.model_copy(
                update={"provider_id": "aws:///us-east-1a/i-0000000000000dead"}
            )
        }
    )
    assert nodeclass.status is not None
    one_group = _with(nodeclass, security_groups=nodeclass.status.security_groups[:1])
    assert cloud.is_drifted(launched, one_group) == "SecurityGroupDrift"
    assert cloud.is_drifted(unknown, one_group) is None  # cannot tell its groups: not checked
