"""``-o table|wide|json|yaml`` on the fleet and rollout commands: JSON and YAML carry the same
data, ``--json`` is ``-o json``, ``wide`` adds columns, a bad format or a conflict exits 1
naming the option, nothing is stored on a usage error. Against a real embedded database."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from driftwave.cli.fleet import fleet_app, windows_text
from driftwave.cli.output import stamp
from driftwave.cli.rollout import rollout_app
from driftwave.cli.rollout_ops import audit_reason
from fleet.documents.audit import AuditEntry

EXAMPLES = Path(__file__).resolve().parents[4] / "fleet" / "examples"
FLEET = str(EXAMPLES / "fleet.yaml")
RELEASE = str(EXAMPLES / "release.yaml")
WIDE = {"COLUMNS": "400"}
runner = CliRunner()


def invoke(app: Any, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env=WIDE)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def rollout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The example fleet applied to an embedded database, its release started, paused and
    resumed (so the audit holds several entries); the rollout's id."""
    monkeypatch.setenv("DRIFTWAVE_DATABASE_URL", f"sqlite:///{tmp_path / 'fleet.db'}")
    code, _, err = invoke(fleet_app, "apply", FLEET)
    assert code == 0, err
    code, out, err = invoke(rollout_app, "start", RELEASE, "-o", "json")
    assert code == 0, err
    rid = str(json.loads(out)["id"])
    for verb in ("pause", "resume"):
        assert invoke(rollout_app, verb, rid)[0] == 0
    return rid


def steady(data: Any) -> Any:
    """``data`` without the seconds counted from the wall clock (``rollout status``'s ETA and
    next event), which change between two runs of a command."""
    if isinstance(data, dict):
        return {k: None if k in CLOCKED else steady(v) for k, v in data.items()}
    if isinstance(data, list):
        return [steady(v) for v in data]
    return data


CLOCKED = {"etaSeconds", "inSeconds", "eta", "at"}


def formats(app: Any, *args: str) -> Any:
    """The command's data from ``-o json``; checks ``-o yaml`` and ``--json`` give the same."""
    code, as_json, err = invoke(app, *args, "-o", "json")
    assert code == 0, err
    data = json.loads(as_json)
    code, as_yaml, err = invoke(app, *args, "-o", "yaml")
    assert code == 0, err
    assert not as_yaml.lstrip().startswith(("{", "[")), "YAML in block style, not JSON"
    assert steady(yaml.safe_load(as_yaml)) == steady(data)
    code, alias, _ = invoke(app, *args, "--json")
    assert code == 0
    assert steady(json.loads(alias)) == steady(data)
    code, both, _ = invoke(app, *args, "--json", "--output", "json")
    assert code == 0
    assert steady(json.loads(both)) == steady(data)
    return data


READS = [
    (fleet_app, ("list",)),
    (fleet_app, ("list", "--fleet", "payments")),
    (rollout_app, ("list",)),
    (rollout_app, ("list", "--active")),
    (rollout_app, ("status", "{rid}")),
    (rollout_app, ("audit", "{rid}")),
    (rollout_app, ("plan", RELEASE, "--at", "2026-01-05T09:00:00Z")),
]
IDS = [f"{'fleet' if app is fleet_app else 'rollout'} {args[0]} {len(args)}" for app, args in READS]


@pytest.mark.parametrize(("app", "args"), READS, ids=IDS)
def test_json_and_yaml_are_the_same_data_and_json_is_an_alias(
    rollout: str, app: Any, args: tuple[str, ...]
) -> None:
    data = formats(app, *(a.format(rid=rollout) for a in args))
    assert data, "the command printed its data"


@pytest.mark.parametrize(("app", "args"), READS, ids=IDS)
def test_a_bad_format_or_a_conflict_exits_1_naming_the_option(
    rollout: str, app: Any, args: tuple[str, ...]
) -> None:
    real = [a.format(rid=rollout) for a in args]
    code, out, err = invoke(app, *real, "-o", "nope")
    assert code == 1
    assert out == ""
    assert "--output" in err
    for allowed in ("table", "wide", "json", "yaml"):
        assert allowed in err
    code, out, err = invoke(app, *real, "--json", "-o", "yaml")
    assert code == 1
    assert out == ""
    assert "--json" in err
    assert "-o/--output yaml" in err


@pytest.mark.usefixtures("rollout")
def test_fleet_list_wide_adds_labels_contact_and_health() -> None:
    code, table, _ = invoke(fleet_app, "list")
    assert code == 0
    code, wide, _ = invoke(fleet_app, "list", "-o", "wide")
    assert code == 0
    head, wide_head = table.splitlines()[0].split(), wide.splitlines()[0].split()
    assert head == ["FLEET", "CLUSTER", "RING", "ACCOUNT", "REGION", "AGENT", "WINDOWS"]
    assert wide_head == [*head, "LABELS", "LAST", "CONTACT", "HEALTH"]
    canary = next(line for line in wide.splitlines() if "pay-canary-use1" in line)
    assert "team=payments, tier=web" in canary
    assert "always open" in canary
    assert "unknown: never contacted" in canary  # contract B's contact, not reached yet
    assert "team=payments" not in table
    assert "never contacted" not in table
    clusters = json.loads(invoke(fleet_app, "list", "-o", "json")[1])
    assert len(wide.splitlines()) == len(clusters) + 1


