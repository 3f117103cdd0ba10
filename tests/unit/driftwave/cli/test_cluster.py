"""``driftwave cluster history``: every step of one cluster across rollouts, newest first, with
images, nodes, outcome and the whole error; an unknown or ambiguous name exits 1 and says why."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from common.kubemodel import parse_manifest
from driftwave.cli import app
from fleet.domain.fleet import Fleet
from fleet.service.commands.fleets import apply_fleet
from fleet.service.commands.rollouts import start_rollout
from fleet.service.reads.history import ClusterAmbiguous, ClusterUnknown, cluster_history
from tests.support.documents import wire
from tests.support.fleetsim import FleetHarness, fleet_manifest

GOOD, BAD = "v20251216", "v20251118"
RING = [{"name": "canary", "soak": "2m", "gates": {"convergenceTimeout": "10m"}}]


def ended(harness: FleetHarness, rid: str) -> bool:
    with harness.ctx.reading() as uow:
        return uow.rollouts.get(rid).finished_at is not None


def ageless(doc: Any) -> Any:
    """``doc`` without the observations' ages (the CLI reads them by the real clock, the
    harness by its virtual one); everything else must be equal."""
    if isinstance(doc, dict):
        return {k: ageless(v) for k, v in doc.items() if k not in ("ageSeconds", "text")}
    if isinstance(doc, list):
        return [ageless(v) for v in doc]
    return doc


@pytest.fixture
def two_rollouts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[FleetHarness, str, str]:
    """A good image rolled to can-1, then a faulty one rolled back; the CLI reads this database."""
    harness = FleetHarness(tmp_path, {"canary": ["can-1"]}, nodes=5, faulty=(BAD,))
    first = str(start_rollout(harness.ctx, harness.release(RING, release=GOOD), "t").id)
    harness.run_until(lambda: ended(harness, first), limit=timedelta(hours=2))
    second = str(start_rollout(harness.ctx, harness.release(RING, release=BAD), "t").id)
    harness.run_until(lambda: ended(harness, second), limit=timedelta(hours=2))
    monkeypatch.setenv("DRIFTWAVE_DATABASE_URL", f"sqlite:///{tmp_path / 'fleet.db'}")
    return harness, first, second


def test_every_step_of_the_cluster_newest_first(
    two_rollouts: tuple[FleetHarness, str, str],
) -> None:
    harness, first, second = two_rollouts
    found = cluster_history(harness.ctx, "can-1")
    assert (found.cluster, found.fleet) == ("can-1", "demo")
    newest, oldest = found.steps
    assert (newest.rollout, oldest.rollout) == (second, first)
    assert (newest.release, newest.ring, newest.wave) == (f"al2023-{BAD}", "canary", 1)
    assert newest.state in ("failed", "timed-out")
    assert newest.rollback == "rolled-back"
    assert newest.error
    assert oldest.state == "verified"
    assert oldest.image_before != oldest.image_after
    assert newest.image_before == oldest.image_after
    assert oldest.nodes
    assert oldest.nodes_replaced
    # how the cluster stands now, on the fleet's last observation: the rollback's outcome
    # (back on the first rollout's image), never the stored "verified" of the older step
    good = oldest.image_after
    assert newest.now.holding == "rolled-back"
    assert newest.now.message == f"rolled back: 5/5 on {good}"
    assert newest.now.nodes_by_image == {good: 5}
    assert oldest.now.holding == "superseded"
    assert oldest.now.superseded_by == second
    assert found.observed is not None
    assert found.observed.nodes_by_image == {good: 5}
    assert found.observed.text.startswith(f"5/5 on {good} (observed ")

    result = CliRunner().invoke(app, ["cluster", "history", "can-1"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "cluster can-1 of fleet demo: 2 step(s)"
    assert lines[1].startswith(f"now: 5/5 on {good} (observed ")  # its age by the CLI's clock
    assert "on target" not in result.output
    rows = [line.strip() for line in lines if line.strip().startswith("ro-")]
    assert [row.split()[0] for row in rows] == [second, first]
    assert f"{oldest.image_before} → {oldest.image_after}" in rows[1]
    assert rows[0].endswith(newest.error)
    assert rows[0].split()[5:7] == ["rolled-back", "rolled-back"]  # ROLLBACK, then NOW
    assert rows[1].split()[4:6] == ["verified", "superseded"]

    as_json = CliRunner().invoke(app, ["cluster", "history", "can-1", "-o", "json"])
    assert ageless(json.loads(as_json.stdout)) == ageless(wire(found))
    as_yaml = CliRunner().invoke(app, ["cluster", "history", "can-1", "-o", "yaml"])
    assert ageless(yaml.safe_load(as_yaml.stdout)) == ageless(wire(found))
    wide = CliRunner().invoke(
        app, ["cluster", "history", "can-1", "-o", "wide"], env={"COLUMNS": "400"}
    )
    assert "ATTEMPTS" in wide.output
    assert "rolled back: 5/5 on" in wide.output  # the message in full (the image may wrap)
    assert "superseded by" in wide.output
    assert newest.step in wide.output


def test_an_unknown_or_ambiguous_cluster_exits_1_saying_why(
    two_rollouts: tuple[FleetHarness, str, str],
) -> None:
    harness, _, _ = two_rollouts
    unknown = CliRunner().invoke(app, ["cluster", "history", "nope"])
    assert unknown.exit_code == 1
    assert "cluster 'nope' is in no fleet (fleets searched: demo)" in unknown.stderr
    other = fleet_manifest({"canary": ["can-1"]}, name="other")
    apply_fleet(harness.ctx, parse_manifest(Fleet, other), "t")
    with pytest.raises(ClusterAmbiguous, match="in fleets demo, other: name one with --fleet"):
        cluster_history(harness.ctx, "can-1")
    ambiguous = CliRunner().invoke(app, ["cluster", "history", "can-1"])
    assert ambiguous.exit_code == 1
    assert "name one with --fleet" in ambiguous.stderr
    chosen = CliRunner().invoke(app, ["cluster", "history", "can-1", "--fleet", "other", "--json"])
    assert chosen.exit_code == 0, chosen.output
    assert json.loads(chosen.stdout) == {
        "cluster": "can-1",
        "fleet": "other",
        "observed": None,
        "steps": [],
    }
    with pytest.raises(ClusterUnknown, match="fleet 'gone' has not been applied"):
        cluster_history(harness.ctx, "can-1", "gone")
