"""The EKS control plane adapter: the version from moto's DescribeCluster, and upgrades through
UpdateClusterVersion / DescribeUpdate, which moto does not implement. Those two are answered by
a loopback stand-in in front of moto (tests/support/awsproxy.py) with the request and answer
shapes the EKS API reference documents; boto3 and the adapter make real HTTP calls to it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import timedelta

import boto3
import pytest

from agent.clock import EPOCH, VirtualClock
from agent.cloud.aws.controlplane import ControlPlaneError, EKSControlPlane
from agent.cloud.aws.session import AWSClients, AWSConfig
from tests.support.awsproxy import AWSProxy, Request, aws_proxy, json_answer
from tests.support.motoserver import moto_server

REGION = "us-east-1"
UPDATES = re.compile(r"^/clusters/(?P<name>[^/]+)/updates(?:/(?P<id>[^/]+))?$")


@pytest.fixture
def proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[AWSProxy]:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with moto_server() as url, aws_proxy(url) as proxy:
        eks = boto3.client("eks", region_name=REGION, endpoint_url=url)
        eks.create_cluster(
            name="prod-1",
            version="1.30",
            roleArn="arn:aws:iam::123456789012:role/eks",
            resourcesVpcConfig={"subnetIds": []},
        )
        yield proxy


class EKSUpdates:
    """The stand-in's state: updates started, answered as the EKS API documents them."""

    def __init__(self, proxy: AWSProxy, finish_after: int = 2) -> None:
        self.started: list[dict[str, str]] = []
        self.polls = 0
        self.finish_after = finish_after
        proxy.intercept(self._is_start, self._start)
        proxy.intercept(self._is_describe, self._describe)

    @staticmethod
    def _is_start(request: Request) -> bool:
        found = UPDATES.match(request.path)
        return request.method == "POST" and found is not None and found["id"] is None

    @staticmethod
    def _is_describe(request: Request) -> bool:
        found = UPDATES.match(request.path)
        return request.method == "GET" and found is not None and found["id"] is not None

    def _start(self, request: Request) -> tuple[int, dict[str, str], bytes]:
        body = json.loads(request.body)
        if self.started and self.polls < self.finish_after:
            return json_answer(
                409,
                {"message": "Cluster already has an update in progress"},
                "ResourceInUseException",
            )
        self.started.append(body)
        update: dict[str, object] = {
            "id": f"upd-{len(self.started)}",
            "status": "InProgress",
            "type": "VersionUpdate",
            "params": [{"type": "Version", "value": body["version"]}],
            "errors": [],
        }
        return json_answer(200, {"update": update})

    def _describe(self, request: Request) -> tuple[int, dict[str, str], bytes]:
        self.polls += 1
        found = UPDATES.match(request.path)
        assert found is not None
        status = "Successful" if self.polls >= self.finish_after else "InProgress"
        update: dict[str, object] = {"id": found["id"], "status": status, "errors": []}
        return json_answer(200, {"update": update})


def plane(proxy: AWSProxy, clock: VirtualClock, name: str = "prod-1") -> EKSControlPlane:
    clients = AWSClients(AWSConfig(region=REGION, endpoint_url=proxy.url, max_attempts=2))
    return EKSControlPlane(clients, name, clock, refresh=timedelta(minutes=5))


def test_the_version_comes_from_describe_cluster_and_is_cached(proxy: AWSProxy) -> None:
    clock = VirtualClock(EPOCH)
    control = plane(proxy, clock)
    assert control.version() == "1.30"
    assert control.version() == "1.30"
    reads = [r for r in proxy.requests if r.path == "/clusters/prod-1" and r.method == "GET"]
    assert len(reads) == 1, "the second read is served from the cache"
    clock.advance(timedelta(minutes=5))
    control.version()
    reads = [r for r in proxy.requests if r.path == "/clusters/prod-1" and r.method == "GET"]
    assert len(reads) == 2, "read again once the refresh period passed"


def test_an_unknown_cluster_is_a_permanent_error_naming_it(proxy: AWSProxy) -> None:
    control = plane(proxy, VirtualClock(EPOCH), name="missing")
    with pytest.raises(ControlPlaneError, match="EKS cluster missing") as caught:
        control.version()
    assert caught.value.retryable is False


def test_an_upgrade_is_started_followed_and_the_version_read_again(proxy: AWSProxy) -> None:
    updates = EKSUpdates(proxy, finish_after=2)
    clock = VirtualClock(EPOCH)
    control = plane(proxy, clock)
    assert control.version() == "1.30"
    started = control.upgrade("1.31")
    assert [body["version"] for body in updates.started] == ["1.31"]
    assert updates.started[0]["clientRequestToken"], "boto3 makes the request idempotent"
    assert (started.id, started.status) == ("upd-1", "InProgress")
    first = control.follow()
    assert first is not None
    assert first.status == "InProgress"
    assert control.upgrade_in_progress is not None
    second = control.follow()
    assert second is not None
    assert second.finished
    assert control.upgrade_in_progress is None
    assert control.follow() is None
    reads = sum(1 for r in proxy.requests if r.path == "/clusters/prod-1" and r.method == "GET")
    control.version()
    after = sum(1 for r in proxy.requests if r.path == "/clusters/prod-1" and r.method == "GET")
    assert after == reads + 1, "a finished upgrade drops the cached version"


def test_an_upgrade_eks_refuses_is_an_error_with_its_reason(proxy: AWSProxy) -> None:
    EKSUpdates(proxy, finish_after=5)
    control = plane(proxy, VirtualClock(EPOCH))
    control.upgrade("1.31")
    with pytest.raises(ControlPlaneError, match="ResourceInUseException") as caught:
        control.upgrade("1.31")
    assert caught.value.retryable is False
