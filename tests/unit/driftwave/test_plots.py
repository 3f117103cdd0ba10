"""The demo report's SVG charts: well-formed SVG whose marks follow the data (stacked areas whose
heights change with the counts, wave bars and gate marks at their times on the shared axis)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from driftwave.demo.plots import TimeAxis, WaveBar, nice_step, stacked_areas, wave_gantt
from driftwave.demo.report_series import by_name, combine, image_order

SVG = "{http://www.w3.org/2000/svg}"
POINT = re.compile(r"(-?\d+(?:\.\d+)?),(-?\d+(?:\.\d+)?)")


def heights(path: ET.Element) -> list[tuple[float, float]]:
    """(x, height) at each sample of an area path: its upper edge runs forward, its lower edge
    back, so point i and point n-1-i share an x."""
    points = [(float(x), float(y)) for x, y in POINT.findall(path.get("d", ""))]
    half = len(points) // 2
    upper, lower = points[:half], list(reversed(points[half:]))
    assert [x for x, _ in upper] == [x for x, _ in lower]
    return [(x, round(bottom - top, 1)) for (x, top), (_, bottom) in zip(upper, lower, strict=True)]


def test_stacked_areas_grow_and_shrink_with_the_counts() -> None:
    series = [
        (0.0, {"old": 10}),
        (30.0, {"old": 6, "new": 4}),
        (60.0, {"new": 10}),
    ]
    axis = TimeAxis(60.0)
    svg = ET.fromstring(stacked_areas("fleet", series, ["old", "new"], axis, {"new": "ami-1"}))
    areas = {p.get("data-image"): heights(p) for p in svg.iter(f"{SVG}path")}
    assert set(areas) == {"old", "new"}
    old, new = [h for _, h in areas["old"]], [h for _, h in areas["new"]]
    assert old[0] > old[1] > old[2] == 0, "the old image shrinks to nothing"
    assert new[0] == 0 < new[1] < new[2], "the new image grows"
    assert old[0] == new[2], "all nodes on one image draw the same height either way"
    assert abs(old[1] / new[1] - 1.5) < 0.01, "heights are proportional to node counts"
    xs = [x for x, _ in areas["old"]]
    assert xs == [axis.x(0), axis.x(30), axis.x(60)], "one point per sample, at its time"
    texts = [t.text for t in svg.iter(f"{SVG}text")]
    assert "nodes" in texts
    assert "time since the rollout started (seconds)" in texts
    assert "new (ami-1)" in texts, "the legend names each image"


def test_stacked_areas_stack_the_second_image_on_the_first() -> None:
    svg = ET.fromstring(
        stacked_areas("x", [(0.0, {"a": 2, "b": 2}), (10.0, {"a": 2, "b": 2})], ["a", "b"],
                      TimeAxis(10.0))
    )  # fmt: skip
    paths = {p.get("data-image"): p.get("d", "") for p in svg.iter(f"{SVG}path")}
    tops_a = [float(y) for _, y in POINT.findall(paths["a"])][:2]
    bottoms_b = [float(y) for _, y in POINT.findall(paths["b"])][2:]
    assert tops_a == bottoms_b, "b's lower edge is a's upper edge"


def test_the_time_axis_reads_minutes_for_long_rollouts() -> None:
    assert not TimeAxis(120).minutes
    svg = ET.fromstring(stacked_areas("x", [(0.0, {"a": 1}), (900.0, {"a": 1})], ["a"],
                                      TimeAxis(900.0)))  # fmt: skip
    texts = [t.text for t in svg.iter(f"{SVG}text")]
    assert "time since the rollout started (minutes)" in texts
    assert {"0", "2", "14"} <= set(texts), "ticks every 2 minutes"
    assert not any("." in (t or "") for t in texts if t and t[0].isdigit()), "whole nodes"


@pytest.mark.parametrize(("span", "ticks", "step"), [(60, 8, 10), (52.3, 8, 10), (1000, 4, 300)])
def test_nice_step(span: float, ticks: int, step: float) -> None:
    assert nice_step(span, ticks) == step


def test_wave_gantt_places_bars_soak_and_gate_marks_at_their_times() -> None:
    axis = TimeAxis(100.0)
    bars = [
        WaveBar("canary · wave 1", ["c1"], "passed", 0.0, 20.0, soak=(12.0, 18.0), gate_at=20.0,
                gate_passed=True),
        WaveBar("prod · wave 1", ["p1", "p2"], "failed", 30.0, 70.0, gate_at=70.0,
                gate_passed=False, rollback_end=90.0),
        WaveBar("prod · wave 2", ["p3"], "pending", None, None),
    ]  # fmt: skip
    svg = ET.fromstring(wave_gantt(bars, axis))
    waves = [r for r in svg.iter(f"{SVG}rect") if r.get("class") == "wave"]
    assert len(waves) == 2, "a wave that never started draws no bar"
    first, second = waves
    assert float(first.get("x", 0)) == pytest.approx(axis.x(0), abs=0.1)
    assert float(first.get("width", 0)) == pytest.approx(axis.x(20) - axis.x(0), abs=0.1)
    assert float(second.get("x", 0)) == pytest.approx(axis.x(30), abs=0.1)
    assert float(second.get("width", 0)) == pytest.approx(axis.x(70) - axis.x(30), abs=0.1)
    assert first.get("fill") == "#1a7f37"
    assert second.get("fill") == "#cf222e"
    (soak,) = [r for r in svg.iter(f"{SVG}rect") if r.get("class") == "soak"]
    assert float(soak.get("x", 0)) == pytest.approx(axis.x(12), abs=0.1)
    assert float(soak.get("width", 0)) == pytest.approx(axis.x(18) - axis.x(12), abs=0.1)
    (rollback,) = [r for r in svg.iter(f"{SVG}rect") if r.get("class") == "rollback"]
    assert float(rollback.get("x", 0)) == pytest.approx(axis.x(70), abs=0.1)
    gates = {g.get("class"): g for g in svg.iter(f"{SVG}g")}
    passed, failed = gates["gate passed"], gates["gate failed"]
    assert float(passed.find(f"{SVG}circle").get("cx", 0)) == pytest.approx(axis.x(20), abs=0.1)  # type: ignore[union-attr]
    assert float(failed.find(f"{SVG}circle").get("cx", 0)) == pytest.approx(axis.x(70), abs=0.1)  # type: ignore[union-attr]
    assert passed.find(f"{SVG}text").text == "✓"  # type: ignore[union-attr]
    assert failed.find(f"{SVG}text").text == "✗"  # type: ignore[union-attr]
    texts = [t.text for t in svg.iter(f"{SVG}text")]
    assert "not started" in texts
    assert {"canary · wave 1", "prod · wave 1", "prod · wave 2"} <= set(texts)


def test_a_failed_rollback_is_drawn_apart_from_a_rollback() -> None:
    axis = TimeAxis(10.0)
    done = WaveBar("a", ["c"], "failed", 0.0, 4.0, rollback_end=8.0)
    failed = WaveBar("b", ["d"], "failed", 0.0, 4.0, rollback_end=8.0, rollback_failed=True)
    svg = ET.fromstring(wave_gantt([done, failed], axis))
    rollbacks = [r for r in svg.iter(f"{SVG}rect") if r.get("class") == "rollback"]
    assert [r.find(f"{SVG}title").text for r in rollbacks] == ["rolled back", "rollback failed"]  # type: ignore[union-attr]
    assert rollbacks[0].get("fill") != rollbacks[1].get("fill")
    assert float(rollbacks[0].get("width", 0)) == pytest.approx(axis.x(8) - axis.x(4), abs=0.1)


def test_combine_carries_each_clusters_latest_sample_forward() -> None:
    samples = {
        "a": [(0.0, {"old": 5}), (10.0, {"old": 2, "new": 3}), (12.0, {"new": 5})],
        "b": [(0.0, {"old": 4}), (20.0, {"new": 4})],
    }
    assert combine(samples, ["a", "b"]) == [
        (0.0, {"old": 9}),
        (10.0, {"old": 6, "new": 3}),
        (12.0, {"old": 4, "new": 5}),
        (20.0, {"new": 9}),
    ]
    assert combine(samples, ["b", "missing"]) == [(0.0, {"old": 4}), (20.0, {"new": 4})]


def test_images_are_grouped_by_release_and_ordered_by_appearance() -> None:
    samples = {"a": [(0.0, {"ami-2": 3, "ami-1": 1}), (5.0, {"ami-9": 4})]}
    named = by_name(samples, {"ami-1": "al2023@old", "ami-2": "al2023@old"})
    assert named == {"a": [(0.0, {"al2023@old": 4}), (5.0, {"ami-9": 4})]}
    assert image_order(named["a"]) == ["al2023@old", "ami-9"]
