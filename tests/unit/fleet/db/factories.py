"""Builders of fleet database test data: cluster and fleet specs, and a seeded rollout.

Shared by the SQLite unit tests and the PostgreSQL integration tests.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine

from fleet.db import AccountSpec, ClusterSpec, FleetSpec, NewWave, UnitOfWork
from fleet.db.records import StepFields
from fleet.db.repositories.clusters import ReportedStatus
from fleet.db.repositories.steps import StepMove

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
RINGS = ("canary", "dev", "prod")


def cluster(name: str, ring: str = "canary", **changes: object) -> ClusterSpec:
    """A cluster spec in account ``main``, region ``us-east-1``."""
    values: dict[str, object] = {
        "name": name,
        "account": "main",
        "region": "us-east-1",
        "ring": ring,
        "agent_endpoint": f"https://{name}.agents.example:9443",
        "credentials_ref": f"env:TOKEN_{name.upper().replace('-', '_')}",
        "labels": {"team": "payments"},
        "maintenance_windows": [{"schedule": "0 22 * * 1-5", "duration": "4h"}],
    }
    values.update(changes)
    return ClusterSpec(**values)  # type: ignore[arg-type]


def fleet_spec(*clusters: ClusterSpec, name: str = "payments") -> FleetSpec:
    """A fleet of ``clusters`` with one account and three rings."""
    return FleetSpec(
        name=name,
        rings=list(RINGS),
        accounts=[
            AccountSpec(
                name="main",
                aws_account_id="123456789012",
                role_arn="arn:aws:iam::123456789012:role/driftwave",
            )
        ],
        clusters=list(clusters),
        freezes=[{"start": "2026-12-20T00:00:00Z", "end": "2027-01-04T00:00:00Z"}],
        manifest={"kind": "Fleet", "metadata": {"name": name}},
    )


STANDARD_CLUSTERS = ("c-canary", "d-dev-1", "d-dev-2", "p-prod")


def four_clusters(fleet: str) -> FleetSpec:
    """The Fleet :func:`seed` and :func:`seed_passed` apply: c-canary, d-dev-1, d-dev-2, p-prod."""
    return fleet_spec(
        cluster("c-canary"),
        cluster("d-dev-1", "dev"),
        cluster("d-dev-2", "dev"),
        cluster("p-prod", "prod"),
        name=fleet,
    )


def seed(
    engine: Engine, rollout_id: str | None = "r1", fleet: str = "payments", release: str = "rel-1"
) -> None:
    """Apply a four-cluster ``fleet``, add ``release`` and (unless None) create a rollout with
    three waves: canary [c-canary], dev [d-dev-1, d-dev-2], prod [p-prod]."""
    with UnitOfWork(engine, write=True) as uow:
        uow.fleets.apply(four_clusters(fleet), NOW)
        uow.releases.add(release, fleet, {"target": {"ami": "al2023@v1"}}, NOW)
        if rollout_id is not None:
            uow.rollouts.create(rollout_id, release, standard_waves(), now=NOW, plan={"rings": 3})
        uow.commit()


def standard_waves() -> list[NewWave]:
    """The three waves of :func:`seed`'s rollout."""
    return [
        NewWave(ring="canary", ring_index=0, index=0, clusters=["c-canary"]),
        NewWave(ring="dev", ring_index=1, index=0, clusters=["d-dev-2", "d-dev-1"]),
        NewWave(ring="prod", ring_index=2, index=0, clusters=["p-prod"]),
    ]


def soak_plan(soak_seconds: int) -> dict[str, object]:
    """A stored plan (as ``Plan.as_dict`` writes it) giving each rolled ring that soak."""
    return {
        "rings": [{"name": ring, "rolled": True, "soakSeconds": soak_seconds} for ring in RINGS]
    }


def seed_passed(engine: Engine, fleet: str, rollouts: dict[str, int]) -> None:
    """Apply ``fleet`` and run one rollout per entry of ``rollouts`` (id: its rings' soak in
    seconds), each created an hour after the one before; its canary and dev waves pass (canary
    in 1m + soak, dev in 2m + soak) and its prod wave fails."""
    with UnitOfWork(engine, write=True) as uow:
        uow.fleets.apply(four_clusters(fleet), NOW)
        for hour, (rid, soak) in enumerate(rollouts.items()):
            start = NOW + timedelta(hours=hour)
            release = f"rel-{rid}"
            uow.releases.add(release, fleet, {"target": {"ami": f"al2023@{rid}"}}, start)
            uow.rollouts.create(rid, release, standard_waves(), now=start, plan=soak_plan(soak))
            canary, dev, prod = uow.waves.list(rid)
            took = {canary.id: timedelta(minutes=1), dev.id: timedelta(minutes=2)}
            at = start
            for wave in (canary, dev):
                end = at + took[wave.id] + timedelta(seconds=soak)
                uow.waves.update(wave, state="passed", started_at=at, finished_at=end)
                at = end
            uow.waves.update(
                prod, state="failed", started_at=at, finished_at=at + timedelta(minutes=3)
            )
        uow.commit()


