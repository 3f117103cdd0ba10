"""Celery's Redis transport (kombu's), with one exit of a worker on a broker restart removed.

When Redis goes away while a worker holds unacknowledged messages (a step runs for as long as
its wave converges, and its message is acknowledged late), Celery closes the broken connection
and kombu's channel, as it closes, puts those messages back on the queue. By then kombu has
already dropped the connection's parameters, so the restore fails with ``AttributeError``
(``'NoneType' object has no attribute 'hostname'``), an error Celery does not expect on that
path: the worker stops (status 0) instead of reconnecting.

Restoring them at that moment is not needed: kombu's Redis transport also records every
delivered message in Redis itself (its unacked hash), and any consumer puts a message back on
the queue once it has gone unacknowledged for the visibility timeout
(``DRIFTWAVE_BROKER_VISIBILITY_TIMEOUT``). So here a channel closing without its connection's
parameters leaves its messages to that, and the worker goes on to reconnect. A worker closing
normally restores them at once, as kombu does. The same holds for a message whose run ends after
its channel closed: its late acknowledgement (kombu's raises ``AttributeError``, ``'NoneType'
object has no attribute 'client'``, and the worker stops) leaves it to the visibility timeout.
"""

from __future__ import annotations

from typing import Any

from kombu.transport import redis

TRANSPORT = "workers.redis_transport:Transport"
"""The transport's import path, as Celery's ``broker_transport`` setting takes it."""


class QoS(redis.QoS):
    """kombu's Redis QoS, which leaves unacknowledged messages to the visibility timeout when
    the connection's parameters are gone."""

    def restore_unacked(self, client: Any = None) -> None:
        """Put the delivered, unacknowledged messages back on their queues; when the channel's
        connection is already torn down, forget them here instead (they stay in Redis' unacked
        hash, from which any consumer restores them after the visibility timeout)."""
        if client is None and self.channel.connection.client is None:
            self._delivered.clear()
            return
        super().restore_unacked(client)  # type: ignore[no-untyped-call]

    def ack(self, delivery_tag: str) -> None:
        """Acknowledge a delivered message; when its channel is already closed (the broker went
        away while the step ran, and the late acknowledgement comes after the close), forget it
        here instead: it stays in Redis' unacked hash, any consumer puts it back on the queue
        after the visibility timeout, and running a step's message again changes nothing."""
        if self.channel.connection is None:
            self._quick_ack(delivery_tag)
            return
        super().ack(delivery_tag)  # type: ignore[no-untyped-call]


class Channel(redis.Channel):
    """kombu's Redis channel with :class:`QoS`."""

    QoS = QoS


class Transport(redis.Transport):
    """kombu's Redis transport with :class:`Channel`."""

    Channel = Channel
