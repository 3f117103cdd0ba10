"""The ``driftwave`` command line: validate, migrate, demo (in-process, through typer)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from driftwave.cli import app
from driftwave.cli.agent_views import budget_wait, render_plan

EXAMPLES = Path(__file__).resolve().parents[4] / "agent" / "examples"
runner = CliRunner()


def test_validate_accepts_the_v1_examples() -> None:
    result = runner.invoke(app, ["validate", str(EXAMPLES / "v1")])
    assert result.exit_code == 0, result.output
    assert "0 error(s)" in result.output
    assert "warning: spec.amiSelectorTerms[0].alias: al2023@latest" in result.output


def test_validate_fails_on_invalid_fixtures_with_exit_1() -> None:
    result = runner.invoke(app, ["validate", str(EXAMPLES / "invalid")])
    assert result.exit_code == 1
    fixtures = len(list((EXAMPLES / "invalid").glob("*.yaml")))
    assert f"{fixtures} error(s)" in result.output


def test_validate_json_lists_findings() -> None:
    target = EXAMPLES / "invalid" / "nodepool-weight-out-of-range.yaml"
    result = runner.invoke(app, ["validate", "--json", str(target)])
    assert result.exit_code == 1
    body = json.loads(result.output)
    assert body["errors"] == 1
    (finding,) = body["findings"]
    assert finding["path"] == "spec.weight"
    assert finding["kind"] == "NodePool"
    assert finding["document"] == 1
    lines = target.read_text().splitlines()
    assert lines[finding["line"] - 1].startswith("apiVersion:")  # the document's first line
    assert finding["line"] > 1


def test_validate_reports_unreadable_yaml(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: NodePool\nspec: [unclosed\n")
    result = runner.invoke(app, ["validate", str(broken)])
    assert result.exit_code == 1
    assert "broken.yaml" in result.output
    assert "not valid YAML" in result.output


def test_validate_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["validate", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 1


def test_validate_warns_on_unknown_kinds_without_failing(tmp_path: Path) -> None:
    manifest = tmp_path / "service.yaml"
    manifest.write_text("apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n")
    result = runner.invoke(app, ["validate", str(manifest)])
    assert result.exit_code == 0
    assert "not a kind driftwave checks" in result.output


def test_migrate_writes_valid_v1_and_reports_changes(tmp_path: Path) -> None:
    out = tmp_path / "v1.yaml"
    source = EXAMPLES / "v1beta1" / "seed-003-before.yaml"
    result = runner.invoke(app, ["migrate", str(source), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "changed" in result.output
    assert "kubelet moved here from NodePool default" in result.output
    check = runner.invoke(app, ["validate", str(out)])
    assert check.exit_code == 0, check.output


def test_migrate_to_stdout_prints_yaml_only_on_stdout() -> None:
    source = EXAMPLES / "v1beta1" / "seed-000-bottlerocket.yaml"
    result = runner.invoke(app, ["migrate", str(source)])
    assert result.exit_code == 0
    assert result.stdout.startswith("# Seed 000")
    assert "changed" not in result.stdout
    assert "changed" in result.stderr


def test_migrate_error_writes_nothing(tmp_path: Path) -> None:
    source = tmp_path / "ubuntu.yaml"
    source.write_text(
        "apiVersion: karpenter.k8s.aws/v1beta1\nkind: EC2NodeClass\nmetadata:\n  name: u\n"
        "spec:\n  amiFamily: Ubuntu\n  role: r\n"
        "  subnetSelectorTerms: [{tags: {a: b}}]\n  securityGroupSelectorTerms: [{tags: {a: b}}]\n"
    )
    out = tmp_path / "out.yaml"
    result = runner.invoke(app, ["migrate", str(source), "-o", str(out)])
    assert result.exit_code == 1
    assert not out.exists()
    assert "Ubuntu" in result.output
    assert "nothing was written" in result.output


def test_migrate_json() -> None:
    source = EXAMPLES / "v1beta1" / "seed-003-before.yaml"
    result = runner.invoke(app, ["migrate", "--json", str(source)])
    assert result.exit_code == 0
    body = json.loads(result.stdout)
    assert body["ok"] is True
    assert body["text"].count("apiVersion: karpenter") == 2
    assert any(c["path"] == "spec.kubelet" for c in body["changes"])


def test_the_agent_walks_through_the_seeds() -> None:
    result = runner.invoke(app, ["agent", "walkthrough"])
    assert result.exit_code == 0, result.output
    assert "seed-003-before.yaml: migrated" in result.output
    assert "m7i.xlarge" in result.output
    assert "done" in result.output


def test_help_teaches_the_commands() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("validate", "migrate", "demo"):
        assert command in result.output


def test_validate_reads_stdin_and_kubectl_lists() -> None:
    listing = (
        "apiVersion: v1\nkind: List\nitems:\n"
        "- apiVersion: karpenter.sh/v1\n  kind: NodePool\n  metadata: {name: ok}\n"
        "  spec:\n    template:\n      spec:\n"
        "        nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: d}\n"
        "        requirements: []\n"
        "- apiVersion: karpenter.sh/v1\n  kind: NodePool\n  metadata: {name: bad}\n"
        "  spec:\n    weight: 0\n    template:\n      spec:\n"
        "        nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: d}\n"
        "        requirements: []\n"
    )
    result = runner.invoke(app, ["validate", "-"], input=listing)
    assert result.exit_code == 1
    # FILE:LINE: the line where the List's item starts, not the number of the document
    assert "<stdin>:12 NodePool/bad: items[1].spec.weight: must be at least 1" in result.output
    assert "<stdin>:4 NodePool/ok: warning: " in result.output
    assert "2 document(s)" in result.output


def test_migrate_to_an_unwritable_place_fails_cleanly(tmp_path: Path) -> None:
    source = EXAMPLES / "v1beta1" / "seed-003-before.yaml"
    target = tmp_path / "missing-dir" / "out.yaml"
    result = runner.invoke(app, ["migrate", str(source), "-o", str(target)])
    assert result.exit_code == 1
    assert "cannot write" in result.stderr
    assert "nothing was written" in result.stderr
    assert not target.parent.exists()


def test_validate_skips_hidden_directories(tmp_path: Path) -> None:
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "bad.yaml").write_text("apiVersion: karpenter.sh/v1\nkind: Nope\n")
    (tmp_path / "ok.yaml").write_text("apiVersion: v1\nkind: Service\nmetadata: {name: s}\n")
    result = runner.invoke(app, ["validate", str(tmp_path)])
    assert result.exit_code == 0
    assert "1 file(s)" in result.output


def test_agent_simulate_json_gives_the_seed_outcome() -> None:
    scenario = EXAMPLES / "scenarios" / "seed-002-layered-constraints.yaml"
    result = runner.invoke(app, ["agent", "simulate", str(scenario), "--json"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert [c["instanceType"] for c in body["nodeClaims"]] == ["r6gd.xlarge"]
    assert body["summary"]["scheduledPods"] == 3


def test_agent_simulate_tables_and_until() -> None:
    scenario = EXAMPLES / "scenarios" / "seed-002-layered-constraints.yaml"
    result = runner.invoke(app, ["agent", "simulate", str(scenario), "--until", "30s"])
    assert result.exit_code == 0, result.output
    assert "simulated 30s" in result.output
    assert "0/0 pods scheduled" in result.output


def test_agent_simulate_bad_input_exits_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: driftwave.io/v1alpha1\nkind: Scenario\nmetadata: {name: b}\nspec: {}\n"
    )
    result = runner.invoke(app, ["agent", "simulate", str(bad)])
    assert result.exit_code == 1
    assert "spec.cluster: required field is missing" in result.stderr
    scenario = EXAMPLES / "scenarios" / "seed-000-inflate.yaml"
    usage = runner.invoke(app, ["agent", "simulate", str(scenario), "--until", "soon"])
    assert usage.exit_code == 1


def test_usage_errors_exit_1_and_bare_groups_show_help_with_exit_0() -> None:
    unknown = runner.invoke(app, ["validate", "--no-such-flag", "x.yaml"])
    assert unknown.exit_code == 1
    assert "No such option" in unknown.output
    assert runner.invoke(app, ["no-such-command"]).exit_code == 1
    for group in ([], ["agent"]):
        shown = runner.invoke(app, group)
        assert shown.exit_code == 0
        assert "Usage:" in shown.output


def test_agent_simulate_takes_a_strategy_and_refuses_an_unknown_one() -> None:
    scenario = EXAMPLES / "scenarios" / "seed-000-inflate.yaml"
    for strategy in ("driftwave", "karpenter"):
        done = runner.invoke(app, ["agent", "simulate", str(scenario), "--strategy", strategy])
        assert done.exit_code == 0, done.output
        assert "2/2 pods scheduled" in done.output
    bad = runner.invoke(app, ["agent", "simulate", str(scenario), "--strategy", "fastest"])
    assert bad.exit_code == 1
    assert "--strategy" in bad.output


def test_the_strategy_reaches_the_provisioner() -> None:
    from agent.sim.scenario_run import build_world, load_scenario

    scenario, objects = load_scenario(EXAMPLES / "scenarios" / "seed-000-inflate.yaml")
    world = build_world(scenario, objects, strategy="karpenter")
    assert world.provisioner.strategy == "karpenter"


def test_agent_plan_previews_drift_without_acting() -> None:
    scenario = EXAMPLES / "scenarios" / "seed-001-budget-hours.yaml"
    result = runner.invoke(app, ["agent", "plan", str(scenario), "--json"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["at"] == "2026-01-05T17:30:00Z"
    assert len(body["drifted"]) == 6
    assert {row["reason"] for row in body["drifted"]} == {"AMIDrift"}
    assert {row["targetImage"] for row in body["drifted"]} == {"ami-0bb22cc33dd44ee55"}
    assert all(row["action"] == "replace" for row in body["drifted"])
    waves = body["waves"]
    assert [len(w["nodes"]) for w in waves] == [1] * 6  # 15% of 6 nodes, rounded up
    assert waves[0]["start"] == "2026-01-06T09:00:00Z"  # after the no-drift window
    assert body["eta"] > waves[-1]["start"]
    # the wave names the budget that holds it back: the fourth, no drift from 17:00 for 16h
    assert [b["path"] for b in waves[0]["waitsFor"]] == ["spec.disruption.budgets[3]"]
    assert waves[0]["waitsFor"][0]["schedule"] == "0 17 * * mon-fri"
    assert waves[0]["waitSeconds"] == 15.5 * 3600
    assert all(w["waitsFor"] == [] and w["waitSeconds"] == 0 for w in waves[1:])
    tables = runner.invoke(app, ["agent", "plan", str(scenario)])
    assert tables.exit_code == 0
    assert "nothing was changed" in tables.output
    console = Console(width=250, record=True)
    render_plan(console, body)
    text = console.export_text()
    assert "in 15h30m (Tue 09:00:00Z)" in text  # not +55800s
    assert (
        "15h30m for budgets[3] (nodes 0, schedule '0 17 * * mon-fri' for 16h, Drifted) to end"
        in text
    )
    assert "done in about 15h35m (by 2026-01-06T09:05:00Z, assuming 50s per replacement)" in text
    assert not re.search(r"\+?[0-9]{3,}s\b", text)  # no duration as a count of seconds


def test_a_wave_the_budgets_hold_names_them_with_their_zone_or_says_never() -> None:
    never = {"budget": 0, "nodes": "0", "schedule": None, "duration": None, "reasons": None}
    assert budget_wait({"startSeconds": None, "waitsFor": [never]}) == (
        "budgets[0] (nodes 0): allows none, and no schedule will change that"
    )
    night = {
        "budget": 2,
        "nodes": "0",
        "schedule": "0 22 * * *",
        "duration": "8h",
        "timeZone": "Europe/Berlin",
        "reasons": None,
    }
    wave = {"startSeconds": 7200.0, "waitSeconds": 5400.0, "waitsFor": [night]}
    assert budget_wait(wave) == (
        "1h30m for budgets[2] (nodes 0, schedule '0 22 * * *' Europe/Berlin for 8h) to end"
    )
    assert budget_wait({"startSeconds": 0.0, "waitsFor": []}) == ""


def test_agent_plan_names_the_do_not_disrupt_blocker() -> None:
    scenario = EXAMPLES / "scenarios" / "do-not-disrupt.yaml"
    body = json.loads(runner.invoke(app, ["agent", "plan", str(scenario), "--json"]).stdout)
    held = [row for row in body["drifted"] if row["action"] == "hold"]
    assert len(held) == 1
    assert held[0]["nodePool"] == "batch"
    assert "karpenter.sh/do-not-disrupt" in held[0]["blocker"]
    # reports: its only pod is do-not-disrupt, so drift deletes the node when its
    # terminationGracePeriod ends and launches no replacement (as simulate does)
    (deleted,) = [row for row in body["drifted"] if row["action"] == "delete"]
    assert deleted["nodePool"] == "reports"
    assert deleted["drainWaitSeconds"] == 1200
    assert "no replacement" in deleted["deleteNote"]
    assert body["etaSeconds"] >= 1200


def test_agent_plan_bad_input_exits_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: driftwave.io/v1alpha1\nkind: Scenario\nmetadata: {name: b}\n"
        "spec: {cluster: {name: c}, start: yesterday}\n"
    )
    result = runner.invoke(app, ["agent", "plan", str(bad)])
    assert result.exit_code == 1
    assert "spec.start" in result.stderr
    assert "RFC 3339" in result.stderr
    missing = runner.invoke(app, ["agent", "plan", str(tmp_path / "nope.yaml")])
    assert missing.exit_code == 1
