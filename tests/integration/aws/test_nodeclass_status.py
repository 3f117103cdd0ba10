"""Subnet and security-group discovery and the EC2NodeClass status over moto's server: terms by
id, tags (``*`` = key exists) and name; the conditions Karpenter sets; AWS throttling retried by
the client, and a persistent failure keeping the previous status."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from agent.api.ec2nodeclass import EC2NodeClass
from agent.clock import VirtualClock
from agent.cloud.aws.amis import AWSImages
from agent.cloud.aws.network import Network
from agent.cloud.aws.nodeclass import NodeClassStatusResolver
from agent.cloud.aws.session import AWSClients, AWSConfig
from common.kubemodel import parse_manifest
from common.selectors import SecurityGroupSelectorTerm, SubnetSelectorTerm
from tests.support.awsproxy import AWSProxy, xml_error
from tests.support.awsseed import add_image, network, publish_parameter

REGION = "us-east-1"
NOW = datetime(2026, 1, 10, tzinfo=UTC)
ALIAS_PATH = (
    "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/image_id"
)


@dataclass
class Env:
    proxy: AWSProxy
    ec2: Any
    net: dict[str, Any]
    network: Network
    resolver: NodeClassStatusResolver


@pytest.fixture
def env(moto_proxy: tuple[str, AWSProxy]) -> Env:
    url, proxy = moto_proxy
    ec2 = boto3.client("ec2", region_name=REGION, endpoint_url=url)
    net = network(ec2, "prod-1")
    clients = AWSClients(AWSConfig(region=REGION, endpoint_url=proxy.url))
    clock = VirtualClock(NOW)
    found = Network(clients)
    return Env(
        proxy, ec2, net, found, NodeClassStatusResolver(AWSImages(clients, clock), found, clock)
    )


def nodeclass(alias: str = "al2023@latest", discovery: str = "prod-1") -> EC2NodeClass:
    return parse_manifest(
        EC2NodeClass,
        {
            "apiVersion": "karpenter.k8s.aws/v1",
            "kind": "EC2NodeClass",
            "metadata": {"name": "default"},
            "spec": {
                "role": "KarpenterNodeRole",
                "amiSelectorTerms": [{"alias": alias}],
                "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": discovery}}],
                "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": discovery}}],
            },
        },
    )


def test_subnets_by_tags_and_id(env: Env) -> None:
    by_tag = env.network.subnets([SubnetSelectorTerm(tags={"karpenter.sh/discovery": "prod-1"})])
    assert sorted(s.id for s in by_tag) == sorted(env.net["subnets"])
    assert {s.zone for s in by_tag} == {"us-east-1a", "us-east-1b"}
    assert all(s.zone_id for s in by_tag)
    by_key = env.network.subnets([SubnetSelectorTerm(tags={"Name": "*"})])
    assert sorted(s.id for s in by_key) == sorted(env.net["subnets"])
    both = env.network.subnets(
        [
            SubnetSelectorTerm(
                tags={"Name": "private-us-east-1a", "karpenter.sh/discovery": "prod-1"}
            )
        ]
    )
    assert [s.zone for s in both] == ["us-east-1a"], "fields within a term are AND-ed"
    one = env.network.subnets([SubnetSelectorTerm(id=env.net["subnets"][1])])
    assert [s.id for s in one] == [env.net["subnets"][1]]
    assert env.network.subnets([SubnetSelectorTerm(tags={"karpenter.sh/discovery": "other"})]) == []


def test_security_groups_by_tags_name_and_id(env: Env) -> None:
    group = env.net["security_group"]
    by_tag = env.network.security_groups(
        [SecurityGroupSelectorTerm(tags={"karpenter.sh/discovery": "prod-1"})]
    )
    assert [(g.id, g.name) for g in by_tag] == [(group, "prod-1-nodes")]
    by_name = env.network.security_groups([SecurityGroupSelectorTerm(name="prod-1-nodes")])
    assert [g.id for g in by_name] == [group]
    by_id = env.network.security_groups([SecurityGroupSelectorTerm(id=group)])
    assert [g.id for g in by_id] == [group]


def test_status_and_conditions(env: Env) -> None:
    image = add_image(REGION, "amazon-eks-node-al2023-x86_64-standard-1.31-v20251216", created=NOW)
    publish_parameter(REGION, ALIAS_PATH, image)
    status = env.resolver(nodeclass(), "1.31")
    assert [a.id for a in status.amis] == [image]
    assert len(status.subnets) == 2
    assert [g.id for g in status.security_groups] == [env.net["security_group"]]
    conditions = {c.type: (c.status, c.reason) for c in status.conditions}
    assert conditions == {
        "AMIsReady": ("True", "AMIsReady"),
        "SubnetsReady": ("True", "SubnetsReady"),
        "SecurityGroupsReady": ("True", "SecurityGroupsReady"),
        "Ready": ("True", "Ready"),
    }

    broken = env.resolver(nodeclass(alias="bottlerocket@latest", discovery="nowhere"), "1.31")
    conditions = {c.type: (c.status, c.reason) for c in broken.conditions}
    assert conditions["AMIsReady"] == ("False", "AMINotFound")
    assert conditions["SubnetsReady"] == ("False", "SubnetsNotFound")
    assert conditions["SecurityGroupsReady"] == ("False", "SecurityGroupsNotFound")
    ready = next(c for c in broken.conditions if c.type == "Ready")
    assert ready.reason == "UnhealthyDependents"
    assert ready.message == "AMIsReady=False, SubnetsReady=False, SecurityGroupsReady=False"
    assert broken.amis == []


def test_throttling_is_retried_and_a_lasting_failure_keeps_the_last_status(env: Env) -> None:
    image = add_image(REGION, "amazon-eks-node-al2023-x86_64-standard-1.31-v20251216", created=NOW)
    publish_parameter(REGION, ALIAS_PATH, image)
    throttled = env.proxy.intercept(
        lambda r: r.action == "DescribeSubnets",
        lambda _: xml_error(503, "RequestLimitExceeded", "Request limit exceeded."),
        times=2,
    )
    first = env.resolver(nodeclass(), "1.31")
    assert throttled.used == 2
    assert len(first.subnets) == 2, "botocore's standard retries got through the throttling"

    env.proxy.intercept(
        lambda r: r.action == "DescribeSubnets",
        lambda _: xml_error(403, "UnauthorizedOperation", "You are not authorized."),
    )
    stored = nodeclass().model_copy(update={"status": first})
    later = env.resolver(stored, "1.31")
    assert later.subnets == first.subnets, "a failing call keeps what was resolved before"
    subnets = next(c for c in later.conditions if c.type == "SubnetsReady")
    assert (subnets.status, subnets.reason) == ("True", "ResolutionFailed")
    assert "UnauthorizedOperation" in (subnets.message or "")