@pytest.mark.usefixtures("rollout")
def test_fleet_list_writes_the_windows_out_rings_in_promotion_order() -> None:
    lines = invoke(fleet_app, "list")[1].splitlines()[1:]
    euc1 = next(line for line in lines if "pay-prod-euc1" in line)
    assert euc1.rstrip().endswith("0 22 * * 1-5 for 4h (Europe/Berlin)")
    rings = [line.split()[2] for line in lines]
    assert rings == sorted(rings, key=["canary", "dev", "staging", "prod"].index)


def test_fleet_list_writes_the_windows_out() -> None:
    windows = [
        {"schedule": "0 22 * * *", "duration": "4h", "timeZone": "Europe/Berlin"},
        {"schedule": "0 3 * * 6", "duration": "2h", "timeZone": None},
    ]
    cluster = {"windows": 2, "maintenanceWindows": windows}
    assert windows_text(cluster) == "0 22 * * * for 4h (Europe/Berlin); 0 3 * * 6 for 2h (UTC)"
    assert windows_text({"windows": 0, "maintenanceWindows": []}) == "always open"
    assert windows_text({"windows": 0}) == "always open"
    assert windows_text({"windows": 1}) == "1 window(s)"  # the count alone, before contract B


def test_fleet_apply_prints_the_same_result_in_every_format(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DRIFTWAVE_DATABASE_URL", f"sqlite:///{tmp_path / 'fleet.db'}")
    code, out, _ = invoke(fleet_app, "apply", FLEET, "-o", "yaml")
    assert code == 0
    first = yaml.safe_load(out)
    assert first["fleet"] == "payments"
    assert "pay-canary-use1" in first["added"]
    assert first["unchanged"] is False
    again = json.loads(invoke(fleet_app, "apply", FLEET, "--json")[1])
    assert (again["unchanged"], again["added"]) == (True, [])
    assert invoke(fleet_app, "apply", FLEET)[1].startswith("fleet/payments unchanged")


def test_a_usage_error_stores_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DRIFTWAVE_DATABASE_URL", f"sqlite:///{tmp_path / 'fleet.db'}")
    assert invoke(fleet_app, "apply", FLEET, "--json", "-o", "table")[0] == 1
    assert not (tmp_path / "fleet.db").exists()
    assert invoke(fleet_app, "apply", FLEET)[0] == 0
    assert invoke(rollout_app, "start", RELEASE, "-o", "nope")[0] == 1
    assert json.loads(invoke(rollout_app, "list", "--json")[1]) == []


def test_rollout_commands_print_their_result_in_every_format(rollout: str) -> None:
    paused = yaml.safe_load(invoke(rollout_app, "pause", rollout, "-o", "yaml")[1])
    assert (paused["id"], paused["paused"]) == (rollout, True)
    resumed = json.loads(invoke(rollout_app, "resume", rollout, "--json")[1])
    assert resumed["paused"] is False
    code, out, _ = invoke(rollout_app, "abort", rollout)
    assert code == 0
    assert out.startswith(f"rollout {rollout}: aborted (state aborted)")


@pytest.mark.usefixtures("rollout")
def test_rollout_list_wide_adds_the_reason() -> None:
    table = invoke(rollout_app, "list")[1].splitlines()
    wide = invoke(rollout_app, "list", "-o", "wide")[1].splitlines()
    assert table[0].split() == ["ID", "RELEASE", "FLEET", "STATE", "STEPS", "CREATED"]
    assert wide[0].split() == [*table[0].split(), "FINISHED", "REASON"]
    (row,) = json.loads(invoke(rollout_app, "list", "--json")[1])
    assert row["reason"] in wide[1]
    assert row["reason"] not in table[1]


def test_rollout_audit_shows_whole_values_and_the_reason(rollout: str) -> None:
    entries = json.loads(invoke(rollout_app, "audit", rollout, "--json")[1])
    assert [e["action"] for e in entries] == ["rollout.start", "rollout.pause", "rollout.resume"]
    code, table, _ = invoke(rollout_app, "audit", rollout)
    assert code == 0
    assert table.splitlines()[0].split() == [
        "TIME", "ACTOR", "ACTION", "OBJECT", "CHANGE", "REASON"
    ]  # fmt: skip
    start = entries[0]
    assert f"state=planned, release={start['after']['release']}" in table
    assert "paused=false → paused=true, state=planned" in table
    code, wide, _ = invoke(rollout_app, "audit", rollout, "-o", "wide")
    assert wide.splitlines()[0].split() == [
        "TIME", "ACTOR", "ACTION", "OBJECT", "BEFORE", "AFTER", "REASON", "TRACE", "SPAN"
    ]  # fmt: skip
    (first, *_) = cells(wide)
    assert (first["TRACE"], first["SPAN"]) == (start["traceId"], start["spanId"])  # whole ids
    assert start["spanId"] not in table


def test_rollout_audit_wraps_long_values_instead_of_cutting_them(
    rollout: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fleet.service.reads.queries as queries

    note = " ".join(f"word{n}" for n in range(60))  # 5x longer than the old 80-character cut
    entry = AuditEntry.model_validate(
        {
            "id": 1,
            "at": "2026-01-05T09:00:00Z",
            "actor": "ada",
            "action": "fleet.apply",
            "object": "cluster/pay-prod-euc1",
            "before": {"windows": [{"schedule": "0 22 * * *", "duration": "4h"}]},
            "after": {"windows": [], "note": note},
            "reason": "maintenance window removed mid-rollout: " + note,
            "traceId": "a" * 32,
            "spanId": "b" * 16,
        }
    )
    monkeypatch.setattr(queries, "audit_trail", lambda *_: [entry])
    result = runner.invoke(rollout_app, ["audit", rollout], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    words = re.findall(r"\bword\d+\b", result.stdout)
    assert sorted(set(words)) == sorted(f"word{n}" for n in range(60)), "a word was cut"
    assert len(words) == 120  # each word whole, in the after and in the reason
    flat = " ".join(result.stdout.split())
    assert '"duration":' in flat
    assert "mid-rollout:" in flat
    assert "…" not in result.stdout


def test_a_window_removed_mid_rollout_shows_in_its_audit_with_the_reason(
    rollout: str, tmp_path: Path
) -> None:
    manifest = yaml.safe_load(Path(FLEET).read_text())
    (euc1,) = [c for c in manifest["spec"]["clusters"] if c["name"] == "pay-prod-euc1"]
    del euc1["maintenanceWindows"]
    changed = tmp_path / "fleet.yaml"
    changed.write_text(yaml.safe_dump(manifest, sort_keys=False))
    why = "CHG-1234: window removed mid-rollout"
    assert invoke(fleet_app, "apply", str(changed), "--reason", why)[0] == 0
    code, table, _ = invoke(rollout_app, "audit", rollout)
    assert code == 0
    (row,) = [r for r in cells(table) if r["ACTION"] == "fleet.changed"]
    assert row["OBJECT"] == "cluster/payments/pay-prod-euc1"
    assert row["REASON"] == why
    before = '"schedule": "0 22 * * 1-5", "duration": "4h", "timeZone": "Europe/Berlin"'
    assert row["CHANGE"] == f"maintenanceWindows=[{{{before}}}] → maintenanceWindows=[]"
    wide = invoke(rollout_app, "audit", rollout, "-o", "wide")[1]
    (row,) = [r for r in cells(wide) if r["ACTION"] == "fleet.changed"]
    assert (row["BEFORE"], row["AFTER"]) == (
        f"maintenanceWindows=[{{{before}}}]",
        "maintenanceWindows=[]",
    )
    assert row["REASON"] == why


def cells(table: str) -> list[dict[str, str]]:
    """A printed table's rows as {header: whole cell}, a cell wrapped over lines joined again
    (headers are one word each)."""
    header, *lines = table.splitlines()
    starts = [m.start() for m in re.finditer(r"\S+", header)]
    names = header.split()
    bounds = list(zip(starts, [*starts[1:], None], strict=True))
    rows: list[dict[str, str]] = []
    for line in lines:
        parts = [line[a:b].strip() for a, b in bounds]
        if parts[0]:
            rows.append(dict(zip(names, parts, strict=True)))
            continue
        for name, part in zip(names, parts, strict=True):
            if part:
                rows[-1][name] = f"{rows[-1][name]} {part}".strip()
    return rows


def test_the_audit_reason_is_the_entry_s_or_else_the_after_s() -> None:
    assert audit_reason({"reason": "gate failed", "after": {"reason": "x"}}) == "gate failed"
    assert audit_reason({"after": {"reason": "operator asked"}}) == "operator asked"
    assert audit_reason({"reason": None, "after": None}) == "-"


def test_tables_show_times_as_people_read_them_and_json_keeps_rfc3339(rollout: str) -> None:
    entries = json.loads(invoke(rollout_app, "audit", rollout, "--json")[1])
    at = datetime.fromisoformat(entries[0]["at"].replace("Z", "+00:00"))
    assert entries[0]["at"].endswith("Z"), "the JSON keeps RFC 3339"
    shown = at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    (first, *_) = cells(invoke(rollout_app, "audit", rollout)[1])
    assert first["TIME"] == shown
    (row,) = cells(invoke(rollout_app, "list")[1])
    (listed,) = json.loads(invoke(rollout_app, "list", "--json")[1])
    created = datetime.fromisoformat(listed["createdAt"].replace("Z", "+00:00"))
    assert row["CREATED"] == created.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("2026-01-05T21:00:07.123456Z", "2026-01-05 21:00:07 UTC"),
        ("2026-01-05T22:00:07+01:00", "2026-01-05 21:00:07 UTC"),
        ("2026-01-05T21:00:07", "2026-01-05 21:00:07 UTC"),
        (None, "-"),
        ("", "-"),
        ("soon", "soon"),
    ],
)
def test_stamp(given: str | None, shown: str) -> None:
    assert stamp(given) == shown