def check_latest_steps(engine: Engine, first: str, fleet: str, release: str) -> None:
    """Seed rollout ``first`` (its canary and dev-1 verified), then a later rollout of the same
    release (its canary under way, its dev-1 still pending), and check ``steps.latest_of``: the
    canary's latest step is the later rollout's, dev-1's the first's (a pending step has not
    reached its cluster), and clusters no step reached are absent."""
    later = f"{first}-later"
    seed(engine, rollout_id=first, fleet=fleet, release=release)
    with UnitOfWork(engine, write=True) as uow:
        uow.rollouts.create(later, release, standard_waves(), now=NOW + timedelta(minutes=5))
        for step in (f"{first}.0.c-canary", f"{first}.1.d-dev-1"):
            assert uow.steps.transition(step, ["pending"], "verified")
        assert uow.steps.transition(f"{later}.0.c-canary", ["pending"], "progressing")
        uow.commit()
    with UnitOfWork(engine) as uow:
        ids = {c.name: c.id for c in uow.clusters.list(fleet)}
        latest = uow.steps.latest_of(ids.values())
        found = {
            name: (latest[cid][0].id, latest[cid][1].id)
            for name, cid in ids.items()
            if cid in latest
        }
    assert found == {
        "c-canary": (f"{later}.0.c-canary", later),
        "d-dev-1": (f"{first}.1.d-dev-1", first),
    }


def check_moves_together(engine: Engine, rollout: str, fleet: str, release: str) -> None:
    """Seed ``rollout`` and check ``steps.transition_each`` and ``clusters.record_statuses``:
    each move sets its own fields, a column one move sets and another does not is kept by the
    other, explicitly cleared by a move that sets it to None; a step not in its move's state is
    left alone and not counted; statuses are stored, and an older one, or one of a cluster the
    fleet does not have, is not."""
    later = NOW + timedelta(minutes=5)
    canary, dev_1, dev_2 = (f"{rollout}.0.c-canary", f"{rollout}.1.d-dev-1", f"{rollout}.1.d-dev-2")
    seed(engine, rollout_id=rollout, fleet=fleet, release=release)
    with UnitOfWork(engine, write=True) as uow:
        assert uow.steps.transition(canary, ["pending"], "pending", error="kept")
        assert uow.steps.transition(dev_1, ["pending"], "pending", error="to clear")
        assert uow.steps.transition(dev_2, ["pending"], "dispatched")
        uow.commit()
    moves = [
        StepMove(canary, "pending", "dispatched", StepFields(dispatched_at=NOW)),
        StepMove(
            dev_1,
            "pending",
            "dispatched",
            StepFields(dispatched_at=later, error=None, result={"phase": "progressing"}),
        ),
        StepMove(dev_2, "pending", "dispatched", StepFields(dispatched_at=later, error="no")),
    ]
    healthy = {"nodes": 2, "phase": "healthy"}
    with UnitOfWork(engine, write=True) as uow:
        assert uow.steps.transition_each(moves) == 2
        assert uow.steps.transition_each([]) == 0
        reported = [
            ReportedStatus(fleet, "c-canary", healthy, later),
            ReportedStatus(fleet, "d-dev-1", {"nodes": 3}, later),
        ]
        assert uow.clusters.record_statuses(reported) == 2
        older = ReportedStatus(fleet, "c-canary", {"nodes": 9}, NOW)
        assert uow.clusters.record_statuses([older]) == 0
        assert uow.clusters.record_statuses([ReportedStatus(fleet, "absent", {}, later)]) == 0
        uow.commit()
    with UnitOfWork(engine) as uow:
        steps = {sid: uow.steps.get(sid) for sid in (canary, dev_1, dev_2)}
        clusters = {c.name: c for c in uow.clusters.list(fleet)}
    assert [(s.state, s.dispatched_at, s.error) for s in steps.values()] == [
        ("dispatched", NOW, "kept"),
        ("dispatched", later, None),
        ("dispatched", None, None),
    ]
    assert (steps[canary].result, steps[dev_1].result) == (None, {"phase": "progressing"})
    assert clusters["c-canary"].last_seen_at == later
    assert clusters["d-dev-1"].last_seen_at == later
    assert clusters["d-dev-2"].last_seen_at is None
