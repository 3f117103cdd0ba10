"""``driftwave rollout plan`` learns a wave's time from the fleet's finished waves: before any
wave finished it says what it assumed; after a rollout ran (the real scheduler, step runner and
simulated agents of the in-process harness, on the SQLite file the command reads) its estimate
is the median of those waves' real durations less their soak, plus the release's soaks, and a
new rollout's ETA says the same. A plan from files where there is no database yet creates
none."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from driftwave.cli.rollout import rollout_app
from fleet.domain.fields import parse_time
from fleet.domain.pace import median
from fleet.domain.waits import span
from fleet.gateway import InProcessAgentGateway
from fleet.service.commands import rollouts
from fleet.service.contact.probes import ContactProber
from fleet.service.reads.queries import rollout_status
from tests.support.fleetsim import FleetHarness, fleet_manifest, release_manifest

RINGS = [{"name": "canary", "soak": "2m"}, {"name": "prod", "soak": "5m"}]
SOAKS = {"canary": timedelta(minutes=2), "prod": timedelta(minutes=5)}
runner = CliRunner()


def plan_json(release: Path) -> dict[str, Any]:
    result = runner.invoke(rollout_app, ["plan", str(release), "-o", "json"])
    assert result.exit_code == 0, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def test_the_plan_learns_from_the_waves_that_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    harness = FleetHarness(tmp_path, {"canary": ["can-1"], "prod": ["prod-1"]}, nodes=5)
    monkeypatch.setenv("DRIFTWAVE_DATABASE_URL", f"sqlite:///{tmp_path / 'fleet.db'}")
    release_file = tmp_path / "release.yaml"
    release_file.write_text(yaml.safe_dump(release_manifest(RINGS)))

    before = plan_json(release_file)
    assert before["estimatedSeconds"] == 2 * 15 * 60 + 7 * 60  # half of 30m, twice, and soaks
    assert before["estimateBasis"] == (
        "2 wave(s); no wave has finished on this fleet yet: each wave assumed to take half its "
        "ring's convergenceTimeout (canary 15m, prod 15m) in real time: no cluster of rings "
        "canary and prod has been observed yet; soaks 7m as the release says; excludes approvals"
    )
    assert [t["source"] for t in before["waveTimes"]] == ["assumed", "assumed"]

    rid = rollouts.start_rollout(harness.ctx, harness.release(RINGS), "t").id
    harness.run_until(
        lambda: rollout_status(harness.ctx, rid).state == "succeeded",
        limit=timedelta(hours=2),
    )
    waves = [w for r in rollout_status(harness.ctx, rid).rings for w in r.waves]
    durations = [
        parse_time(str(w.finished_at)) - parse_time(str(w.started_at)) - SOAKS[ring]
        for w, ring in zip(waves, ("canary", "prod"), strict=True)
    ]
    active = median(durations)
    assert timedelta(0) < active < timedelta(minutes=15)  # the simulation's, not the timeout's

    after = plan_json(release_file)
    learnt = {"activeSeconds": round(active.total_seconds(), 1), "source": "fleet", "samples": 2}
    assert after["waveTimes"] == [{"ring": "canary", **learnt}, {"ring": "prod", **learnt}]
    assert after["estimatedSeconds"] == int((2 * active + timedelta(minutes=7)).total_seconds())
    basis = (
        f"2 wave(s); {span(active, seconds_too=True)} per wave: the median of the fleet's last 2 "
        "finished waves, each less its soak; soaks 7m as the release says; excludes approvals"
    )
    assert after["estimateBasis"] == basis
    text = runner.invoke(rollout_app, ["plan", str(release_file)])
    assert text.exit_code == 0, text.stderr
    assert f"Estimated from: {basis}" in text.stdout.splitlines()

    again = rollouts.start_rollout(harness.ctx, harness.release(RINGS), "t").id
    status = rollout_status(harness.ctx, again)
    assert status.plan is not None
    assert status.plan["estimateBasis"] == basis  # the plan stored at start learnt too
    progress = status.progress
    assert progress.eta_seconds == (2 * active + timedelta(minutes=7)).total_seconds()
    assert progress.eta_basis == basis.replace("2 wave(s);", "2 wave(s) left;")


def test_the_first_plan_counts_the_assumption_on_simulated_clusters_clocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    harness = FleetHarness(tmp_path, {"canary": ["can-1"], "prod": ["prod-1"]}, speed=600)
    monkeypatch.setenv("DRIFTWAVE_DATABASE_URL", f"sqlite:///{tmp_path / 'fleet.db'}")
    release_file = tmp_path / "release.yaml"
    release_file.write_text(yaml.safe_dump(release_manifest(RINGS)))
    unobserved = plan_json(release_file)  # before the scheduler's first contact probe
    assert unobserved["estimatedSeconds"] == 2 * 15 * 60 + 7 * 60
    assert (
        "in real time: no cluster of rings canary and prod has been observed yet"
        in (unobserved["estimateBasis"])
    )

    assert harness.scheduler.tick().probed == 2  # the scheduler queues the contact probes
    prober = ContactProber(harness.ctx, InProcessAgentGateway(harness.agents))
    assert sorted(prober.probe(harness.broker.probes[0]).reached) == ["can-1", "prod-1"]
    observed = plan_json(release_file)
    assumed = {"activeSeconds": 1.5, "source": "assumed", "samples": 0}
    assert observed["waveTimes"] == [
        {"ring": ring, **assumed, "clock": "simulated", "speed": 600.0}
        for ring in ("canary", "prod")
    ]
    assert observed["estimatedSeconds"] == 3 + 7 * 60  # 15m simulated at 600x, twice; soaks
    basis = (
        "2 wave(s); no wave has finished on this fleet yet: each wave assumed to take half its "
        "ring's convergenceTimeout (canary 15m, prod 15m) of simulated time on its clusters' "
        "clocks, which their last status (seen at 2026-11-02T09:00:00Z or later) says run "
        "simulated at 600x: canary 1.5s, prod 1.5s when the machine keeps up; soaks 7m as the "
        "release says; excludes approvals"
    )
    assert observed["estimateBasis"] == basis
    text = runner.invoke(rollout_app, ["plan", str(release_file)])
    assert text.exit_code == 0, text.stderr
    assert "estimated 7m 3s" in text.stdout
    assert f"Estimated from: {basis}" in text.stdout.splitlines()

    rid = rollouts.start_rollout(harness.ctx, harness.release(RINGS), "t").id
    status = rollout_status(harness.ctx, rid)
    assert status.plan is not None
    assert status.plan["estimateBasis"] == basis  # the plan stored at start: the same
    assert status.progress.eta_seconds == 3 + 7 * 60  # and the running rollout's ETA
    assert status.progress.eta_basis == basis.replace("2 wave(s);", "2 wave(s) left;")


def test_a_plan_from_files_creates_no_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    database = tmp_path / "state" / "fleet.db"
    monkeypatch.setenv("DRIFTWAVE_DATABASE_URL", f"sqlite:///{database}")
    fleet_file = tmp_path / "fleet.yaml"
    fleet_file.write_text(yaml.safe_dump(fleet_manifest({"canary": ["can-1"], "prod": ["p-1"]})))
    release_file = tmp_path / "release.yaml"
    release_file.write_text(yaml.safe_dump(release_manifest(RINGS)))
    result = runner.invoke(
        rollout_app, ["plan", str(release_file), "--fleet", str(fleet_file), "-o", "json"]
    )
    assert result.exit_code == 0, result.stderr
    assert "no wave has finished on this fleet yet" in json.loads(result.stdout)["estimateBasis"]
    assert not database.exists()
    assert not database.parent.exists()
