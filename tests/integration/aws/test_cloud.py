"""AWSCloud (the CloudProvider port over EC2) against moto's server: launch templates with the
family's user data, CreateFleet instant with overrides and tags, insufficient capacity (answered
by the proxy: moto never runs out) feeding the unavailable-offerings cache, get / list / delete."""

from __future__ import annotations

import base64
import email
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclaim import NodeClaim
from agent.clock import VirtualClock
from agent.cloud.aws.amis import AWSImages
from agent.cloud.aws.cloud import AWSCloud
from agent.cloud.aws.instancetypes import AWSInstanceTypes
from agent.cloud.aws.launchtemplates import LaunchTemplates
from agent.cloud.aws.network import Network
from agent.cloud.aws.nodeclass import NodeClassStatusResolver
from agent.cloud.aws.pricing import AWSPrices
from agent.cloud.aws.session import AWSClients, AWSConfig
from agent.cloud.aws.userdata import ClusterInfo
from agent.cloud.port import InsufficientCapacity, NodeClaimNotFound, NodeClassNotReady
from agent.cloud.unavailable import UnavailableOfferings
from common.kubemodel import parse_manifest
from tests.support.awsproxy import AWSProxy, Request
from tests.support.awsseed import add_image, network, publish_parameter

REGION = "us-east-1"
NOW = datetime(2026, 1, 10, tzinfo=UTC)
ALIAS = "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/image_id"
CLUSTER = ClusterInfo("prod-1", "https://ABC.gr7.us-east-1.eks.amazonaws.com", "Q0EK")


@dataclass
class Env:
    proxy: AWSProxy
    ec2: Any
    cloud: AWSCloud
    nodeclass: EC2NodeClass
    image: str


@pytest.fixture
def env(moto_proxy: tuple[str, AWSProxy]) -> Env:
    url, proxy = moto_proxy
    ec2 = boto3.client("ec2", region_name=REGION, endpoint_url=url)
    network(ec2, "prod-1")
    image = add_image(REGION, "amazon-eks-node-al2023-x86_64-standard-1.31-v20251216", created=NOW)
    publish_parameter(REGION, ALIAS, image)
    clock = VirtualClock(NOW)
    clients = AWSClients(AWSConfig(region=REGION, endpoint_url=proxy.url))
    resolver = NodeClassStatusResolver(AWSImages(clients, clock), Network(clients), clock)
    spec = parse_manifest(
        EC2NodeClass,
        {
            "apiVersion": "karpenter.k8s.aws/v1",
            "kind": "EC2NodeClass",
            "metadata": {"name": "default"},
            "spec": {
                "instanceProfile": "KarpenterNodeInstanceProfile",
                "amiSelectorTerms": [{"alias": "al2023@latest"}],
                "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "prod-1"}}],
                "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "prod-1"}}],
                "tags": {"team": "web"},
                "kubelet": {"maxPods": 58},
            },
        },
    )
    nodeclass = spec.model_copy(update={"status": resolver(spec, "1.31")})
    unavailable = UnavailableOfferings(clock)
    types = AWSInstanceTypes(clients, AWSPrices(clients, clock), unavailable, clock)
    cloud = AWSCloud(
        clients,
        cluster_name="prod-1",
        instance_types=lambda nc: types.list(None, nc),
        launch_templates=LaunchTemplates(clients, CLUSTER),
        unavailable=unavailable,
    )
    return Env(proxy, ec2, cloud, nodeclass, image)


def claim(name: str = "general-x7k2p", capacity: str = "on-demand") -> NodeClaim:
    return parse_manifest(
        NodeClaim,
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": "general"}},
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": "default",
                },
                "requirements": [
                    {
                        "key": "node.kubernetes.io/instance-type",
                        "operator": "In",
                        "values": ["m5.large", "m5.xlarge"],
                    },
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [capacity]},
                ],
                "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                "taints": [{"key": "dedicated", "value": "web", "effect": "NoSchedule"}],
            },
        },
    )


