"""The test servers' moto finds an EC2 resource's tags by its id (``tests.support.motoserver``):
the same tags as moto's own scan of every tag, in the same order, and DescribeInstances no
longer scans the region's tags once per instance it filters or describes."""

from __future__ import annotations

from typing import Any

import boto3
from moto.ec2.models import ec2_backends

from tests.support.motoserver import ACCOUNT, moto_server

REGION = "us-east-1"


def _client(url: str) -> Any:
    return boto3.client(
        "ec2",
        region_name=REGION,
        endpoint_url=url,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",  # moto's own placeholder
    )


def _launch(ec2: Any, count: int, cluster: str) -> list[str]:
    tags = [
        {"Key": "eks:eks-cluster-name", "Value": cluster},
        {"Key": "karpenter.sh/nodeclaim", "Value": "general-x"},
        {"Key": "Name", "Value": "node"},
    ]
    answer = ec2.run_instances(
        ImageId="ami-12c6146b",
        MinCount=count,
        MaxCount=count,
        TagSpecifications=[{"ResourceType": "instance", "Tags": tags}],
    )
    return [one["InstanceId"] for one in answer["Instances"]]


def _in_two_clusters(url: str, ours: int, others: int) -> tuple[list[str], Any]:
    """``ours`` instances launched in cluster prod-1 and ``others`` in prod-2; the ids of ours,
    and moto's EC2 backend."""
    ec2 = _client(url)
    launched = _launch(ec2, ours, "prod-1")
    _launch(ec2, others, "prod-2")
    return launched, ec2_backends[ACCOUNT][REGION]


def test_an_instances_tags_are_those_of_motos_scan() -> None:
    with moto_server() as url:
        ours, backend = _in_two_clusters(url, 5, 3)
        for instance_id in ours:
            instance = backend.get_instance(instance_id)
            scanned = backend.describe_tags(filters={"resource-id": [instance_id]})
            assert instance.get_tags() == scanned
            assert {t["key"] for t in scanned} == {
                "eks:eks-cluster-name",
                "karpenter.sh/nodeclaim",
                "Name",
            }


def test_describing_instances_by_their_tags_scans_no_tags() -> None:
    with moto_server() as url:
        ours, backend = _in_two_clusters(url, 20, 10)
        scans: list[Any] = []
        scan = backend.describe_tags

        def counted(filters: Any = None) -> Any:
            scans.append(filters)
            return scan(filters)

        backend.describe_tags = counted
        try:
            answer = _client(url).describe_instances(
                Filters=[{"Name": "tag:eks:eks-cluster-name", "Values": ["prod-1"]}]
            )
        finally:
            del backend.describe_tags
        found = [i for r in answer["Reservations"] for i in r["Instances"]]
        assert sorted(i["InstanceId"] for i in found) == sorted(ours)
        assert all({"Key": "Name", "Value": "node"} in i["Tags"] for i in found)
        assert scans == [], "no scan of the region's tags per instance"
