"""AWSCloud's network lookup for the drift checks, against moto's server: the subnet and security
groups an instance runs with (taken as EC2 describes them, none included, as Karpenter's drift
check takes them), and nothing for an instance that cannot be described; and ``is_drifted``, the
cloud's part of drift, answering over what EC2 describes."""

from __future__ import annotations

from typing import Any

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclaim import NodeClaim
from agent.api.nodeclass_status import ResolvedAMI, ResolvedSecurityGroup, ResolvedSubnet
from agent.api.status import NodeClaimStatus
from tests.integration.aws.test_cloud import REGION, Env, claim, env, instance
from tests.support.ec2gaps import fleet_security_groups

__all__ = ["env"]


def test_the_lookup_reports_the_instances_subnet_and_groups(env: Env) -> None:
    fleet_security_groups(env.proxy, REGION)  # EC2's CreateFleet: the template's groups
    launched = env.cloud.create(claim(), env.nodeclass)
    assert launched.status.provider_id is not None
    described = instance(env, launched.status.provider_id)
    subnet, groups = env.cloud.network_of(launched)
    assert subnet == described["SubnetId"]
    assert env.nodeclass.status is not None
    assert subnet in {s.id for s in env.nodeclass.status.subnets}
    wanted = {g.id for g in env.nodeclass.status.security_groups}
    assert wanted
    assert groups is not None
    assert set(groups) == wanted == {g["GroupId"] for g in described["SecurityGroups"]}


def test_an_instance_in_no_security_group_has_none(env: Env) -> None:
    # moto's own CreateFleet (its gap not filled) launches outside the template's groups: the
    # lookup says so (the drift check then finds SecurityGroupDrift, as Karpenter's does)
    launched = env.cloud.create(claim(), env.nodeclass)
    assert launched.status.provider_id is not None
    assert instance(env, launched.status.provider_id).get("SecurityGroups") == []
    assert env.cloud.network_of(launched) == (
        instance(env, launched.status.provider_id)["SubnetId"],
        (),
    )


def test_the_lookup_reports_the_groups_ec2_describes(env: Env) -> None:
    launched = env.cloud.create(claim(), env.nodeclass)
    assert launched.status.provider_id is not None
    assert env.nodeclass.status is not None
    wanted = [g.id for g in env.nodeclass.status.security_groups]
    env.ec2.modify_instance_attribute(
        InstanceId=launched.status.provider_id.rsplit("/", 1)[-1], Groups=wanted
    )
    assert instance(env, launched.status.provider_id)["SecurityGroups"]
    assert env.cloud.network_of(launched)[1] == tuple(wanted)


def test_an_instance_that_cannot_be_described_reports_nothing(env: Env) -> None:
    unknown = claim().model_copy(
        update={"status": NodeClaimStatus(provider_id="aws:///us-east-1a/i-0000000000000dead")}
    )
    assert env.cloud.network_of(unknown) == (None, None)
    assert env.cloud.network_of(NodeClaim.model_validate(unknown.to_manifest())) == (None, None)


def test_an_instance_outside_any_reservation_reports_none(env: Env) -> None:
    launched = env.cloud.create(claim(), env.nodeclass)
    assert env.cloud.reservation_of(launched) is None


def _resolved(env: Env, **status: Any) -> EC2NodeClass:
    """The environment's EC2NodeClass with parts of its status replaced."""
    assert env.nodeclass.status is not None
    changed = env.nodeclass.status.model_copy(update=status)
    return env.nodeclass.model_copy(update={"status": changed})


def test_is_drifted_answers_each_reason_over_what_ec2_describes(env: Env) -> None:
    fleet_security_groups(env.proxy, REGION)  # the instance runs in the template's groups
    launched = env.cloud.create(claim(), env.nodeclass)
    assert launched.status.provider_id is not None
    zone = instance(env, launched.status.provider_id)["Placement"]["AvailabilityZone"]
    assert env.cloud.is_drifted(launched, env.nodeclass) is None
    newer = ResolvedAMI(id="ami-0123456789abcdef0", requirements=[])
    assert env.cloud.is_drifted(launched, _resolved(env, amis=[newer])) == "AMIDrift"
    other_group = [ResolvedSecurityGroup(id="sg-0123456789abcdef0")]
    found = env.cloud.is_drifted(launched, _resolved(env, security_groups=other_group))
    assert found == "SecurityGroupDrift"
    other_subnet = [ResolvedSubnet(id="subnet-0123456789abcdef0", zone=zone)]
    assert env.cloud.is_drifted(launched, _resolved(env, subnets=other_subnet)) == "SubnetDrift"

    gone = launched.model_copy(
        update={
            "status": launched.status.model_copy(
                update={"provider_id": "aws:///us-east-1a/i-0000000000000dead"}
            )
        }
    )
    # an instance EC2 cannot describe: no network drift is found (nor a reservation's)
    assert env.cloud.is_drifted(gone, _resolved(env, security_groups=other_group)) is None


def _describe_calls(env: Env) -> list[dict[str, str]]:
    """The DescribeInstances calls made so far, as their parameters."""
    calls = [r.form() for r in env.proxy.requests if r.action == "DescribeInstances"]
    return [{k: v[0] for k, v in call.items()} for call in calls]


def test_the_instances_launched_are_listed_then_described_in_one_call(env: Env) -> None:
    launched = [env.cloud.create(claim(f"general-{n}"), env.nodeclass) for n in range(3)]
    before = len(_describe_calls(env))
    networks = [env.cloud.network_of(one) for one in launched]
    [listing] = _describe_calls(env)[before:]
    # the cluster's live instances, by its tags, 1,000 a page (as Karpenter's listing)
    assert listing["MaxResults"] == "1000"
    assert "tag:eks:eks-cluster-name" in listing.values()
    assert "instance-id" not in listing.values()
    for one, (subnet, _) in zip(launched, networks, strict=True):
        assert one.status.provider_id is not None
        assert subnet == instance(env, one.status.provider_id)["SubnetId"]

    more = [env.cloud.create(claim(f"general-{n}"), env.nodeclass) for n in range(3, 5)]
    before = len(_describe_calls(env))
    networks = [env.cloud.network_of(one) for one in launched + more]
    [by_id] = _describe_calls(env)[before:]
    assert "instance-id" in by_id.values(), "launched since the listing: described by id"
    assert sorted(v for k, v in by_id.items() if ".Value." in k) == sorted(
        (one.status.provider_id or "").rsplit("/", 1)[-1] for one in more
    )
    for one, (subnet, _) in zip(launched + more, networks, strict=True):
        assert subnet == instance(env, one.status.provider_id or "")["SubnetId"]