def instance(env: Env, provider_id: str) -> dict[str, Any]:
    reservations = env.ec2.describe_instances(InstanceIds=[provider_id.rsplit("/", 1)[-1]])
    found: dict[str, Any] = reservations["Reservations"][0]["Instances"][0]
    return found


def test_launch_describe_and_terminate(env: Env) -> None:
    launched = env.cloud.create(claim(), env.nodeclass)
    assert launched.status.provider_id is not None
    assert launched.status.provider_id.startswith("aws:///us-east-1a/i-")
    assert launched.status.image_id == env.image
    assert launched.metadata.labels["node.kubernetes.io/instance-type"] == "m5.large"
    assert launched.metadata.labels["karpenter.sh/capacity-type"] == "on-demand"
    # where it runs, as Karpenter labels its NodeClaims: the zone's id from the node class
    assert env.nodeclass.status is not None
    zone_ids = {s.zone: s.zone_id for s in env.nodeclass.status.subnets}
    assert zone_ids["us-east-1a"]
    assert launched.metadata.labels["topology.k8s.aws/zone-id"] == zone_ids["us-east-1a"]
    assert launched.metadata.labels["topology.kubernetes.io/region"] == "us-east-1"
    assert launched.metadata.labels["karpenter.k8s.aws/instance-tenancy"] == "default"
    assert launched.status.allocatable["pods"] == 58

    ec2 = instance(env, launched.status.provider_id)
    tags = {t["Key"]: t["Value"] for t in ec2["Tags"]}
    assert tags == {
        "team": "web",
        "kubernetes.io/cluster/prod-1": "owned",
        "eks:eks-cluster-name": "prod-1",
        "karpenter.sh/nodepool": "general",
        "karpenter.sh/nodeclaim": "general-x7k2p",
        "karpenter.k8s.aws/ec2nodeclass": "default",
    }
    assert ec2["ImageId"] == env.image
    assert ec2["InstanceType"] == "m5.large"

    fleet = next(r for r in env.proxy.requests if r.action == "CreateFleet").form()
    assert fleet["Type"] == ["instant"]
    assert fleet["OnDemandOptions.AllocationStrategy"] == ["lowest-price"]
    assert fleet["TargetCapacitySpecification.DefaultTargetCapacityType"] == ["on-demand"]
    types = {v for k, vs in fleet.items() if k.endswith("InstanceType") for v in vs}
    assert types == {"m5.large", "m5.xlarge"}

    templates = env.ec2.describe_launch_templates()["LaunchTemplates"]
    assert [t["LaunchTemplateName"][:10] for t in templates] == ["driftwave/"]
    version = env.ec2.describe_launch_template_versions(
        LaunchTemplateName=templates[0]["LaunchTemplateName"]
    )["LaunchTemplateVersions"][0]["LaunchTemplateData"]
    assert version["MetadataOptions"]["HttpTokens"] == "required"
    assert version["MetadataOptions"]["HttpPutResponseHopLimit"] == 1
    assert version["IamInstanceProfile"]["Name"] == "KarpenterNodeInstanceProfile"
    assert version["BlockDeviceMappings"][0]["Ebs"]["VolumeSize"] == 20
    user_data = base64.b64decode(version["UserData"]).decode()
    parts = [
        p.get_payload() for p in email.message_from_string(user_data).walk() if not p.is_multipart()
    ]
    config = parts[-1]
    assert "kind: NodeConfig" in config
    assert "name: prod-1" in config
    assert "maxPods: 58" in config
    assert "key: karpenter.sh/unregistered" in config
    assert "--node-labels=karpenter.sh/nodepool=general" in config

    got = env.cloud.get(launched.status.provider_id)
    assert got.name == "general-x7k2p"
    assert [c.name for c in env.cloud.list()] == ["general-x7k2p"]

    env.cloud.create(claim("general-second"), env.nodeclass)
    assert len(env.ec2.describe_launch_templates()["LaunchTemplates"]) == 1, (
        "the template is reused"
    )

    env.cloud.delete(launched)
    with pytest.raises(NodeClaimNotFound):
        env.cloud.delete(launched)
    with pytest.raises(NodeClaimNotFound):
        env.cloud.get(launched.status.provider_id)
    assert [c.name for c in env.cloud.list()] == ["general-second"]


