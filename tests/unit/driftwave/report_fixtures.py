"""A synthetic demo run for the report's tests: a rollout status of three rings, the agents'
statuses before and after, nodes per image sampled over the rollout, its audit trail and a
trace file, and a small HTML table reader."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from driftwave.demo.summary import summary

OLD, NEW = "ami-0old0000000000001", "ami-0new0000000000002"
TRACE = "0af7651916cd43dd8448eb211c80319c"
START = "2026-01-01T10:00:00Z"
LONG = "staging-eu-central-1-payments"


def stamp(seconds: float) -> str:
    """The RFC 3339 time ``seconds`` after :data:`START`."""
    whole, frac = divmod(seconds, 1)
    minutes, secs = divmod(int(whole), 60)
    return f"2026-01-01T10:{minutes:02d}:{secs:02d}.{round(frac * 1e6):06d}Z"


def _check(name: str, passed: bool, message: str) -> dict[str, Any]:
    return {"name": name, "passed": passed, "message": message}


def _wave(index: int, clusters: list[str], state: str, start: float | None, end: float | None,
          soak_until: float | None, passed: bool | None) -> dict[str, Any]:  # fmt: skip
    gate = None
    if passed is not None:
        checks = [_check("steps", passed, "no step failed" if passed else "p1: drift halted")]
        gate = {"passed": passed, "evaluatedAt": stamp(end or 0), "checks": checks}
    return {
        "index": index,
        "clusters": clusters,
        "state": state,
        "startedAt": None if start is None else stamp(start),
        "finishedAt": None if end is None else stamp(end),
        "soakUntil": None if soak_until is None else stamp(soak_until),
        "gate": gate,
    }


def _step(cluster: str, ring: str, state: str, start: float | None, end: float | None,
          rollback: str | None = None) -> dict[str, Any]:  # fmt: skip
    return {
        "cluster": cluster,
        "ring": ring,
        "state": state,
        "rollback": rollback,
        "nodes": 10,
        "nodesReplaced": 10 if state == "verified" else 0,
        "startedAt": None if start is None else stamp(start),
        "finishedAt": None if end is None else stamp(end),
    }


def status() -> dict[str, Any]:
    """A rollout that passed canary and staging and failed its first prod wave (rolled back);
    prod's second wave never started."""
    return {
        "id": "ro-test",
        "state": "rolled-back",
        "release": "al2023-new",
        "reason": "rolled back",
        "startedAt": START,
        "finishedAt": stamp(100),
        "traceId": TRACE,
        "plan": {"rings": [{"name": n, "soakSeconds": 5} for n in ("canary", "staging", "prod")]},
        "rings": [
            {"name": "canary", "waves": [_wave(1, ["canary-1"], "passed", 0, 20, 18, True)]},
            {"name": "staging", "waves": [_wave(1, [LONG], "passed", 20, 50, 48, True)]},
            {
                "name": "prod",
                "waves": [
                    _wave(1, ["prod-1"], "failed", 50, 80, None, False),
                    _wave(2, ["prod-2"], "pending", None, None, None, None),
                ],
            },
        ],
        "clusters": [
            _step("canary-1", "canary", "verified", 1, 12),
            _step(LONG, "staging", "verified", 21, 40),
            _step("prod-1", "prod", "failed", 51, 70, rollback="rolled-back"),
            _step("prod-2", "prod", "pending", None, None),
        ],
    }


def agent(nodes: dict[str, int], cost: float) -> dict[str, Any]:
    """An agent's status: its nodes per image, cost and the node class resolving both AMIs."""
    old_class = {"amiSelectorTerms": [{"alias": "al2023@old"}], "images": [OLD]}
    new_class = {"amiSelectorTerms": [{"alias": "al2023@new"}], "images": [NEW]}
    return {
        "nodes": sum(nodes.values()),
        "nodesByImage": nodes,
        "costPerHour": cost,
        "nodeClasses": [new_class if NEW in nodes else old_class],
    }


def result(tmp_path: Path) -> dict[str, Any]:
    """The summary of the synthetic run (only canary-1's cost changed)."""
    before = {n: agent({OLD: 10}, 2.0) for n in ("canary-1", LONG, "prod-1", "prod-2")}
    after = dict(before)
    after["canary-1"] = agent({NEW: 10}, 2.5)
    after[LONG] = agent({NEW: 10}, 2.0)
    return summary(status(), before, after, trace_file(tmp_path), tmp_path / "report.html")


