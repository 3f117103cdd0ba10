"""AWSCloud's network lookup for the drift checks, against moto's server: the subnet and security
groups an instance runs with, and nothing for an instance that cannot be described."""

from __future__ import annotations

from agent.api.nodeclaim import NodeClaim
from agent.api.status import NodeClaimStatus
from tests.integration.aws.test_cloud import Env, claim, env, instance

__all__ = ["env"]


def test_the_lookup_reports_the_instances_subnet_and_groups(env: Env) -> None:
    launched = env.cloud.create(claim(), env.nodeclass)
    assert launched.status.provider_id is not None
    described = instance(env, launched.status.provider_id)
    subnet, groups = env.cloud.network_of(launched)
    assert subnet == described["SubnetId"]
    assert env.nodeclass.status is not None
    assert subnet in {s.id for s in env.nodeclass.status.subnets}
    # moto describes a fleet's instance without the groups its launch template names (EC2 never
    # describes an instance without groups): that cannot be checked, so it is no drift
    assert described.get("SecurityGroups") == []
    assert groups is None


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
