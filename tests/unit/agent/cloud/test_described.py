"""``Descriptions``: the drift checks' instance descriptions, described in batches and kept for
their time to live. The DescribeInstances call is a recording function here (the batching is
what is tested); ``tests/integration/aws/test_cloud_network.py`` runs it against moto's server."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agent.cloud.aws.described import Described, Descriptions
from agent.cloud.aws.errors import AWSError


class EC2:
    """Instances by id, and every call's ids."""

    def __init__(self, ids: Sequence[str]) -> None:
        self.instances: dict[str, dict[str, Any]] = {
            i: {
                "InstanceId": i,
                "State": {"Name": "running"},
                "SubnetId": "subnet-a",
                "SecurityGroups": [{"GroupId": "sg-1"}],
            }
            for i in ids
        }
        self.calls: list[list[str]] = []
        self.failing = False

    def describe(self, ids: Sequence[str]) -> Mapping[str, Mapping[str, Any]]:
        self.calls.append(list(ids))
        if self.failing:
            raise AWSError("slow down", code="RequestLimitExceeded", operation="DescribeInstances")
        return {i: self.instances[i] for i in ids if i in self.instances}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _ids(count: int) -> list[str]:
    return [f"i-{n:04d}" for n in range(count)]


def test_a_round_over_launched_instances_is_one_call_per_batch() -> None:
    ec2, clock = EC2(_ids(450)), Clock()
    kept = Descriptions(ec2.describe, ttl=30, batch=200, clock=clock)
    for one in ec2.instances:
        kept.launched(one)
    answers = [kept.get(one) for one in ec2.instances]
    assert answers == [Described("subnet-a", ("sg-1",), None)] * 450
    assert [len(c) for c in ec2.calls] == [200, 200, 50]
    assert sorted(i for c in ec2.calls for i in c) == sorted(ec2.instances)


def test_stale_descriptions_are_described_again_together() -> None:
    ec2, clock = EC2(_ids(300)), Clock()
    kept = Descriptions(ec2.describe, ttl=30, batch=200, clock=clock)
    for one in ec2.instances:
        kept.launched(one)
    for one in ec2.instances:
        kept.get(one)
    assert len(ec2.calls) == 2
    clock.now += 10
    for one in ec2.instances:
        kept.get(one)
    assert len(ec2.calls) == 2, "fresh descriptions answer without a call"
    clock.now += 30
    ec2.instances["i-0007"]["SecurityGroups"] = []
    answers = {one: kept.get(one) for one in ec2.instances}
    assert len(ec2.calls) == 4
    assert answers["i-0007"] == Described("subnet-a", (), None)


def test_gone_and_terminated_instances_are_none_and_forgotten_once_stale() -> None:
    ec2, clock = EC2(_ids(3)), Clock()
    kept = Descriptions(ec2.describe, ttl=30, batch=200, clock=clock)
    ec2.instances["i-0001"]["State"] = {"Name": "terminated"}
    del ec2.instances["i-0002"]
    for one in _ids(3):
        kept.launched(one)
    assert [kept.get(one) for one in _ids(3)] == [
        Described("subnet-a", ("sg-1",), None),
        None,
        None,
    ]
    assert len(ec2.calls) == 1
    clock.now += 31
    kept.get("i-0000")
    assert ec2.calls[-1] == ["i-0000"], "stale instances described as gone are not asked again"


def test_a_failed_call_describes_only_the_instance_asked_as_none() -> None:
    ec2, clock = EC2(_ids(2)), Clock()
    kept = Descriptions(ec2.describe, ttl=30, batch=200, clock=clock)
    for one in _ids(2):
        kept.launched(one)
    ec2.failing = True
    assert kept.get("i-0000") is None
    ec2.failing = False
    assert kept.get("i-0001") == Described("subnet-a", ("sg-1",), None)
    assert ec2.calls == [["i-0000", "i-0001"], ["i-0001"]]


def test_a_forgotten_instance_is_not_described_again() -> None:
    ec2, clock = EC2(_ids(3)), Clock()
    kept = Descriptions(ec2.describe, ttl=30, batch=200, clock=clock)
    for one in _ids(3):
        kept.launched(one)
    kept.forget("i-0002")
    kept.get("i-0000")
    assert ec2.calls == [["i-0000", "i-0001"]]


def test_the_reservation_is_read() -> None:
    ec2, clock = EC2(_ids(1)), Clock()
    ec2.instances["i-0000"]["CapacityReservationId"] = "cr-1"
    kept = Descriptions(ec2.describe, clock=clock)
    assert kept.get("i-0000") == Described("subnet-a", ("sg-1",), "cr-1")
