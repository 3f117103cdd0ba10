"""The demo's plain output: one summary table with whole names at any width, and the live view
drawn only on a terminal (piped output holds no other table)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from driftwave.demo.run import _Progress
from driftwave.demo.summary import COLUMNS, print_summary, summary_rows
from tests.unit.driftwave.report_fixtures import LONG, NEW, OLD, result, status


def plain(width: int) -> Console:
    return Console(file=io.StringIO(), width=width, force_terminal=False, color_system=None)


@pytest.mark.parametrize("width", [40, 80, 250])
def test_one_table_with_whole_names_at_any_width(tmp_path: Path, width: int) -> None:
    console = plain(width)
    print_summary(console, result(tmp_path))
    out = console.file.getvalue()  # type: ignore[attr-defined]
    lines = out.splitlines()
    assert "…" not in out
    headers = [line for line in lines if line.startswith("RING")]
    assert len(headers) == 1, "one table"
    assert headers[0].split() == [w for c in COLUMNS for w in c.split()]
    rows = [line for line in lines if line.split()[:1] in (["canary"], ["staging"], ["prod"])]
    assert [r.split()[2] for r in rows] == ["canary-1", LONG, "prod-1", "prod-2"]
    assert f"{OLD} → {NEW}" in rows[1]
    assert f"{OLD} (unchanged)" in rows[2]
    assert rows[1].split()[3] == "converged"
    assert rows[2].split()[3] == "rolled-back"
    assert rows[1].split()[-1] == "19.0s"
    assert rows[3].split()[-1] == "-"
    column = headers[0].index("CLUSTER")
    assert all(r[column:].startswith(r.split()[2]) for r in rows), "cells line up"
    assert "gate of prod wave 1 failed: steps: p1: drift halted" in out
    assert f"{NEW} = al2023@new" in out
    assert f"trace:  {tmp_path / 'traces.jsonl'} (trace id" in out, "the path is not wrapped"


def test_summary_rows_follow_the_waves(tmp_path: Path) -> None:
    rows = summary_rows(result(tmp_path))
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("canary", "1", "canary-1"),
        ("staging", "1", LONG),
        ("prod", "1", "prod-1"),
        ("prod", "2", "prod-2"),
    ]


def test_without_a_terminal_progress_is_lines_not_a_table() -> None:
    console = plain(80)
    running = status() | {"state": "running", "reason": "ring canary starts"}
    with _Progress(console) as progress:
        assert progress.live is None
        progress.update(running)
        progress.update(running)
        progress.update(status())
    lines = console.file.getvalue().splitlines()  # type: ignore[attr-defined]
    assert [line.split("  ", 1)[1] for line in lines] == [
        "running: ring canary starts",
        "rolled-back: rolled back",
    ]


def test_on_a_terminal_the_live_view_leaves_no_table_behind() -> None:
    console = Console(file=io.StringIO(), width=120, force_terminal=True)
    with _Progress(console) as progress:
        assert progress.live is not None
        assert progress.live.transient
