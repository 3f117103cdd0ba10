"""The interruption queue against moto's SQS: EventBridge messages for spot interruptions,
scheduled changes, state changes and rebalance recommendations, acted on through the Cluster
port (the in-memory cluster) as Karpenter acts; every message is deleted once handled."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from agent.api.nodeclaim import NodeClaim
from agent.clock import VirtualClock
from agent.cloud.aws.interruption import SQSInterruption
from agent.cloud.aws.session import AWSClients, AWSConfig
from agent.cloud.unavailable import UnavailableOfferings
from agent.kube.simulated.cluster import SimulatedCluster
from common.kubemodel import parse_manifest
from tests.support.motoserver import moto_server

REGION = "us-east-1"
NOW = datetime(2026, 1, 10, tzinfo=UTC)


@dataclass
class Env:
    sqs: Any
    queue: str
    cluster: SimulatedCluster
    unavailable: UnavailableOfferings
    handler: SQSInterruption
    recorded: list[tuple[str, str, str]] = field(default_factory=list)


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> Iterator[Env]:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with moto_server() as url:
        sqs = boto3.client("sqs", region_name=REGION, endpoint_url=url)
        queue = sqs.create_queue(QueueName="prod-1-interruptions")["QueueUrl"]
        clock = VirtualClock(NOW)
        cluster = SimulatedCluster(clock)
        for index in range(4):
            cluster.create(nodeclaim(f"general-{index}", f"i-0{index}aaaaaaaaaaaaaaa"))
        unavailable = UnavailableOfferings(clock)
        recorded: list[tuple[str, str, str]] = []
        clients = AWSClients(AWSConfig(region=REGION, endpoint_url=url))
        handler = SQSInterruption(
            clients, queue, cluster, unavailable, lambda k, o, r, _: recorded.append((k, o, r))
        )
        yield Env(sqs, queue, cluster, unavailable, handler, recorded)


def nodeclaim(name: str, instance: str) -> NodeClaim:
    claim = parse_manifest(
        NodeClaim,
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {
                "name": name,
                "finalizers": ["karpenter.sh/termination"],
                "labels": {
                    "node.kubernetes.io/instance-type": "m5.large",
                    "topology.kubernetes.io/zone": "us-east-1a",
                    "karpenter.sh/capacity-type": "spot",
                },
            },
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "d"},
                "requirements": [],
            },
        },
    )
    status = claim.status.model_copy(update={"provider_id": f"aws:///us-east-1a/{instance}"})
    return claim.model_copy(update={"status": status})


def event(kind: str, source: str, detail: dict[str, Any]) -> str:
    return json.dumps({"version": "0", "detail-type": kind, "source": source, "detail": detail})


def deleting(env: Env) -> list[str]:
    return sorted(c.name for c in env.cluster.list(NodeClaim) if c.metadata.deletion_timestamp)


def test_each_event_kind(env: Env) -> None:
    send = env.sqs.send_message
    send(
        QueueUrl=env.queue,
        MessageBody=event(
            "EC2 Spot Instance Interruption Warning",
            "aws.ec2",
            {"instance-id": "i-00aaaaaaaaaaaaaaa", "instance-action": "terminate"},
        ),
    )
    send(
        QueueUrl=env.queue,
        MessageBody=event(
            "EC2 Instance Rebalance Recommendation",
            "aws.ec2",
            {"instance-id": "i-01aaaaaaaaaaaaaaa"},
        ),
    )
    send(
        QueueUrl=env.queue,
        MessageBody=event(
            "EC2 Instance State-change Notification",
            "aws.ec2",
            {"instance-id": "i-02aaaaaaaaaaaaaaa", "state": "stopping"},
        ),
    )
    send(
        QueueUrl=env.queue,
        MessageBody=event(
            "AWS Health Event",
            "aws.health",
            {
                "service": "EC2",
                "eventTypeCategory": "scheduledChange",
                "affectedEntities": [{"entityValue": "i-03aaaaaaaaaaaaaaa"}],
            },
        ),
    )
    send(QueueUrl=env.queue, MessageBody="not json")  # fmt: skip

    handled = 0
    for _ in range(5):
        handled += env.handler.poll_once()
    assert handled == 5
    assert deleting(env) == ["general-0", "general-2", "general-3"]
    assert ("NodeClaim", "general-1", "RebalanceRecommendation") in env.recorded
    assert env.unavailable.is_unavailable("m5.large", "us-east-1a", "spot")
    left = env.sqs.get_queue_attributes(QueueUrl=env.queue, AttributeNames=["All"])["Attributes"]
    assert left["ApproximateNumberOfMessages"] == "0"
    assert left["ApproximateNumberOfMessagesNotVisible"] == "0", "every message was deleted"


def test_running_state_and_unknown_instances_change_nothing(env: Env) -> None:
    env.sqs.send_message(
        QueueUrl=env.queue,
        MessageBody=event(
            "EC2 Instance State-change Notification",
            "aws.ec2",
            {"instance-id": "i-02aaaaaaaaaaaaaaa", "state": "running"},
        ),
    )
    env.sqs.send_message(QueueUrl=env.queue, MessageBody=event(
        "EC2 Spot Instance Interruption Warning", "aws.ec2",
        {"instance-id": "i-0fffffffffffffff0"}))  # fmt: skip
    assert env.handler.poll_once() == 2
    assert deleting(env) == []
