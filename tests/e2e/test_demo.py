"""``driftwave demo`` as a user runs it: real processes (simulated agents on loopback, a Celery
worker on the embedded broker), no server; a small fleet to keep it quick."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.support.e2e import run_demo

SVG = "{http://www.w3.org/2000/svg}"
POINT = re.compile(r"(-?\d+(?:\.\d+)?),(-?\d+(?:\.\d+)?)")
RFC3339_UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
pytestmark = pytest.mark.integration


def demo(tmp_path: Path, *extra: str) -> dict[str, Any]:
    done = run_demo(tmp_path, "--clusters", "5", "--nodes", "40", *extra)
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def spans(path: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line]


def test_the_demo_rolls_the_new_image_through_every_ring(tmp_path: Path) -> None:
    result = demo(tmp_path)
    rollout = result["rollout"]
    assert rollout["state"] == "succeeded"
    assert [r["name"] for r in result["rings"]] == ["canary", "dev", "staging", "prod"]
    for ring in result["rings"]:
        for wave in ring["waves"]:
            assert wave["gate"]["passed"] is True
            assert RFC3339_UTC.match(wave["startedAt"])
            assert RFC3339_UTC.match(wave["finishedAt"])
            assert wave["startedAt"] <= wave["finishedAt"]
    for cluster in result["clusters"]:
        assert cluster["state"] == "converged"
        assert cluster["imageAfter"] != cluster["imageBefore"]
        assert set(cluster["imagesAfter"]).isdisjoint(cluster["imagesBefore"])
        assert cluster["nodesReplaced"] >= cluster["nodes"] > 0
    trace = [s for s in spans(result["traceFile"]) if s["traceId"] == rollout["traceId"]]
    names = {s["name"] for s in trace}
    assert f"rollout {rollout['id']}" in names
    assert {"agent.wave.apply", "agent.nodeclass.patch"} <= names
    assert any(n.startswith("wave prod") for n in names)
    report = Path(result["report"]).read_text()
    assert report.count("<tr>") > len(result["clusters"])
    assert "{'" not in report, "no Python dict reprs (the audit is a table)"
    section = report.split("<body>", 1)[1].split("<h2>Cost per hour</h2>")[0]
    plots = ET.fromstring(f"<div>{section.split('</p>', 1)[1]}</div>")
    svgs = list(plots.iter(f"{SVG}svg"))
    assert len(svgs) == 2 + len(result["rings"]), "the fleet, the waves, then each ring"
    names = set(result["images"].values())
    assert names == {"al2023@v20251202", "al2023@v20251216"}, "images named by release"
    areas = [p for p in plots.iter(f"{SVG}path") if p.get("class") == "area"]
    assert {a.get("data-image") for a in areas} == names
    assert all(len(POINT.findall(a.get("d", ""))) >= 4 for a in areas), "sampled over time"
    assert any(mid_change(svg) for svg in svgs[2:]), "a ring caught while its nodes changed"
    waves = [r for r in svgs[1].iter(f"{SVG}rect") if r.get("class") == "wave"]
    assert len(waves) == sum(len(r["waves"]) for r in result["rings"])
    gates = [g for g in svgs[1].iter(f"{SVG}g") if g.get("class") == "gate passed"]
    assert len(gates) == len(waves)
    assert "Cost per hour did not change on any of the 5 clusters" in report
    assert "http" not in section.replace("http://www.w3.org/2000/svg", ""), "nothing fetched"


def mid_change(svg: ET.Element) -> bool:
    """Whether a ring's chart has a sample where both releases have nodes."""
    heights = {}
    for path in svg.iter(f"{SVG}path"):
        points = [float(y) for _, y in POINT.findall(path.get("d", ""))]
        half = len(points) // 2
        heights[path.get("data-image")] = [
            b - t for t, b in zip(points[:half], reversed(points[half:]), strict=True)
        ]
    if len(heights) != 2:
        return False
    old, new = heights.values()
    return any(o > 0 and n > 0 for o, n in zip(old, new, strict=True))


def test_a_faulty_ami_is_stopped_in_the_first_wave_and_rolled_back(tmp_path: Path) -> None:
    result = demo(tmp_path, "--faulty-ami")
    assert result["rollout"]["state"] == "rolled-back"
    states = {c["name"]: c for c in result["clusters"]}
    assert states["canary-1"]["state"] == "rolled-back"
    assert states["canary-1"]["imageAfter"] == states["canary-1"]["imageBefore"]
    for name, cluster in states.items():
        if name != "canary-1":
            assert cluster["state"] == "untouched", name
            assert cluster["imagesAfter"] == cluster["imagesBefore"]
    canary = result["rings"][0]["waves"][0]
    assert canary["gate"]["passed"] is False
    failed = {c["name"] for c in canary["gate"]["checks"] if c["passed"] is False}
    assert "driftHalts" in failed
