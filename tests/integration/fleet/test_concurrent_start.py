"""Two ``driftwave rollout start`` processes racing on PostgreSQL for the same clusters: the
check (no live rollout holds the clusters) and the insert run under the fleet's row lock, so
exactly one wins and the other is refused, naming the winner, and stores nothing.

The test holds the fleet's row lock itself while both processes start, waits until both are
blocked on it (so their transactions truly overlap), then lets go."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import psycopg
import pytest
import yaml

from tests.support.fleetsim import fleet_manifest, release_manifest
from tests.support.procs import processes

pytestmark = pytest.mark.integration

STRATEGY = [{"name": "canary"}, {"name": "prod"}]
WAITING = (
    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
    "AND query ILIKE %s AND query ILIKE '%%FOR UPDATE%%'"
)


def write(folder: Path, name: str, document: object) -> None:
    (folder / name).write_text(yaml.safe_dump(document))


def test_two_concurrent_starts_on_the_same_clusters_exactly_one_wins(
    tmp_path: Path, database_url: str, schema: str
) -> None:
    fleet_name = f"race{uuid.uuid4().hex[:6]}"
    write(tmp_path, "fleet.yaml", fleet_manifest({"canary": ["c1"], "prod": ["p1"]}, fleet_name))
    for release in ("v20251118", "v20251216"):
        write(tmp_path, f"{release}.yaml", release_manifest(STRATEGY, fleet_name, release))
    env = {
        "DRIFTWAVE_DATABASE_URL": database_url,
        "DRIFTWAVE_DATABASE_SCHEMA_NAME": schema,
        "DRIFTWAVE_EMBEDDED_WRITES": "allow",  # the race is the database's: no API between
    }
    with processes(tmp_path, env) as procs:
        assert procs.run("fleet", "apply", "fleet.yaml").returncode == 0
        with psycopg.connect(database_url) as holder:
            holder.execute(f'SET search_path TO "{schema}"')
            locked = holder.execute(
                "SELECT id FROM fleets WHERE name = %s FOR UPDATE", (fleet_name,)
            ).fetchone()
            assert locked is not None
            racers = {
                release: procs.start(release, "rollout", "start", f"{release}.yaml", "--json")
                for release in ("v20251118", "v20251216")
            }
            deadline = time.monotonic() + 60
            with psycopg.connect(database_url, autocommit=True) as watcher:
                while True:
                    row = watcher.execute(WAITING, ("%FROM fleets%",)).fetchone()
                    if row is not None and row[0] >= 2:
                        break
                    assert time.monotonic() < deadline, "both starts never waited on the lock"
                    assert all(r.poll() is None for r in racers.values()), "a start ended early"
                    time.sleep(0.05)
            holder.commit()
        codes = {release: racer.wait(timeout=60) for release, racer in racers.items()}
    logs = {release: (tmp_path / f"{release}.log").read_text() for release in racers}
    assert sorted(codes.values()) == [0, 1], logs
    (winner,) = [r for r, code in codes.items() if code == 0]
    (loser,) = [r for r, code in codes.items() if code == 1]
    with psycopg.connect(database_url) as reader:
        reader.execute(f'SET search_path TO "{schema}"')
        rollouts = reader.execute(
            "SELECT r.id, rel.name FROM rollouts r JOIN releases rel ON rel.id = r.release_id"
        ).fetchall()
        releases = [name for (name,) in reader.execute("SELECT name FROM releases").fetchall()]
    assert [name for _, name in rollouts] == [f"al2023-{winner}"]
    assert releases == [f"al2023-{winner}"], "the refused start stored no release"
    assert f"held by live rollout {rollouts[0][0]}" in logs[loser]
    assert "c1, p1" in logs[loser]
