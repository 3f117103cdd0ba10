"""Interruption handling: EventBridge events from an SQS queue, acted on as Karpenter acts.

Karpenter's interruption queue receives four kinds of EC2 events through EventBridge rules
(deploy/iam creates the queue and the rules). For each message, :class:`SQSInterruption` finds
the NodeClaim of the instance (by ``status.providerID``) and:

===============================================  ==============================================
event                                            action
===============================================  ==============================================
``EC2 Spot Instance Interruption Warning``       delete the NodeClaim (cordon and drain within
                                                 the two-minute warning); the spot offering is
                                                 cached unavailable
``AWS Health Event`` (EC2 ``scheduledChange``)    delete the NodeClaim
``EC2 Instance State-change Notification``       delete the NodeClaim when the state is
                                                 stopping, stopped, shutting-down or terminated
``EC2 Instance Rebalance Recommendation``        record only (as Karpenter does)
===============================================  ==============================================

Deleting the NodeClaim hands the node to the termination controller, which taints, drains
(respecting PodDisruptionBudgets) and terminates it, while the provisioner launches a
replacement for the evicted pods. Every message is deleted once handled, unreadable ones too.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from agent.api.nodeclaim import NodeClaim
from agent.catalog import labels as lbl
from agent.cloud.aws.errors import AWSError, aws_call
from agent.cloud.aws.session import AWSClients
from agent.cloud.unavailable import UnavailableOfferings
from agent.kube.port import Cluster, ClusterError, NotFound

LOG = logging.getLogger("driftwave.agent.interruption")
SPOT = "EC2 Spot Instance Interruption Warning"
REBALANCE = "EC2 Instance Rebalance Recommendation"
STATE = "EC2 Instance State-change Notification"
HEALTH = "AWS Health Event"
STOPPING = frozenset({"stopping", "stopped", "shutting-down", "terminated"})
Record = Callable[[str, str, str, dict[str, Any]], None]


def instance_ids(event: dict[str, Any]) -> list[str]:
    """The instances an event is about."""
    detail = event.get("detail") or {}
    if event.get("detail-type") == HEALTH:
        return [
            str(e["entityValue"])
            for e in detail.get("affectedEntities") or []
            if "entityValue" in e
        ]
    found = detail.get("instance-id")
    return [str(found)] if found else []


def action(event: dict[str, Any]) -> str:
    """``delete`` or ``record`` for an event (the module docstring's table); ``ignore`` else."""
    kind = event.get("detail-type")
    detail = event.get("detail") or {}
    if kind == SPOT:
        return "delete"
    if kind == HEALTH:
        scheduled = detail.get("eventTypeCategory") == "scheduledChange"
        return "delete" if scheduled and detail.get("service") == "EC2" else "ignore"
    if kind == STATE:
        return "delete" if detail.get("state") in STOPPING else "ignore"
    if kind == REBALANCE:
        return "record"
    return "ignore"


class SQSInterruption:
    """See the module docstring; :meth:`poll_once` is called by the agent's loop."""

    def __init__(
        self,
        clients: AWSClients,
        queue_url: str,
        cluster: Cluster,
        unavailable: UnavailableOfferings,
        record: Record,
    ) -> None:
        self._clients = clients
        self.queue_url = queue_url
        self._cluster = cluster
        self._unavailable = unavailable
        self.record = record
        """Where events go (the live agent's recorder)."""

    def poll_once(self) -> int:
        """Handle the messages waiting now (up to 10); how many were handled."""
        try:
            answer = aws_call(
                "receiving interruption messages",
                self._clients.sqs.receive_message,
                QueueUrl=self.queue_url,
                MaxNumberOfMessages=10,
                WaitTimeSeconds=0,
            )
        except AWSError as exc:
            LOG.warning("interruption queue: %s", exc)
            return 0
        messages = answer.get("Messages", [])
        for message in messages:
            try:
                self.handle(json.loads(message.get("Body") or "{}"))
            except (ValueError, TypeError) as exc:
                LOG.warning(
                    "interruption queue: unreadable message %s: %s", message.get("MessageId"), exc
                )
            except ClusterError as exc:
                LOG.warning("interruption queue: %s (the message is retried)", exc)
                continue
            try:
                aws_call(
                    "deleting an interruption message",
                    self._clients.sqs.delete_message,
                    QueueUrl=self.queue_url,
                    ReceiptHandle=message["ReceiptHandle"],
                )
            except AWSError as exc:
                LOG.warning("interruption queue: %s", exc)
        return len(messages)

    def handle(self, event: dict[str, Any]) -> None:
        """Act on one event (module docstring)."""
        what = action(event)
        if what == "ignore":
            return
        wanted = set(instance_ids(event))
        for claim in self._cluster.list(NodeClaim):
            provider = claim.status.provider_id or ""
            if provider.rsplit("/", 1)[-1] not in wanted:
                continue
            details = {"event": event.get("detail-type"), "instance": provider.rsplit("/", 1)[-1]}
            if what == "record":
                self.record("NodeClaim", claim.name, "RebalanceRecommendation", details)
                continue
            if event.get("detail-type") == SPOT:
                labels = claim.metadata.labels
                if labels.get(lbl.INSTANCE_TYPE) and labels.get(lbl.ZONE):
                    self._unavailable.mark_unavailable(
                        labels[lbl.INSTANCE_TYPE],
                        labels[lbl.ZONE],
                        "spot",
                        reason="SpotInterruption",
                    )
            self.record("NodeClaim", claim.name, "Interrupted", details)
            if claim.metadata.deletion_timestamp:
                continue
            try:
                self._cluster.delete(NodeClaim, claim.name)
            except NotFound:
                continue
