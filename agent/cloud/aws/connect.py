"""The AWS side of a live agent, built and checked at start (:func:`connect_aws`).

It reads the EKS cluster once (DescribeCluster: the endpoint, CA and service CIDR the nodes'
user data needs, and that the credentials work) and the region's zones, then wires the adapters:
the control plane, images, subnets and security groups (the node class status), instance types
and prices, the launch path and, when a queue is given, the interruption queue. A failure here
is an :class:`AWSStartError` saying what to fix.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclass_status import EC2NodeClassStatus, ResolvedAMI
from agent.api.nodepool import NodePool
from agent.catalog import Catalog
from agent.clock import Clock
from agent.cloud.aws.amis import AWSImages
from agent.cloud.aws.cloud import AWSCloud
from agent.cloud.aws.controlplane import EKSControlPlane
from agent.cloud.aws.errors import AWSError, AWSNotFound, aws_call
from agent.cloud.aws.instancetypes import AWSInstanceTypes
from agent.cloud.aws.interruption import Record, SQSInterruption
from agent.cloud.aws.launchtemplates import LaunchTemplates
from agent.cloud.aws.network import Network
from agent.cloud.aws.nodeclass import NodeClassStatusResolver
from agent.cloud.aws.pricing import AWSPrices
from agent.cloud.aws.session import AWSClients, AWSConfig
from agent.cloud.aws.userdata import ClusterInfo
from agent.cloud.port import InstanceTypeOfferings
from agent.cloud.unavailable import UnavailableOfferings
from agent.kube.port import Cluster


class AWSStartError(Exception):
    """AWS could not be used at start; the message says what and what to do."""


@dataclass
class AWSAdapters:
    """What the live agent takes from AWS."""

    cloud: AWSCloud
    catalog: Catalog
    instance_types: Callable[[NodePool, EC2NodeClass], list[InstanceTypeOfferings]]
    images: Callable[[EC2NodeClass, str], list[ResolvedAMI]]
    nodeclass_status: Callable[[EC2NodeClass, str], EC2NodeClassStatus]
    control_plane: EKSControlPlane
    interruption: Callable[[Record], SQSInterruption] | None
    """Builds the interruption queue's consumer around the agent's recorder (None: no queue)."""
    cluster_info: ClusterInfo


def describe_cluster(clients: AWSClients, name: str) -> ClusterInfo:
    """The cluster's endpoint, CA and service CIDR; AWSStartError when it cannot be read."""
    try:
        answer: dict[str, Any] = aws_call(
            f"reading EKS cluster {name}", clients.eks.describe_cluster, name=name
        )["cluster"]
    except AWSNotFound as exc:
        raise AWSStartError(
            f"no EKS cluster named {name} in {clients.region}: check --cluster-name and --region"
        ) from exc
    except AWSError as exc:
        raise AWSStartError(f"cannot use AWS: {exc}") from exc
    network = answer.get("kubernetesNetworkConfig") or {}
    return ClusterInfo(
        name=name,
        endpoint=str(answer.get("endpoint") or ""),
        certificate_authority=str((answer.get("certificateAuthority") or {}).get("data") or ""),
        service_cidr=str(network.get("serviceIpv4Cidr") or "10.100.0.0/16"),
    )


def zones(clients: AWSClients) -> list[str]:
    """The region's availability zones."""
    try:
        answer = aws_call("listing zones", clients.ec2.describe_availability_zones)
    except AWSError as exc:
        raise AWSStartError(f"cannot use EC2: {exc}") from exc
    return sorted(str(z["ZoneName"]) for z in answer.get("AvailabilityZones", []))


def connect_aws(
    *,
    cluster_name: str,
    region: str | None,
    profile: str | None,
    interruption_queue: str | None,
    cluster: Cluster,
    clock: Clock,
) -> AWSAdapters:
    """Build and check the AWS adapters (module docstring); raises AWSStartError."""
    clients = AWSClients(AWSConfig(region=region, profile=profile))
    info = describe_cluster(clients, cluster_name)
    catalog = Catalog.packaged(zones=zones(clients))
    unavailable = UnavailableOfferings(clock)
    images = AWSImages(clients, clock)
    types = AWSInstanceTypes(clients, AWSPrices(clients, clock), unavailable, clock)
    cloud = AWSCloud(
        clients,
        cluster_name=cluster_name,
        instance_types=lambda nodeclass: types.list(None, nodeclass),
        launch_templates=LaunchTemplates(clients, info),
        unavailable=unavailable,
    )
    interruption: Callable[[Record], SQSInterruption] | None = None
    if interruption_queue:
        interruption = partial(SQSInterruption, clients, interruption_queue, cluster, unavailable)
    return AWSAdapters(
        cloud=cloud,
        catalog=catalog,
        instance_types=types.list,
        images=images.resolve,
        nodeclass_status=NodeClassStatusResolver(images, Network(clients), clock),
        control_plane=EKSControlPlane(clients, cluster_name, clock),
        interruption=interruption,
        cluster_info=info,
    )
