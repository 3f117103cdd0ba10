"""The dashboard in a real headless Chromium (Debian's, driven by Playwright; nothing is
downloaded): the overview of a fleet of simulated clusters, a rollout updating live as the real
scheduler advances it, an approver's click moving a gated rollout on, a viewer's click refused
by the API with the reason shown. Screenshots of each page go to ``test-artifacts/screenshots``
(or ``$DRIFTWAVE_ARTIFACTS/screenshots``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from agent.server.auth import hash_token
from fleet.api.rbac import AccessControl, Grant
from fleet.gateway import InProcessAgentGateway
from tests.support.fleetsim import FleetHarness
from tests.unit.fleet.api.helpers import STRATEGY, release_doc, serving
from tests.unit.fleet.service.test_waiting import windowed

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).resolve().parents[2]
SHOTS = Path(os.environ.get("DRIFTWAVE_ARTIFACTS", ROOT / "test-artifacts")) / "screenshots"
RINGS = {"canary": ["can-1", "can-2"], "prod": ["prod-1", "prod-2", "prod-3"]}
ROLES = {"vera": "viewer", "otto": "operator", "ada": "approver"}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        message = (
            "Debian's chromium is not installed (.ci/run installs it: apt-get install chromium)"
        )
        if os.environ.get("DRIFTWAVE_REQUIRE_SERVICES"):
            pytest.fail(message)
        pytest.skip(message)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
        )
        yield launched
        launched.close()


def access() -> AccessControl:
    return AccessControl({hash_token(f"{n}-token"): Grant(n, r) for n, r in ROLES.items()})


def signed_in(browser: Browser, url: str, who: str) -> Page:
    page = browser.new_page(viewport={"width": 1360, "height": 900})
    page.goto(f"{url}/ui/")
    page.fill("#token", f"{who}-token")
    page.click("button[type=submit]")
    return page


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def state(harness: FleetHarness, rid: str) -> str:
    with harness.ctx.reading() as uow:
        return str(uow.rollouts.get(rid).state)


def test_the_dashboard_shows_and_drives_a_rollout(tmp_path: Path, browser: Browser) -> None:
    harness = FleetHarness(tmp_path, RINGS, nodes=20)
    gateway = InProcessAgentGateway(harness.agents)
    with serving(harness.ctx, access=access(), gateway=gateway) as url:
        viewer = signed_in(browser, url, "vera")
        expect(viewer.locator("#who")).to_have_text("vera (viewer)")
        expect(viewer.locator("section.fleet h2")).to_have_count(1)
        expect(viewer.locator(".ring[data-ring=prod] .cluster")).to_have_count(3)
        expect(viewer.locator(".cluster[data-cluster=can-1] a")).to_have_text("can-1")

        started = httpx.post(
            f"{url}/v1/rollouts",
            json=release_doc(STRATEGY),
            headers={"Authorization": "Bearer otto-token"},
            timeout=10,
        )
        assert started.status_code == 201, started.text
        rid = started.json()["id"]
        expect(viewer.locator(f"tr[data-rollout='{rid}']")).to_be_visible()
        shot(viewer, "overview")

        viewer.goto(f"{url}/ui/#/rollouts/{rid}")
        heading = viewer.locator("h1 .badge").first
        expect(heading).to_have_attribute("data-state", "planned")
        harness.run_until(lambda: state(harness, rid) != "planned", limit=timedelta(minutes=30))
        expect(heading).not_to_have_attribute("data-state", "planned")  # updated without a reload
        harness.run_until(
            lambda: state(harness, rid) == "awaiting-approval", limit=timedelta(hours=2)
        )
        expect(heading).to_have_attribute("data-state", "awaiting-approval")
        expect(viewer.locator("tr[data-cluster=can-1] .badge").first).to_have_text("verified")

        viewer.once("dialog", lambda dialog: dialog.accept())
        viewer.click("[data-action=approve]")
        expect(viewer.locator("#toast")).to_contain_text("approve refused (403)")
        expect(viewer.locator("#toast")).to_contain_text("this needs the approver role")
        assert state(harness, rid) == "awaiting-approval"
        shot(viewer, "rollout-viewer-refused")

        fleet = httpx.get(
            f"{url}/v1/rollouts/{rid}", headers={"Authorization": "Bearer vera-token"}, timeout=10
        ).json()["fleet"]
        viewer.goto(f"{url}/ui/#/clusters/{fleet}/prod-1")  # watches prod-1 while it is replaced
        expect(viewer.locator("#nodes-chart polyline")).to_have_count(1)
        expect(viewer.locator("#preview")).to_have_count(0)  # nothing drifted yet

        approver = signed_in(browser, url, "ada")
        approver.goto(f"{url}/ui/#/rollouts/{rid}")
        expect(approver.locator("h1 .badge").first).to_have_attribute(
            "data-state", "awaiting-approval"
        )
        approver.once("dialog", lambda dialog: dialog.accept())
        approver.click("[data-action=approve]")
        expect(approver.locator("#toast")).to_contain_text("approved prod")
        harness.run_until(lambda: state(harness, rid) == "succeeded", limit=timedelta(hours=3))
        expect(approver.locator("h1 .badge").first).to_have_attribute("data-state", "succeeded")
        expect(approver.locator("text=prod by ada")).to_be_visible()
        shot(approver, "rollout")

        approver.goto(f"{url}/ui/#/audit/{rid}")
        expect(approver.locator("#audit tr", has_text="rollout.approve")).to_contain_text("ada")
        shot(approver, "audit")
        approver.goto(f"{url}/ui/#/clusters/{fleet}/prod-2")
        expect(approver.locator("h1")).to_have_text("Cluster prod-2")
        expect(approver.locator("#cluster-steps .badge").first).to_have_text("verified")
        expect(viewer.locator("#nodes-chart polyline")).to_have_count(2)  # old and new image
        disruptions = viewer.locator("#disruptions tr", has_text="Disrupted")
        expect(disruptions.first).to_contain_text("Drifted")
        shot(viewer, "cluster")

        viewer.goto(f"{url}/ui/")
        expect(viewer.locator(".cluster[data-cluster=prod-3] .badge")).to_have_text("verified")
        shot(viewer, "overview-after")


def test_a_wrong_token_is_asked_again(browser: Browser, tmp_path: Path) -> None:
    harness = FleetHarness(tmp_path, RINGS, nodes=5)
    with serving(harness.ctx, access=access()) as url:
        page = signed_in(browser, url, "nobody")
        expect(page.locator("#signin-error")).to_have_text("That token is not known to the API.")
        shot(page, "signin")


def test_the_dashboard_shows_waits_warnings_and_a_stopped_scheduler(
    tmp_path: Path, browser: Browser
) -> None:
    harness, rid = windowed(tmp_path, ["can-1", "can-2"], nodes=10)
    harness.step(10)
    harness.step(10)
    with harness.ctx.writing() as uow:
        step = next(s for s in uow.steps.list(rid) if s.cluster.name == "can-2")
        error = "agent of can-2 unreachable for 57 s, retrying (attempt 4)"
        uow.steps.transition(step.id, [step.state], step.state, error=error)
        uow.commit()
    with serving(harness.ctx, access=access()) as url:
        page = signed_in(browser, url, "vera")
        page.goto(f"{url}/ui/#/rollouts/{rid}")
        waiting = "waiting for maintenance window of can-1, opens 22:00 Europe/Berlin (in 11h"
        expect(page.locator("#rollout-waiting")).to_contain_text(waiting)
        row = page.locator("#steps tr[data-cluster=can-1] [data-note=waiting]")
        expect(row).to_contain_text(waiting)
        warning = page.locator("#steps tr[data-cluster=can-2] [data-note=warning]")
        expect(warning).to_have_text(f"warning: {error}")
        expect(page.locator("#heartbeat")).to_be_hidden()
        harness.now += timedelta(seconds=60)
        expect(page.locator("#heartbeat")).to_contain_text(
            "scheduler has not ticked for 60 s (10 intervals of 1 s)"
        )
        shot(page, "rollout-waiting")
