"""``Descriptions``: the drift checks' instance descriptions, kept from a listing of the cluster's
instances made every two minutes (as Karpenter's instance cache), with the instances launched
since described in batches. The DescribeInstances calls are recording functions here (when
each call is made is what is tested); ``tests/integration/aws/test_cloud_network.py`` runs it
against moto's server."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agent.cloud.aws.described import LIST_EVERY, Described, Descriptions, described
from agent.cloud.aws.errors import AWSError

RUNNING = Described("subnet-a", ("sg-1",), None)


class EC2:
    """Instances by id, every call by id, and the listings made."""

    def __init__(self, ids: Sequence[str]) -> None:
        self.instances: dict[str, dict[str, Any]] = {}
        self.calls: list[list[str]] = []
        self.listings = 0
        self.failing = False
        for one in ids:
            self.launch(one)

    def launch(self, instance_id: str) -> None:
        self.instances[instance_id] = {
            "InstanceId": instance_id,
            "State": {"Name": "running"},
            "SubnetId": "subnet-a",
            "SecurityGroups": [{"GroupId": "sg-1"}],
        }

    def _fail_if_failing(self) -> None:
        if self.failing:
            raise AWSError("slow down", code="RequestLimitExceeded", operation="DescribeInstances")

    def describe(self, ids: Sequence[str]) -> Mapping[str, Mapping[str, Any]]:
        self.calls.append(list(ids))
        self._fail_if_failing()
        return {i: self.instances[i] for i in ids if i in self.instances}

    def listing(self) -> Mapping[str, Described]:
        self.listings += 1
        self._fail_if_failing()
        return {
            i: described(one)
            for i, one in self.instances.items()
            if one["State"]["Name"] != "terminated"
        }


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _ids(count: int, start: int = 0) -> list[str]:
    return [f"i-{n:04d}" for n in range(start, start + count)]


def _kept(ec2: EC2, clock: Clock) -> Descriptions:
    return Descriptions(ec2.describe, ec2.listing, clock=clock)


def test_a_round_over_listed_instances_is_one_listing() -> None:
    ec2, clock = EC2(_ids(3000)), Clock()
    kept = _kept(ec2, clock)
    assert [kept.get(one) for one in ec2.instances] == [RUNNING] * 3000
    clock.now += LIST_EVERY - 1
    assert [kept.get(one) for one in ec2.instances] == [RUNNING] * 3000
    assert (ec2.listings, ec2.calls) == (1, []), "no call by id; no listing within two minutes"


def test_instances_launched_since_the_listing_are_described_a_batch_a_call() -> None:
    ec2, clock = EC2(_ids(10)), Clock()
    kept = _kept(ec2, clock)
    kept.get("i-0000")
    for one in _ids(450, start=10):
        ec2.launch(one)
        kept.launched(one)
    answers = [kept.get(one) for one in _ids(460)]
    assert answers == [RUNNING] * 460
    assert [len(c) for c in ec2.calls] == [200, 200, 50]
    assert sorted(i for c in ec2.calls for i in c) == _ids(450, start=10)
    assert ec2.listings == 1


def test_a_listing_two_minutes_later_brings_what_changed() -> None:
    ec2, clock = EC2(_ids(300)), Clock()
    kept = _kept(ec2, clock)
    for one in ec2.instances:
        kept.get(one)
    ec2.instances["i-0007"]["SecurityGroups"] = []
    clock.now += 60
    assert kept.get("i-0007") == RUNNING, "kept until the next listing"
    clock.now += LIST_EVERY - 60
    assert kept.get("i-0007") == Described("subnet-a", (), None)
    assert (ec2.listings, ec2.calls) == (2, [])


def test_gone_and_terminated_instances_are_none_and_forgotten_at_the_next_listing() -> None:
    ec2, clock = EC2(_ids(3)), Clock()
    kept = _kept(ec2, clock)
    assert kept.get("i-0000") == RUNNING
    ec2.instances["i-0001"]["State"] = {"Name": "terminated"}
    del ec2.instances["i-0002"]
    assert [kept.get("i-0001"), kept.get("i-0002")] == [RUNNING, RUNNING], "as listed"
    clock.now += LIST_EVERY
    assert [kept.get("i-0001"), kept.get("i-0002")] == [None, None]
    assert ec2.calls == [["i-0001"], ["i-0002"]], "not listed: each described, absent or ended"
    assert [kept.get("i-0001"), kept.get("i-0002")] == [None, None]
    assert len(ec2.calls) == 2, "described as gone: kept as None until the next listing"


def test_a_failed_call_describes_only_the_instance_asked_as_none() -> None:
    ec2, clock = EC2([]), Clock()
    kept = _kept(ec2, clock)
    kept.get("i-9999")
    for one in _ids(2):
        ec2.launch(one)
        kept.launched(one)
    ec2.failing = True
    assert kept.get("i-0000") is None
    ec2.failing = False
    assert kept.get("i-0001") == RUNNING
    assert ec2.calls == [["i-9999"], ["i-0000", "i-0001"], ["i-0001"]]


def test_a_failed_listing_keeps_what_was_kept_and_is_tried_two_minutes_later() -> None:
    ec2, clock = EC2(_ids(2)), Clock()
    kept = _kept(ec2, clock)
    assert kept.get("i-0000") == RUNNING
    clock.now += LIST_EVERY
    ec2.failing = True
    assert kept.get("i-0000") == RUNNING
    ec2.failing = False
    ec2.instances["i-0000"]["SubnetId"] = "subnet-b"
    clock.now += LIST_EVERY - 1
    assert kept.get("i-0000") == RUNNING
    assert ec2.listings == 2
    clock.now += 1
    assert kept.get("i-0000") == Described("subnet-b", ("sg-1",), None)
    assert ec2.listings == 3


def test_a_forgotten_instance_is_not_described_again() -> None:
    ec2, clock = EC2([]), Clock()
    kept = _kept(ec2, clock)
    for one in _ids(3):
        ec2.launch(one)
        kept.launched(one)
    kept.forget("i-0002")
    kept.get("i-0000")
    assert ec2.calls == [], "the first lookup lists, and the listing has them all"
    clock.now += 1
    kept.forget("i-0001")
    del ec2.instances["i-0001"]
    kept.launched("i-0005")
    ec2.launch("i-0005")
    assert kept.get("i-0005") == RUNNING
    assert ec2.calls == [["i-0005"]]


def test_the_reservation_is_read() -> None:
    ec2, clock = EC2(_ids(1)), Clock()
    ec2.instances["i-0000"]["CapacityReservationId"] = "cr-1"
    assert _kept(ec2, clock).get("i-0000") == Described("subnet-a", ("sg-1",), "cr-1")
