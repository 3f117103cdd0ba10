"""``driftwave demo`` as a user runs it: real processes (simulated agents on loopback, a Celery
worker on the embedded broker), no server; a small fleet to keep it quick."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

DRIFTWAVE = Path(sys.executable).parent / "driftwave"
RFC3339_UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
pytestmark = pytest.mark.integration


def demo(tmp_path: Path, *extra: str) -> dict[str, Any]:
    done = subprocess.run(
        [
            str(DRIFTWAVE),
            "demo",
            "--clusters",
            "5",
            "--nodes",
            "40",
            "--json",
            "--workdir",
            str(tmp_path / "demo"),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "COLUMNS": "200"},
    )
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
    section = report.split("<body>", 1)[1].split("<h2>Waves</h2>")[0]
    plots = ET.fromstring(f"<div>{section}</div>")
    svgs = list(plots.iter("{http://www.w3.org/2000/svg}svg"))
    assert len(svgs) == len(result["clusters"]) + 2, "waves, a plot per cluster, cost"
    lines = list(plots.iter("{http://www.w3.org/2000/svg}polyline"))
    images = {line.get("data-image") for line in lines}
    for cluster in result["clusters"]:
        assert {cluster["imageBefore"], cluster["imageAfter"]} <= images
    assert all(len(line.get("points", "").split()) >= 2 for line in lines), "sampled over time"
    assert "http" not in section.replace("http://www.w3.org/2000/svg", ""), "nothing fetched"


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
