"""The demo's HTML report from a synthetic run: stacked areas that change over the rollout, the
waves and gate marks where their times put them, cost only where it changed, the audit as a
table of readable changes linked to the trace's spans."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from driftwave.demo.plots import TimeAxis
from driftwave.demo.report import cost_section, write_report
from driftwave.demo.report_audit import changes, flatten, reason
from tests.unit.driftwave.report_fixtures import (
    LONG,
    NEW,
    OLD,
    Tables,
    audit,
    result,
    samples,
    svgs,
)

SVG = "{http://www.w3.org/2000/svg}"
POINT = re.compile(r"(-?\d+(?:\.\d+)?),(-?\d+(?:\.\d+)?)")


@pytest.fixture
def page(tmp_path: Path) -> str:
    path = write_report(tmp_path / "report.html", result(tmp_path), audit(), samples())
    return path.read_text(encoding="utf-8")


def area_heights(d: str) -> list[float]:
    points = [(float(x), float(y)) for x, y in POINT.findall(d)]
    half = len(points) // 2
    return [b[1] - t[1] for t, b in zip(points[:half], reversed(points[half:]), strict=True)]


def test_the_fleet_chart_stacks_the_old_release_shrinking_and_the_new_growing(page: str) -> None:
    charts = [s for s in svgs(page) if "nodes" in (s.get("class") or "")]
    assert len(charts) == 4, "the fleet, then each of the three rings"
    fleet = {
        p.get("data-image"): area_heights(p.get("d", "")) for p in charts[0].iter(f"{SVG}path")
    }
    assert set(fleet) == {"al2023@old", "al2023@new"}, "images counted by release"
    old, new = fleet["al2023@old"], fleet["al2023@new"]
    assert old[0] > old[-1] > 0, "the old image shrinks (prod keeps it)"
    assert new[0] == 0 < new[-1], "the new image grows"
    assert len({round(h) for h in old}) >= 4, "intermediate samples, not one step"
    legend = [t.text for t in charts[0].iter(f"{SVG}text")]
    assert f"al2023@old ({OLD})" in legend
    assert f"al2023@new ({NEW})" in legend
    prod = {p.get("data-image"): area_heights(p.get("d", "")) for p in charts[3].iter(f"{SVG}path")}
    assert len(set(prod["al2023@old"])) == 1, "prod was rolled back: its area stays flat"


def test_the_waves_sit_on_the_rollouts_time_axis_with_their_gates(page: str) -> None:
    (gantt,) = [s for s in svgs(page) if "waves" in (s.get("class") or "")]
    axis = TimeAxis(100.0)  # the rollout's 100 s (and the last sample's)
    bars = [r for r in gantt.iter(f"{SVG}rect") if r.get("class") == "wave"]
    spans = [(float(b.get("x", 0)), float(b.get("width", 0))) for b in bars]
    expected = [(0, 20), (20, 50), (50, 80)]
    for (x, width), (start, end) in zip(spans, expected, strict=True):
        assert x == pytest.approx(axis.x(start), abs=0.1)
        assert width == pytest.approx(axis.x(end) - axis.x(start), abs=0.1)
    assert [b.get("data-state") for b in bars] == ["passed", "passed", "failed"]
    marks = [
        (g.get("class"), float(g.find(f"{SVG}circle").get("cx", 0)))  # type: ignore[union-attr]
        for g in gantt.iter(f"{SVG}g")
    ]
    assert [m[0] for m in marks] == ["gate passed", "gate passed", "gate failed"]
    for (_, cx), at in zip(marks, (20, 50, 80), strict=True):
        assert cx == pytest.approx(axis.x(at), abs=0.1)
    soaks = [r for r in gantt.iter(f"{SVG}rect") if r.get("class") == "soak"]
    assert [float(s.get("x", 0)) for s in soaks] == pytest.approx([axis.x(13), axis.x(43)], abs=0.1)
    (rollback,) = [r for r in gantt.iter(f"{SVG}rect") if r.get("class") == "rollback"]
    assert float(rollback.get("x", 0)) == pytest.approx(axis.x(80), abs=0.1)
    assert "not started" in [t.text for t in gantt.iter(f"{SVG}text")], "prod wave 2"


def test_cost_shows_only_the_clusters_whose_cost_changed(page: str) -> None:
    rows = Tables(page).tables["cost"]
    assert rows[0] == ["Cluster", "Before ($/h)", "After ($/h)", "Change ($/h)", "Change (%)"]
    assert rows[1:] == [
        ["canary-1", "2.0000", "2.5000", "+0.5000", "+25.0 %"],
        ["fleet total (4 clusters)", "8.0000", "8.5000", "+0.5000", "+6.2 %"],
    ]
    assert "The other 3 clusters' cost per hour did not change." in page
    assert 'class="cost"' not in page, "no cost bars"


def test_unchanged_cost_is_one_line() -> None:
    clusters = [{"name": f"c{i}", "costBefore": 1.25, "costAfter": 1.25} for i in range(12)]
    html = cost_section(clusters)
    assert "<table" not in html
    assert "did not change on any of the 12 clusters (fleet total $15.00/h)" in html


def test_the_audit_is_a_table_of_readable_changes(page: str) -> None:
    tables = Tables(page)
    rows = tables.tables["audit"]
    header = ["Time (UTC)", "Actor", "Action", "Object", "Reason", "Before → after", "Trace"]
    assert rows[0] == header
    start, transition, apply = rows[1:]
    assert start[:4] == ["10:00:00.000", "demo", "rollout.start", "rollout/ro-test"]
    assert start[5].splitlines() == ["state: planned", "release: al2023-new", "waves: 4"]
    assert transition[4] == "ring staging starts"
    assert transition[5].splitlines() == ["state: gating → running", "ring: canary → staging"]
    assert apply[4] == "window moved for the sale", "the entry's own reason"
    assert apply[5].splitlines() == [
        "windows: schedule=0 2 * * *, duration=2h → none",
        "labels.tier: gold",
    ]
    assert "{'" not in page, "no dict reprs anywhere"
    assert '{"' not in page
    assert start[6] == "rollout.start"
    assert transition[6] == "scheduler.advance"
    assert apply[6] == "ffffffff", "a span not in the trace file: its id, no link"
    assert tables.links["audit"] == ["#span-00f067aa0ba902b7", "#span-b7ad6b7169203331"]
    assert {"span-00f067aa0ba902b7", "span-b7ad6b7169203331"} <= set(tables.row_ids)
    spans = tables.tables["spans"]
    assert spans[1][0].splitlines() == ["rollout.start", "00f067aa0ba902b7"]
    assert spans[1][3] == "4.0 ms"


def test_the_clusters_and_waves_tables_name_everything_whole(page: str) -> None:
    tables = Tables(page)
    clusters = {row[0]: row for row in tables.tables["clusters"][1:]}
    assert clusters[LONG][5] == f"{OLD} (al2023@old) → {NEW} (al2023@new)"
    assert clusters["prod-1"][2] == "rolled-back"
    assert clusters["prod-1"][5] == f"{OLD} (al2023@old) (unchanged)"
    assert clusters["canary-1"][6] == "11.0s"
    waves = tables.tables["waves"]
    assert waves[4][4] == "not started"
    assert waves[3][6] == "✗ steps: p1: drift halted"


def test_changes_and_reasons() -> None:
    entry = {"object": "step/x", "before": {"state": "progressing"},
             "after": {"state": "failed", "note": "drift halted"}}  # fmt: skip
    assert reason(entry) == "drift halted"
    assert changes(entry) == ["state: progressing → failed"]
    assert changes({"object": "o", "before": {"a": 1, "b": 2}, "after": {"a": 1}}) == [
        "b: 2 → removed"
    ]
    assert flatten({"a": {"b": True, "c": [1, 2]}, "d": None}) == {
        "a.b": "true",
        "a.c": "1, 2",
        "d": "none",
    }
