"""The real services the distributed mode runs on answer over real connections.

These are the connection checks later integration tests (fleet/db on PostgreSQL, the Celery
broker on Redis) build on; in CI a service that is down fails here first, with a clear reason.
"""

from __future__ import annotations

import psycopg
import pytest
import redis

pytestmark = pytest.mark.integration


def test_postgresql_round_trip(database_url: str) -> None:
    with psycopg.connect(database_url, connect_timeout=5) as conn, conn.cursor() as cur:
        cur.execute("CREATE TEMP TABLE probe (id int PRIMARY KEY, note text)")
        cur.execute("INSERT INTO probe VALUES (%s, %s)", (7, "driftwave"))
        cur.execute("SELECT note FROM probe WHERE id = %s", (7,))
        assert cur.fetchone() == ("driftwave",)
        cur.execute("SHOW server_version_num")
        row = cur.fetchone()
        assert row is not None
        assert int(row[0]) >= 130000, "PostgreSQL 13 or newer is required"


def test_redis_round_trip(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url, socket_connect_timeout=5)
    key = "driftwave:test:probe"
    try:
        client.set(key, "wave-1", ex=30)
        assert client.get(key) == b"wave-1"
        counter = client.incr("driftwave:test:counter")
        assert isinstance(counter, int)
        assert counter >= 1
    finally:
        client.delete(key, "driftwave:test:counter")
