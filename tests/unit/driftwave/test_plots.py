"""The demo report's SVG plots: well-formed SVG whose marks follow the data."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from driftwave.demo.plots import cost_before_after, nodes_per_image, wave_timeline

SVG = "{http://www.w3.org/2000/svg}"


def test_nodes_per_image_draws_a_line_per_image_through_every_sample() -> None:
    samples = [(0.0, {"ami-old": 4}), (60.0, {"ami-old": 2, "ami-new": 2}), (120.0, {"ami-new": 4})]
    svg = ET.fromstring(nodes_per_image("prod-1", samples, ["ami-old", "ami-new"]))
    lines = {p.get("data-image"): p.get("points", "").split() for p in svg.iter(f"{SVG}polyline")}
    assert set(lines) == {"ami-old", "ami-new"}
    assert len(lines["ami-old"]) == 3
    ys = [float(point.split(",")[1]) for point in lines["ami-new"]]
    assert ys[0] > ys[1] > ys[2], "the new image's count rises (SVG y grows downwards)"


def test_wave_timeline_bars_follow_start_and_end() -> None:
    rings = [
        {"name": "canary", "waves": [{"index": 1, "state": "passed", "clusters": ["c1"],
          "startedAt": "2026-01-01T00:00:00Z", "finishedAt": "2026-01-01T00:10:00Z"}]},
        {"name": "prod", "waves": [{"index": 1, "state": "failed", "clusters": ["p1"],
          "startedAt": "2026-01-01T00:10:00Z", "finishedAt": "2026-01-01T00:30:00Z"}]},
    ]  # fmt: skip
    svg = ET.fromstring(wave_timeline(rings))
    bars = [r for r in svg.iter(f"{SVG}rect") if r.get("class") == "wave"]
    assert len(bars) == 2
    first, second = (float(b.get("width", 0)) for b in bars)
    assert abs(second / first - 2.0) < 0.01, "a wave twice as long draws twice as wide"
    assert float(bars[1].get("x", 0)) > float(bars[0].get("x", 0))
    assert bars[1].get("fill") == "#cf222e"


def test_cost_bars_scale_with_the_price() -> None:
    svg = ET.fromstring(cost_before_after([("c1", 2.0, 1.0), ("c2", 4.0, 4.0)]))
    widths = [float(r.get("width", 0)) for r in svg.iter(f"{SVG}rect")]
    assert widths[0] == widths[1] * 2
    assert widths[2] == widths[3] == max(widths)