def samples() -> dict[str, list[tuple[float, dict[str, int]]]]:
    """canary-1 changes between 1 s and 12 s, the staging cluster between 21 s and 40 s."""
    return {
        "canary-1": [(0.0, {OLD: 10}), (1.0, {OLD: 10}), (6.0, {OLD: 5, NEW: 6}),
                     (12.0, {NEW: 10}), (100.0, {NEW: 10})],
        LONG: [(0.0, {OLD: 10}), (21.0, {OLD: 10}), (30.0, {OLD: 4, NEW: 6}), (40.0, {NEW: 10})],
        "prod-1": [(0.0, {OLD: 10}), (100.0, {OLD: 10})],
        "prod-2": [(0.0, {OLD: 10}), (100.0, {OLD: 10})],
    }  # fmt: skip


def audit() -> list[dict[str, Any]]:
    """Three audit entries as :func:`fleet.service.reads.queries.audit_trail` gives them (rings by
    name, waves from 1): a start (no before), a transition with its reason in ``after``, and
    a fleet change with the contact engineer's ``reason`` and nested before/after."""
    return [
        {"id": 1, "at": START, "actor": "demo", "action": "rollout.start",
         "object": "rollout/ro-test", "before": None,
         "after": {"state": "planned", "release": "al2023-new", "waves": 4},
         "traceId": TRACE, "spanId": "00f067aa0ba902b7"},
        {"id": 2, "at": stamp(20), "actor": "scheduler", "action": "rollout.transition",
         "object": "rollout/ro-test", "before": {"state": "gating", "ring": "canary", "wave": 1},
         "after": {"state": "running", "ring": "staging", "wave": 1,
                   "reason": "ring staging starts"},
         "traceId": TRACE, "spanId": "b7ad6b7169203331"},
        {"id": 3, "at": stamp(60), "actor": "ada", "action": "fleet.apply",
         "object": "cluster/demo/prod-1", "reason": "window moved for the sale",
         "before": {"windows": [{"schedule": "0 2 * * *", "duration": "2h"}], "ring": "prod"},
         "after": {"windows": [], "ring": "prod", "labels": {"tier": "gold"}},
         "traceId": TRACE, "spanId": "ffffffffffffffff"},
    ]  # fmt: skip


def trace_file(tmp_path: Path) -> Path:
    """Two of the audit's spans (the third is not in the file), a span of another trace."""
    spans = [
        {"traceId": TRACE, "spanId": "00f067aa0ba902b7", "name": "rollout.start",
         "startTimeUnixNano": 1767261600_000_000_000, "endTimeUnixNano": 1767261600_004_000_000,
         "attributes": {"driftwave.rollout": "ro-test"}, "status": {"code": "STATUS_CODE_UNSET"},
         "resource": {"attributes": {"service.name": "driftwave-demo"}}},
        {"traceId": TRACE, "spanId": "b7ad6b7169203331", "name": "scheduler.advance",
         "startTimeUnixNano": 1767261620_000_000_000, "endTimeUnixNano": 1767261620_020_000_000,
         "attributes": {}, "status": {"code": "STATUS_CODE_OK"}, "resource": {}},
        {"traceId": "1" * 32, "spanId": "ffffffffffffffff", "name": "other trace"},
    ]  # fmt: skip
    path = tmp_path / "traces.jsonl"
    path.write_text("\n".join(json.dumps(s) for s in spans) + "\nnot json\n", encoding="utf-8")
    return path


def svgs(page: str) -> list[ET.Element]:
    """Every inline ``<svg>`` of the page, parsed."""
    return [ET.fromstring(m) for m in re.findall(r"<svg\b.*?</svg>", page, flags=re.S)]


class Tables(HTMLParser):
    """The page's tables by class: each a list of rows, each row a list of cell texts (a
    ``<br>`` inside a cell becomes a newline) and the row's attributes."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.links: dict[str, list[str]] = {}
        self.row_ids: list[str] = []
        self._table: str | None = None
        self._cell: list[str] | None = None
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "table":
            self._table = found.get("class") or ""
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
            if found.get("id"):
                self.row_ids.append(str(found["id"]))
        elif tag in ("td", "th") and self._table is not None:
            self._cell = []
        elif tag == "br" and self._cell is not None:
            self._cell.append("\n")
        elif tag == "a" and self._table is not None:
            self.links.setdefault(self._table, []).append(str(found.get("href")))

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._table = None
        elif tag in ("td", "th") and self._cell is not None and self._table is not None:
            self.tables[self._table][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
