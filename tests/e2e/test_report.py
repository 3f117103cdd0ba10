"""The demo's HTML report in a real headless Chromium (Debian's, driven by Playwright): the
report of a real demo run (simulated agents, a Celery worker, the scheduler) and of a synthetic
rolled-back rollout, each looked at as a reader would: charts drawn and visible, the old image
shrinking while the new grows, one bar and gate mark per wave, cost as a line or a table, the
audit as a table whose trace links land on the span. Screenshots go to
``test-artifacts/screenshots/report-*.png`` (or ``$DRIFTWAVE_ARTIFACTS/screenshots``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from driftwave.demo.report import write_report
from tests.support.e2e import run_demo, screenshot
from tests.unit.driftwave.report_fixtures import audit, result, samples

pytestmark = pytest.mark.integration


def opened(browser: Browser, report: Path) -> Page:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(report.as_uri())
    return page


def shot(page: Page, name: str) -> None:
    screenshot(page, name)


def area_height(page: Page, chart: int, image: str, at: float) -> float:
    """The drawn height (CSS pixels) of ``image``'s area in the ``chart``-th nodes chart at
    the fraction ``at`` of its width, read from the rendered geometry."""
    return float(
        page.evaluate(
            """([chart, image, at]) => {
                const svg = document.querySelectorAll('svg.nodes')[chart];
                const path = [...svg.querySelectorAll('path.area')]
                    .find(p => p.dataset.image === image);
                const box = path.getBBox();
                const x = box.x + box.width * at;
                let top = null, bottom = null;
                for (let y = box.y; y <= box.y + box.height; y += 0.5) {
                    if (path.isPointInFill(new DOMPoint(x, y))) {
                        if (top === null) top = y;
                        bottom = y;
                    }
                }
                return top === null ? 0 : bottom - top;
            }""",
            [chart, image, at],
        )
    )


def check_readable(page: Page) -> None:
    """What every report shows: charts that fit the page, the audit as a table, no reprs."""
    body = page.inner_text("body")
    assert "{'" not in body, "no dict reprs"
    assert '{"' not in body, "no JSON objects"
    for svg in page.locator("svg.chart").all():
        expect(svg).to_be_visible()
        box = svg.bounding_box()
        assert box is not None
        assert box["x"] + box["width"] <= 1280, "charts fit the page"
    headers = page.locator("table.audit th").all_inner_texts()
    assert headers == ["Time (UTC)", "Actor", "Action", "Object", "Reason", "Before → after",
                       "Trace"]  # fmt: skip


def test_a_real_demo_report_shows_the_rollout_changing(tmp_path: Path, browser: Browser) -> None:
    done = run_demo(tmp_path, "--clusters", "4", "--nodes", "30", timeout=400)
    assert done.returncode == 0, done.stderr[-3000:]
    summary: dict[str, Any] = json.loads(done.stdout)
    page = opened(browser, Path(summary["report"]))
    expect(page.locator("h1")).to_have_text(f"Rollout {summary['rollout']['id']}: succeeded")
    check_readable(page)
    expect(page.locator("svg.nodes")).to_have_count(1 + len(summary["rings"]))
    old, new = "al2023@v20251202", "al2023@v20251216"
    assert area_height(page, 0, old, 0.0) > 0
    assert area_height(page, 0, new, 0.0) < 2
    assert area_height(page, 0, old, 1.0) < 2
    assert area_height(page, 0, new, 1.0) > 0
    expect(page.locator("svg.waves rect.wave")).to_have_count(4)
    expect(page.locator("svg.waves g.gate.passed")).to_have_count(4)
    expect(page.locator("svg.waves rect.soak")).to_have_count(4)
    xs = [b["x"] for b in (r.bounding_box() for r in page.locator("rect.wave").all()) if b]
    assert xs == sorted(xs), "ring after ring along the time axis"
    assert len(set(xs)) == 4
    expect(page.locator("p.cost-unchanged")).to_contain_text("did not change on any of the 4")
    expect(page.locator("table.audit td", has_text="ring dev starts").first).to_be_visible()
    expect(page.locator("table.audit td.changes", has_text="state: planned → running").first
           ).to_be_visible()  # fmt: skip
    link = page.locator("table.audit a").first
    target = str(link.get_attribute("href"))
    link.click()
    expect(page.locator(target)).to_be_in_viewport()
    shot(page, "report-demo")


def test_a_rolled_back_report_shows_the_failed_gate_rollback_and_cost(
    tmp_path: Path, browser: Browser
) -> None:
    report = write_report(tmp_path / "report.html", result(tmp_path), audit(), samples())
    page = opened(browser, report)
    check_readable(page)
    expect(page.locator("h1")).to_have_text("Rollout ro-test: rolled-back")
    expect(page.locator("svg.waves rect.wave")).to_have_count(3)
    expect(page.locator("svg.waves g.gate.failed")).to_have_count(1)
    expect(page.locator("svg.waves g.gate.failed text")).to_have_text("✗")
    expect(page.locator("svg.waves rect.rollback")).to_be_visible()
    expect(page.locator("svg.waves text", has_text="not started")).to_have_count(1)
    rows = page.locator("table.cost tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("canary-1")
    expect(rows.nth(0)).to_contain_text("+25.0 %")
    expect(page.locator("table.audit td.changes", has_text="labels.tier: gold")).to_be_visible()
    shot(page, "report-rolled-back")
