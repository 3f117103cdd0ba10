"""Seeding moto's server (running in the test process) with what an EKS account holds.

moto's API cannot write what AWS publishes: SSM parameters under ``/aws/service/`` (its
``PutParameter`` refuses the prefix, as AWS does) and images owned by Amazon with chosen names,
architectures and creation dates. Those are put straight into moto's backends, as moto's own
documentation suggests for seeding. Everything an account owner can create (VPCs, subnets,
security groups, the EKS cluster, queues) goes through boto3. moto does not model image
deprecation: :func:`deprecate` makes the proxy in front of moto add ``deprecationTime`` to
``DescribeImages`` answers, as EC2 returns it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from moto.ec2.models import ec2_backends
from moto.ec2.models.amis import Ami
from moto.ec2.utils import random_ami_id
from moto.ssm.models import Parameter, ssm_backends

from tests.support.awsproxy import AWSProxy, Request
from tests.support.motoserver import ACCOUNT

AMAZON = "137112412989"
"""The account id Amazon's images carry (their owner alias is ``amazon``)."""


def publish_parameter(region: str, name: str, value: str) -> None:
    """Set an SSM parameter as AWS publishes it (a new version when it exists)."""
    history = ssm_backends[ACCOUNT][region]._parameters[name]
    history.append(
        Parameter(  # type: ignore[abstract]  # moto builds its own parameters this way
            account_id=ACCOUNT,
            name=name,
            value=value,
            parameter_type="String",
            description=None,
            allowed_pattern=None,
            keyid=None,
            last_modified_date=datetime.now(UTC),
            version=len(history) + 1,
            data_type="aws:ec2:image",
        )
    )


def add_image(
    region: str,
    name: str,
    *,
    arch: str = "x86_64",
    created: datetime | None = None,
    amazon: bool = True,
    tags: Mapping[str, str] | None = None,
) -> str:
    """Register an image (Amazon's, or the account's own); its id."""
    backend = ec2_backends[ACCOUNT][region]
    ami_id = random_ami_id()
    ami = Ami(
        backend,
        ami_id,
        name=name,
        owner_id=AMAZON if amazon else ACCOUNT,
        owner_alias="amazon" if amazon else None,
        architecture=arch,
        creation_date=created or datetime.now(UTC),
        virtualization_type="hvm",
        root_device_type="ebs",
        root_device_name="/dev/xvda",
    )
    backend.amis[ami_id] = ami
    if tags:
        backend.create_tags([ami_id], dict(tags))
    return ami_id


def deprecate(proxy: AWSProxy, when: Mapping[str, datetime]) -> None:
    """Make ``DescribeImages`` answers carry ``deprecationTime`` for these images."""

    def answer(request: Request) -> Any:
        status, headers, body = proxy.forward(request)
        text = body.decode()
        for ami_id, at in when.items():
            stamp = at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
            text = re.sub(
                rf"(<imageId>{ami_id}</imageId>)",
                rf"\1<deprecationTime>{stamp}</deprecationTime>",
                text,
            )
        headers = {k: v for k, v in headers.items() if k.lower() != "content-length"}
        return status, headers, text.encode()

    proxy.intercept(lambda r: r.action == "DescribeImages", answer)


def network(
    ec2: Any, cluster: str, zones: tuple[str, ...] = ("us-east-1a", "us-east-1b")
) -> dict[str, Any]:
    """A VPC with one subnet per zone and a security group, tagged for discovery as Karpenter's
    getting-started guide tags them (``karpenter.sh/discovery: CLUSTER``). Each subnet is a
    ``/19`` (8,187 addresses), so one zone holds the live-agent benchmark's 5,000 instances; a
    ``/24`` (251) filled at 251 instances, and moto then answers a launch with a 500 (no address
    left), not EC2's ``InsufficientFreeAddressesInSubnet``."""
    discovery = [{"Key": "karpenter.sh/discovery", "Value": cluster}]
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnets = []
    for index, zone in enumerate(zones):
        cidr = f"10.0.{32 * index}.0/19"
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock=cidr, AvailabilityZone=zone)
        subnet_id = subnet["Subnet"]["SubnetId"]
        ec2.create_tags(
            Resources=[subnet_id], Tags=[*discovery, {"Key": "Name", "Value": f"private-{zone}"}]
        )
        subnets.append(subnet_id)
    group = ec2.create_security_group(GroupName=f"{cluster}-nodes", Description="nodes", VpcId=vpc)[
        "GroupId"
    ]
    ec2.create_tags(Resources=[group], Tags=discovery)
    return {"vpc": vpc, "subnets": subnets, "security_group": group}


AL2023_LINE = "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard"
OLD_RELEASE, NEW_RELEASE = "v20251202", "v20251216"


def seed_eks_account(url: str, region: str, cluster: str = "prod-1") -> dict[str, str]:
    """An EKS account on moto's server at ``url``: the cluster (1.31), its tagged network and two
    AL2023 releases (30 and 1 days old; the newer is recommended). Answers release → image id."""
    network(boto3.client("ec2", region_name=region, endpoint_url=url), cluster)
    boto3.client("eks", region_name=region, endpoint_url=url).create_cluster(
        name=cluster,
        version="1.31",
        roleArn="arn:aws:iam::123456789012:role/eks",
        resourcesVpcConfig={"subnetIds": []},
    )
    images = {}
    now = datetime.now(UTC)
    for age, release in ((30, OLD_RELEASE), (1, NEW_RELEASE)):
        name = f"amazon-eks-node-al2023-x86_64-standard-1.31-{release}"
        images[release] = add_image(region, name, created=now - timedelta(days=age))
        publish_parameter(region, f"{AL2023_LINE}/{name}/image_id", images[release])
        publish_parameter(region, f"{AL2023_LINE}/recommended/image_id", images[release])
    return images