def test_spot_uses_price_capacity_optimized(env: Env) -> None:
    launched = env.cloud.create(claim(capacity="spot"), env.nodeclass)
    assert launched.metadata.labels["karpenter.sh/capacity-type"] == "spot"
    fleet = next(r for r in env.proxy.requests if r.action == "CreateFleet").form()
    assert fleet["SpotOptions.AllocationStrategy"] == ["price-capacity-optimized"]


def insufficient(request: Request) -> tuple[int, dict[str, str], bytes]:
    del request
    body = (
        '<CreateFleetResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">'
        "<requestId>proxy</requestId><fleetId>fleet-0123</fleetId><errorSet><item>"
        "<launchTemplateAndOverrides><overrides><instanceType>m5.large</instanceType>"
        "<availabilityZone>us-east-1a</availabilityZone></overrides></launchTemplateAndOverrides>"
        "<lifecycle>on-demand</lifecycle><errorCode>InsufficientInstanceCapacity</errorCode>"
        "<errorMessage>We currently do not have sufficient m5.large capacity.</errorMessage>"
        "</item></errorSet><fleetInstanceSet/></CreateFleetResponse>"
    )
    return 200, {"Content-Type": "text/xml"}, body.encode()


def test_insufficient_capacity_marks_the_offering_and_the_next_launch_avoids_it(env: Env) -> None:
    env.proxy.intercept(lambda r: r.action == "CreateFleet", insufficient, times=1)
    with pytest.raises(InsufficientCapacity) as failed:
        env.cloud.create(claim(), env.nodeclass)
    assert [str(o) for o in failed.value.offerings] == ["m5.large/us-east-1a/on-demand"]
    assert env.cloud.unavailable.is_unavailable("m5.large", "us-east-1a", "on-demand")
    launched = env.cloud.create(claim(), env.nodeclass)
    assert launched.metadata.labels["topology.kubernetes.io/zone"] == "us-east-1b"
    second = [r for r in env.proxy.requests if r.action == "CreateFleet"][1].form()
    assert ("m5.large", "us-east-1a") not in overrides(second), "the cached offering is left out"
    assert ("m5.large", "us-east-1b") in overrides(second)


def overrides(form: dict[str, list[str]]) -> set[tuple[str, str]]:
    """(instance type, zone) of each override of a CreateFleet request."""
    pairs = set()
    for key, values in form.items():
        if key.endswith(".InstanceType"):
            zone = form.get(key.replace(".InstanceType", ".AvailabilityZone"), [""])[0]
            pairs.add((values[0], zone))
    return pairs


def test_a_node_class_without_images_or_subnets_is_not_ready(env: Env) -> None:
    assert env.nodeclass.status is not None
    bare = env.nodeclass.model_copy(
        update={"status": env.nodeclass.status.model_copy(update={"subnets": []})}
    )
    with pytest.raises(NodeClassNotReady):
        env.cloud.create(claim(), bare)
    no_images = env.nodeclass.model_copy(
        update={"status": env.nodeclass.status.model_copy(update={"amis": []})}
    )
    with pytest.raises(NodeClassNotReady):
        env.cloud.create(claim(), no_images)


def test_a_node_classs_launch_templates_can_be_deleted(env: Env) -> None:
    env.cloud.create(claim(), env.nodeclass)
    assert env.ec2.describe_launch_templates()["LaunchTemplates"]
    deleted = env.cloud.forget_nodeclass("default")
    assert len(deleted) == 1
    assert deleted[0].startswith("driftwave/")
    assert env.ec2.describe_launch_templates()["LaunchTemplates"] == []
    assert env.cloud.forget_nodeclass("default") == []
