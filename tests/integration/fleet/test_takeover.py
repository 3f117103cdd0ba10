"""A standby scheduler takes over a killed one within 10 s: two real ``driftwave scheduler``
processes on PostgreSQL with the default lease, the holder killed with SIGKILL; the time is
measured from the kill to the standby's first tick as the lease records it (``renewed_at``).
The only real-time wait of the fleet tests, bounded."""

from __future__ import annotations

import socket
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from fleet.db import UnitOfWork, make_engine
from fleet.db.repositories.leases import LeaseState
from fleet.service.scheduling.scheduler import LEASE
from tests.support.procs import processes

pytestmark = pytest.mark.integration
TAKEOVER_LIMIT = 10.0


def test_a_standby_scheduler_takes_over_a_killed_one_within_ten_seconds(
    tmp_path: Path, database_url: str, schema: str
) -> None:
    env = {
        "DRIFTWAVE_DATABASE_URL": database_url,
        "DRIFTWAVE_DATABASE_SCHEMA_NAME": schema,
        "DRIFTWAVE_BROKER_FOLDER": str(tmp_path / "broker"),
    }
    for name in ("INTERVAL", "LEASE_TTL", "STALE_INTERVALS"):
        env[f"DRIFTWAVE_SCHEDULER_{name}"] = {"INTERVAL": "1", "LEASE_TTL": "6"}.get(name, "10")
    engine = make_engine(database_url, schema=schema)

    def lease() -> LeaseState | None:
        with UnitOfWork(engine) as uow:
            return uow.leases.heartbeat(LEASE)

    host = socket.gethostname()
    try:
        with processes(tmp_path, env) as procs:
            assert procs.run("db", "upgrade").returncode == 0
            first = procs.start("first", "scheduler")
            held_by_first = f"{host}:{first.pid}"
            procs.wait_for(
                lambda: (s := lease()) is not None and s.holder == held_by_first,
                "the first scheduler holds the lease",
                60,
            )
            second = procs.start("second", "scheduler")
            held_by_second = f"{host}:{second.pid}"
            procs.wait_for(lambda: "standby" in procs.log("second"), "the second stands by", 60)
            before = lease()
            assert before is not None
            assert before.holder == held_by_first
            procs.kill("first")
            killed = datetime.now(UTC)
            start = time.monotonic()
            procs.wait_for(
                lambda: (s := lease()) is not None and s.holder == held_by_second,
                "the standby takes over",
                TAKEOVER_LIMIT + 5,
            )
            after = lease()
            assert after is not None
            assert after.renewed_at is not None
            assert before.renewed_at is not None
            took = (after.renewed_at - killed).total_seconds()
            since_last_tick = (after.renewed_at - before.renewed_at).total_seconds()
            print(
                f"takeover: {took:.1f} s after the kill ({since_last_tick:.1f} s after the "
                f"killed scheduler's last tick; seen after {time.monotonic() - start:.1f} s)"
            )
            assert took < TAKEOVER_LIMIT
            taken_at = after.renewed_at
            procs.wait_for(
                lambda: (
                    (s := lease()) is not None
                    and s.renewed_at is not None
                    and s.renewed_at > taken_at
                ),
                "the new holder keeps ticking",
                10,
            )
    finally:
        engine.dispose()
