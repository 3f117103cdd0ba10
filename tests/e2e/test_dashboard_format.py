"""The dashboard's own formatting, evaluated in a real headless Chromium on the page the API
serves: how states rank (a halted rollout needs a person and is worse than one a person
aborted), how replaced nodes are counted against the cluster's nodes (never "40 of 39 nodes
(103%)"), and the nodes-per-image chart, drawn only from its second point."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from tests.support.fleetsim import FleetHarness
from tests.unit.fleet.api.helpers import serving

RINGS = {"canary": ["can-1"], "prod": ["prod-1"]}


@pytest.fixture
def page(browser: Browser, tmp_path: Path) -> Iterator[Page]:
    """The dashboard loaded from an API without tokens (its scripts are what is tested)."""
    harness = FleetHarness(tmp_path, RINGS, nodes=3)
    with serving(harness.ctx, token_hashes=None) as url:
        opened = browser.new_page()
        opened.goto(f"{url}/ui/")
        opened.wait_for_selector("body[data-loaded]")
        yield opened
        opened.close()


def test_halted_ranks_worse_than_aborted(page: Page) -> None:
    ranks = page.evaluate("['halted', 'aborted', 'rolled-back', 'soaking'].map(rankOf)")
    assert ranks == ["danger", "stopped", "undone", "running"]
    # the fleet's header names the worst: halted, whichever came first
    for order in (["aborted", "halted"], ["halted", "aborted"]):
        worst = page.evaluate(
            """(states) => {
                const box = document.createElement("div");
                box.innerHTML = summary(states.map((state) => ({ state })));
                return box.firstChild.dataset.worst;
            }""",
            order,
        )
        assert worst == "halted", order
    # a person stopped it: still worth seeing above a rollout that runs, below a rolled-back one
    assert page.evaluate("worst(['running', 'stopped'])") == "stopped"
    assert page.evaluate("worst(['stopped', 'undone'])") == "undone"


@pytest.mark.parametrize(
    ("step", "shown"),
    [
        ({"nodes": 39, "nodesReplaced": 40}, "40 replaced · 39 nodes now"),
        ({"nodes": 40, "nodesReplaced": 40}, "40 of 40 nodes (100%)"),
        ({"nodes": 40, "nodesReplaced": 38}, "38 of 40 nodes (95%)"),
        ({"nodes": 0, "nodesReplaced": 2}, "2 nodes"),
        ({"nodes": 8, "nodesReplaced": None}, ""),
    ],
    ids=["more-than-the-total", "all", "most", "no-total", "unknown"],
)
def test_replaced_nodes_never_pass_the_total(
    page: Page, step: dict[str, int | None], shown: str
) -> None:
    assert page.evaluate("(step) => replaced(step)", step) == shown
    assert page.evaluate("percent(40, 39)") == "100%"


def test_the_nodes_chart_waits_for_a_second_point(page: Page) -> None:
    one = [{"t": 100, "nodes": {"ami-0aa": 40}}]
    first = page.evaluate("(points) => chart(points)", one)
    assert first.startswith('<p class="muted" id="nodes-collecting">collecting:'), first
    assert "now 40 nodes on ami-0aa" in first
    assert "<svg" not in first
    assert "no node yet" in page.evaluate("chart([])")
    two = [*one, {"t": 160, "nodes": {"ami-0aa": 30, "ami-0bb": 10}}]
    drawn = page.evaluate("(points) => chart(points)", two)
    assert drawn.count("<polyline") == 2, drawn
