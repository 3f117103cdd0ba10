# mypy: disable-error-code="no-untyped-call"
"""The workers' Redis transport against a real Redis: a channel closed after its connection's
parameters are gone (what Celery does when Redis restarts under a worker holding unacknowledged
step messages) makes kombu's own transport raise, and ours not; the messages stay recorded in
Redis and come back on the queue after the visibility timeout."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kombu.connection import Connection
from kombu.transport import redis
from redis import Redis

from workers import folder_transport
from workers.app import make_app
from workers.redis_transport import TRANSPORT
from workers.settings import BrokerSettings

pytestmark = pytest.mark.integration


@pytest.fixture
def prefix(redis_url: str) -> Iterator[str]:
    """A key prefix of the test's own (kombu's unacked hash is otherwise shared), removed after."""
    name = f"dw-test-{uuid.uuid4().hex[:8]}:"
    yield name
    client = Redis.from_url(redis_url)
    keys = list(client.scan_iter(f"{name}*"))
    if keys:
        client.delete(*keys)


def _holding(redis_url: str, transport: str, prefix: str, queue: str) -> Connection:
    """A connection that took one message from ``queue`` and has not acknowledged it."""
    options = {"global_keyprefix": prefix, "visibility_timeout": 1}
    connection = Connection(redis_url, transport=transport, transport_options=options)
    with Connection(redis_url, transport_options=options) as producer:
        producer.SimpleQueue(queue).put({"step": "s-1"})
    message = connection.SimpleQueue(queue).get(block=True, timeout=5)
    assert message.payload == {"step": "s-1"}
    return connection


def _tear_down_like_a_lost_broker(connection: Connection) -> None:
    """What kombu has done to a connection by the time Celery closes it after Redis went away:
    its transport no longer knows the connection's parameters."""
    connection.transport.client = None


def test_kombus_own_transport_stops_on_that_close(redis_url: str, prefix: str) -> None:
    connection = _holding(redis_url, "redis", prefix, "q-stock")
    channel = connection.default_channel
    _tear_down_like_a_lost_broker(connection)
    with pytest.raises(AttributeError, match="hostname"):
        channel.close()


def test_ours_closes_and_the_message_comes_back_after_the_visibility_timeout(
    redis_url: str, prefix: str
) -> None:
    connection = _holding(redis_url, TRANSPORT, prefix, "q-ours")
    channel = connection.default_channel
    _tear_down_like_a_lost_broker(connection)
    channel.close()  # no error: the worker goes on to reconnect
    client = Redis.from_url(redis_url)
    assert client.hlen(f"{prefix}unacked") == 1, "still recorded as delivered, unacknowledged"
    assert client.llen(f"{prefix}q-ours") == 0, "not put back at once"
    time.sleep(1.5)  # past the visibility timeout
    options = {"global_keyprefix": prefix, "visibility_timeout": 1}
    with Connection(redis_url, transport=TRANSPORT, transport_options=options) as again:
        again.default_channel.qos.restore_visible(num=10)
        message = again.SimpleQueue("q-ours").get(block=True, timeout=5)
        assert message.payload == {"step": "s-1"}
        message.ack()
    assert client.hlen(f"{prefix}unacked") == 0


def test_ours_lets_a_run_end_after_its_channel_closed_and_the_message_comes_back(
    redis_url: str, prefix: str
) -> None:
    """A step's run that ends after Redis went away acknowledges its message on a closed
    channel: kombu's QoS then raises (the worker stops); ours leaves it to the visibility
    timeout."""
    options = {"global_keyprefix": prefix, "visibility_timeout": 1}
    connection = Connection(redis_url, transport=TRANSPORT, transport_options=options)
    with Connection(redis_url, transport_options=options) as producer:
        producer.SimpleQueue("q-late").put({"step": "s-1"})
    message = connection.SimpleQueue("q-late").get(block=True, timeout=5)
    _tear_down_like_a_lost_broker(connection)
    message.channel.close()
    assert message.channel.connection is None
    with pytest.raises(AttributeError, match="client"):
        redis.QoS.ack(message.channel.qos, message.delivery_tag)  # kombu's own
    message.ack()  # ours: no error
    time.sleep(1.5)  # past the visibility timeout
    with Connection(redis_url, transport=TRANSPORT, transport_options=options) as again:
        again.default_channel.qos.restore_visible(num=10)
        back = again.SimpleQueue("q-late").get(block=True, timeout=5)
        assert back.payload == {"step": "s-1"}
        back.ack()


def test_workers_use_it_on_redis_and_the_folder_transport_when_embedded(tmp_path: Path) -> None:
    redis_app = make_app(BrokerSettings(url="redis://127.0.0.1:6379/0"))
    assert redis_app.conf.broker_transport == TRANSPORT
    embedded = make_app(BrokerSettings(url="embedded", folder=tmp_path / "broker"))
    assert embedded.conf.broker_transport == folder_transport.TRANSPORT
