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
    assert groups == tuple(g["GroupId"] for g in described.get("SecurityGroups", []))


def test_an_instance_that_cannot_be_described_reports_nothing(env: Env) -> None:
    unknown = claim().model_copy(
        update={"status": NodeClaimStatus(provider_id="aws:///us-east-1a/i-0000000000000dead")}
    )
    assert env.cloud.network_of(unknown) == (None, None)
    assert env.cloud.network_of(NodeClaim.model_validate(unknown.to_manifest())) == (None, None)


def test_an_instance_outside_any_reservation_reports_none(env: Env) -> None:
    launched = env.cloud.create(claim(), env.nodeclass)
    assert env.cloud.reservation_of(launched) is None
