"""``driftwave rollout plan``: text and JSON plans, findings on stderr, exit codes, no effects."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import yaml
from typer.testing import CliRunner

from driftwave.cli.rollout import human, rollout_app
from tests.unit.agent.api.helpers import with_field
from tests.unit.fleet.domain.helpers import fleet, release

EXAMPLES = Path(__file__).resolve().parents[4] / "fleet" / "examples"
FLEET = str(EXAMPLES / "fleet.yaml")
RELEASE = str(EXAMPLES / "release.yaml")
AT = "2026-01-05T09:00:00Z"
runner = CliRunner()


def plan(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(rollout_app, ["plan", *args])
    return result.exit_code, result.stdout, result.stderr


def write(tmp_path: Path, name: str, data: object) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def test_text_plan_of_the_example() -> None:
    code, out, err = plan(RELEASE, "--fleet", FLEET, "--at", AT)
    assert code == 0, err
    assert err == ""
    lines = out.splitlines()
    assert lines[0] == (
        "Release al2023-v20251216 through fleet payments: AMI alias al2023@v20251216 on "
        "EC2NodeClass default"
    )
    assert lines[1].startswith("Planned at 2026-01-05 09:00 UTC; estimated ")
    rings = [line.split(":")[0] for line in lines if line.startswith("Ring ")]
    assert rings == ["Ring canary", "Ring dev", "Ring staging", "Ring prod"]
    assert "Ring dev: not rolled (the release does not list it): pay-dev-use1" in lines
    prod = next(line for line in lines if line.startswith("Ring prod"))
    assert "growing 1, x2, up to 8" in prod
    assert "waits for approval (not counted)" in prod
    assert "  gates: converge within 45m, pending pods <= 5, launch failures <= 2, metric " in out
    assert (
        "    pay-canary-use1 (prod, us-east-1): always open; step expected 2026-01-05 09:00 UTC"
        in lines
    )
    assert "next window 2026-01-05 21:00 UTC" in out  # pay-prod-euc1: 22:00 Berlin
    assert "  pay-prod-batch-use1 (ring prod): labels do not match" in out
    assert "Freezes (no step starts during them):" in out
    assert "Assumptions:" in out


def test_json_plan_of_the_example() -> None:
    code, out, _ = plan(RELEASE, "--fleet", FLEET, "--at", AT, "--json")
    assert code == 0
    body = json.loads(out)
    assert body["release"] == "al2023-v20251216"
    assert [r["name"] for r in body["rings"]] == ["canary", "dev", "staging", "prod"]
    assert [r["rolled"] for r in body["rings"]] == [True, False, True, True]
    prod = body["rings"][3]
    assert [[c["name"] for c in w["clusters"]] for w in prod["waves"]] == [
        ["pay-prod-apse1"],
        ["pay-prod-euc1", "pay-prod-use1"],
        ["pay-prod-usw2"],
    ]
    assert prod["requireApproval"] is True
    assert body["excluded"][0]["name"] == "pay-prod-batch-use1"
    assert body["estimatedSeconds"] == sum(
        r["estimatedSeconds"] for r in body["rings"] if r["rolled"]
    )
    assert body["assumptions"]


def test_kubernetes_release_example_plans() -> None:
    code, out, err = plan(str(EXAMPLES / "release-k8s.yaml"), "--fleet", FLEET, "--at", AT)
    assert code == 0, err
    assert "Kubernetes 1.31" in out
    assert "unreachable clusters are skipped" in out


def test_invalid_release_prints_findings_on_stderr_and_exits_1(tmp_path: Path) -> None:
    bad = with_field(release(), "spec.strategy.rings[0].maxConcurrency", "0%")
    path = write(tmp_path, "release.yaml", bad)
    code, out, err = plan(path, "--fleet", FLEET, "--at", AT)
    assert code == 1
    assert out == ""
    assert (
        f"{path}:1 Release/al2023-v20251216: spec.strategy.rings[0].maxConcurrency: '0%' is out "
        "of range"
    ) in err


def test_findings_of_both_files_are_printed(tmp_path: Path) -> None:
    release_path = write(tmp_path, "r.yaml", with_field(release(), "spec.strategy.rings", []))
    fleet_path = write(tmp_path, "f.yaml", with_field(fleet(), "spec.rings", ["canary"]))
    code, _, err = plan(release_path, "--fleet", fleet_path, "--at", AT)
    assert code == 1
    assert "r.yaml:1 Release/al2023-v20251216: spec.strategy.rings: too few items" in err
    assert "f.yaml:1 Fleet/payments: spec.clusters[1].ring: ring 'prod' is not in" in err


def test_release_that_does_not_fit_the_fleet_exits_1(tmp_path: Path) -> None:
    rings = [{"name": "canary"}, {"name": "qa"}]
    release_path = write(tmp_path, "r.yaml", with_field(release(), "spec.strategy.rings", rings))
    code, out, err = plan(release_path, "--fleet", write(tmp_path, "f.yaml", fleet()), "--at", AT)
    assert code == 1
    assert out == ""
    assert "spec.strategy.rings[1].name: ring 'qa' is not a ring of fleet 'payments'" in err


def test_warnings_go_to_stderr_and_do_not_fail(tmp_path: Path) -> None:
    data = with_field(release(), "spec.strategy.rings[1].soak", "0s")
    release_path = write(tmp_path, "r.yaml", data)
    code, out, err = plan(release_path, "--fleet", write(tmp_path, "f.yaml", fleet()), "--json")
    assert code == 0
    assert "warning: spec.strategy.rings[1].soak: soak is 0s" in err
    assert json.loads(out)["fleet"] == "payments"


def test_plan_changes_nothing(tmp_path: Path) -> None:
    release_path = write(tmp_path, "r.yaml", release())
    fleet_path = write(tmp_path, "f.yaml", fleet())
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    code, _, _ = plan(release_path, "--fleet", fleet_path)
    assert code == 0
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_usage_errors_exit_1(tmp_path: Path) -> None:
    code, _, err = plan(RELEASE, "--fleet", FLEET, "--at", "tomorrow")
    assert code == 1
    assert "--at" in err
    assert "RFC 3339" in err
    code, _, err = plan(RELEASE)
    assert code == 1
    assert "--fleet" in err
    code, _, _ = plan(str(tmp_path / "missing.yaml"), "--fleet", FLEET)
    assert code == 1


def test_bare_group_and_help() -> None:
    bare = runner.invoke(rollout_app, [])
    assert bare.exit_code == 0
    assert "plan" in bare.stdout
    helped = runner.invoke(rollout_app, ["plan", "--help"])
    assert helped.exit_code == 0
    assert "Example: driftwave rollout plan release.yaml --fleet fleet.yaml" in helped.stdout


def test_human_durations() -> None:
    assert human(None) == "unknown"
    assert human(timedelta(0)) == "0s"
    assert human(timedelta(days=1, minutes=30, seconds=5)) == "1d 30m 5s"
