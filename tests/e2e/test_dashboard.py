"""The dashboard in a real headless Chromium (Debian's, driven by Playwright; nothing is
downloaded): a rollout updating live as the real scheduler advances it, with its soak counting
down and its ETA; a viewer offered no Approve but told who may approve, an approver's click
moving the gated rollout on; the overview of a four-ring fleet in promotion order with every
rollout that matters (two halted beside a succeeded one), colours ranking danger, each
cluster's agent health and last contact; a halted rollout offering no Approve; units on every
number; audit trails with reason and before → after, and the Fleet's own changes (a maintenance
window removed). Screenshots go to ``test-artifacts/screenshots/dashboard-*.png`` (or
``$DRIFTWAVE_ARTIFACTS/screenshots``)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from common.auth import hash_token
from fleet.api.rbac import AccessControl, Grant
from fleet.gateway import InProcessAgentGateway
from fleet.service.commands.rollouts import rollback, start_rollout
from tests.support.dashboardsim import (
    PROMOTION,
    add_window,
    contact_all,
    fleet_doc,
    four_rings,
    history,
    seconds_in,
)
from tests.support.e2e import screenshot
from tests.support.fleetsim import FleetHarness
from tests.unit.fleet.api.helpers import STRATEGY, release_doc, serving
from tests.unit.fleet.service.test_waiting import windowed

RINGS = {"canary": ["can-1", "can-2"], "prod": ["prod-1", "prod-2", "prod-3"]}
ROLES = {"vera": "viewer", "otto": "operator", "ada": "approver", "root": "admin"}
# the text colour of each danger rank (style.css): danger, waiting, undone, running, done
RED, AMBER, UNDONE, BLUE, GREEN = (
    "rgb(207, 34, 46)",
    "rgb(154, 103, 0)",
    "rgb(188, 76, 0)",
    "rgb(9, 105, 218)",
    "rgb(26, 127, 55)",
)
HEALTH = ("healthy", "degraded", "unreachable", "stale", "unknown")
AGO = re.compile(r"^(just now|\d+[dhms0-9 ]* ago)$")


def access() -> AccessControl:
    return AccessControl({hash_token(f"{n}-token"): Grant(n, r) for n, r in ROLES.items()})


def signing_in(browser: Browser, url: str, who: str) -> Page:
    """A new page with ``WHO-token`` typed into the sign-in form and sent."""
    page = browser.new_page(viewport={"width": 1360, "height": 900})
    page.goto(f"{url}/ui/")
    page.fill("#token", f"{who}-token")
    page.click("button[type=submit]")
    return page


def signed_in(browser: Browser, url: str, who: str) -> Page:
    """A page signed in as ``who`` (the API accepted the token: the header names them)."""
    page = signing_in(browser, url, who)
    expect(page.locator("#who")).to_have_text(f"{who} ({ROLES[who]})")
    return page


def shot(page: Page, what: str) -> None:
    screenshot(page, f"dashboard-{what}")


def state(harness: FleetHarness, rid: str) -> str:
    with harness.ctx.reading() as uow:
        return str(uow.rollouts.get(rid).state)


def colour(locator: Locator) -> str:
    """The computed text colour of the (first) element."""
    return str(locator.first.evaluate("e => getComputedStyle(e).color"))


def counts_down(countdown: Locator) -> tuple[int, int]:
    """The seconds a countdown shows, read twice 1.5 s apart (it ticks in the browser)."""
    expect(countdown).to_contain_text(re.compile(r"in \d"))
    first = seconds_in(countdown.inner_text())
    countdown.page.wait_for_timeout(1500)
    return first, seconds_in(countdown.inner_text())


def test_the_dashboard_shows_and_drives_a_rollout(tmp_path: Path, browser: Browser) -> None:
    harness = FleetHarness(tmp_path, RINGS, nodes=8)
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

        viewer.goto(f"{url}/ui/#/rollouts/{rid}")
        heading = viewer.locator("h1 .badge").first
        expect(heading).to_have_attribute("data-state", "planned")
        harness.run_until(lambda: state(harness, rid) == "soaking", limit=timedelta(minutes=30))
        expect(heading).to_have_attribute("data-state", "soaking")  # updated without a reload
        expect(viewer.locator("#position")).to_have_text("ring canary (1 of 2) · wave 1 of 2")
        soak = viewer.locator("#view .next").first
        expect(soak).to_contain_text("soak")
        first, second = counts_down(soak.locator(".countdown"))
        assert 0 < second < first <= 120, (first, second)  # the time left of a 2m soak
        expect(viewer.locator("#view .eta").first).to_contain_text(re.compile(r"ETA done in \d"))
        # the next event and the ETA each on a line of their own, never run together
        # (measured in one script run: the view is redrawn every 2 s)
        nxt, eta = viewer.evaluate(
            """() => ["#view .next", "#view .eta"].map((s) => {
                const box = document.querySelector(s).getBoundingClientRect();
                return { top: box.top, bottom: box.bottom, height: box.height };
            })"""
        )
        assert nxt["height"] > 0
        assert eta["height"] > 0
        assert eta["top"] >= nxt["bottom"] - 0.5, (nxt, eta)
        shot(viewer, "countdown")

        harness.run_until(
            lambda: state(harness, rid) == "awaiting-approval", limit=timedelta(hours=2)
        )
        expect(heading).to_have_attribute("data-state", "awaiting-approval")
        expect(heading).to_have_attribute("data-rank", "waiting")
        assert colour(heading) == AMBER
        expect(viewer.locator("tr[data-cluster=can-1] .badge").first).to_have_text("verified")
        # a viewer is offered no Approve, and told who may approve
        expect(viewer.locator("#actions button")).to_have_count(0)
        expect(viewer.locator("#no-actions")).to_have_text(
            "no action you (vera, a viewer) may take now"
        )
        denied = viewer.locator("[data-denied=approve]")
        expect(denied).to_contain_text("approve of ring prod needs an approver or higher: ada")
        expect(viewer.locator("[data-denied=pause]")).to_contain_text(
            "pause needs an operator or higher: otto, ada, root"
        )
        # units: gate checks as observed / threshold with their units, nodes and %
        checks = viewer.locator("table.checks").first
        convergence = checks.locator("tr[data-check=convergence]")
        expect(convergence).to_contain_text("time to converge")
        expect(convergence.locator(".measure")).to_have_text(re.compile(r"^\d\S* s? ?/ 30m00s$"))
        expect(checks.locator("tr[data-check=pendingPods] .measure")).to_have_text(
            "0 pods / 0 pods"
        )
        canary = viewer.locator("#steps tr[data-cluster=can-1]")
        expect(canary).to_contain_text("canary · wave 1")
        expect(canary).to_contain_text(re.compile(r"8 nodes.*\d+ of 8 nodes \(\d+%\)"))
        assert "5.299767" not in viewer.locator("#view").inner_text()
        shot(viewer, "viewer-who-may")

        fleet = httpx.get(
            f"{url}/v1/rollouts/{rid}", headers={"Authorization": "Bearer vera-token"}, timeout=10
        ).json()["fleet"]
        viewer.goto(f"{url}/ui/#/clusters/{fleet}/prod-1")  # watches prod-1 while it is replaced
        # one report draws no line: the page says it is collecting, and what the agent says now
        expect(viewer.locator("#nodes-collecting")).to_have_text(
            re.compile(
                r"^collecting: the chart starts at the agent's second report "
                r"\(now 8 nodes on ami-\w+\)$"
            )
        )
        expect(viewer.locator("#nodes-chart")).to_have_count(0)
        expect(viewer.locator("#preview")).to_have_count(0)  # nothing drifted yet
        expect(viewer.locator("#agent-status")).to_contain_text(
            re.compile(r"8 nodes .* \$\d+\.\d\d/h")
        )

        approver = signed_in(browser, url, "ada")
        approver.goto(f"{url}/ui/#/rollouts/{rid}")
        expect(approver.locator("h1 .badge").first).to_have_attribute(
            "data-state", "awaiting-approval"
        )
        expect(approver.locator("[data-denied=approve]")).to_have_count(0)
        approver.once("dialog", lambda dialog: dialog.accept())
        approver.click("[data-action=approve]")
        expect(approver.locator("#toast")).to_contain_text("approved prod")
        harness.run_until(
            lambda: harness.agents["prod-1"].status().drifted > 0, limit=timedelta(hours=1)
        )
        expect(viewer.locator("#preview")).to_be_visible()  # prod-1 drifted: what drift would do
        honest = r"^(no replacement left to start|no ETA from the agent|done in .* cluster's clock)"
        expect(viewer.locator("#preview-eta")).to_have_text(re.compile(honest))
        # the agent's preview with an ETA: said to be on the cluster's clock, not the wall's
        label = viewer.evaluate(
            """async (path) => {
                const agent = await api("GET", path);
                return previewEta({...agent.preview, replace: 3, etaSeconds: 750,
                                   eta: "2026-01-01T00:30:00Z"});
            }""",
            f"/v1/fleets/{fleet}/clusters/prod-1/agent",
        )
        assert "done in 12m30s of the cluster's clock (by 2026-01-01 00:30:00 UTC on it" in label
        shot(viewer, "cluster-preview")
        harness.run_until(lambda: state(harness, rid) == "succeeded", limit=timedelta(hours=3))
        expect(approver.locator("h1 .badge").first).to_have_attribute("data-state", "succeeded")
        expect(approver.locator("text=prod by ada")).to_be_visible()
        expect(approver.locator("#actions [data-action=approve]")).to_have_count(0)
        shot(approver, "rollout")

        approver.goto(f"{url}/ui/#/audit/{rid}")
        approval = approver.locator("#audit tr[data-action='rollout.approve']")
        expect(approval).to_contain_text("ada")
        approver.goto(f"{url}/ui/#/clusters/{fleet}/prod-2")
        expect(approver.locator("h1")).to_have_text("Cluster prod-2")
        expect(approver.locator("#cluster-steps .badge").first).to_have_text("verified")
        expect(viewer.locator("#nodes-chart polyline")).to_have_count(2)  # old and new image
        disruptions = viewer.locator("#disruptions tr", has_text="Disrupted")
        expect(disruptions.first).to_contain_text("Drifted")
        shot(viewer, "cluster")

        viewer.goto(f"{url}/ui/")
        expect(viewer.locator(".cluster[data-cluster=prod-3] .badge").first).to_have_text(
            "verified"
        )
        shot(viewer, "overview-after")


def test_the_overview_ranks_the_rollouts_that_matter_and_the_audit_shows_changes(
    tmp_path: Path, browser: Browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    harness = four_rings(tmp_path)
    ids = history(harness)
    add_window(harness)
    contact_all(harness)
    gateway = InProcessAgentGateway(harness.agents)
    monkeypatch.setenv("DRIFTWAVE_TRACE_URL", "http://jaeger.test:16686/trace/{traceId}")
    with serving(harness.ctx, access=access(), gateway=gateway) as url:
        page = signed_in(browser, url, "vera")
        fleet = page.locator("section.fleet[data-fleet=demo]")
        expect(fleet.locator(".ring")).to_have_count(4)
        rings = fleet.locator(".ring").evaluate_all("els => els.map(e => e.dataset.ring)")
        assert rings == PROMOTION  # not alphabetical, not the order the clusters came in

        # every rollout that matters, not only the latest: two halted beside the succeeded one
        for key, wanted, rank, hue in (
            ("halted1", "halted", "danger", RED),
            ("halted2", "halted", "danger", RED),
            ("succeeded", "succeeded", "done", GREEN),
            ("rolledback", "rolled-back", "undone", UNDONE),
            ("live", "soaking", "running", BLUE),
        ):
            row = fleet.locator(f"tr[data-rollout='{ids[key]}']")
            expect(row).to_have_attribute("data-rank", rank)
            status = row.locator(".badge").first
            expect(status).to_have_attribute("data-state", wanted)
            assert colour(status) == hue, (key, colour(status))
        worst = fleet.locator("h2 .summary")
        expect(worst).to_have_attribute("data-worst", "halted")
        expect(worst).to_contain_text("2 halted · 1 rolled-back")
        assert colour(worst) == RED

        # each cluster's agent health and last contact (the exact time in the title)
        for name in ("can-1", "dev-1", "stg-1", "prod-1"):
            contact = fleet.locator(f".cluster[data-cluster={name}] .contact")
            expect(contact.locator(".badge")).to_have_attribute(
                "data-state", re.compile("|".join(HEALTH))
            )
            last = contact.locator("time")
            expect(last).to_have_text(AGO)
            expect(last).to_have_attribute(
                "title", re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$")
            )
        healthy = fleet.locator(".contact .badge[data-state=healthy]").first
        assert colour(healthy) == GREEN

        # the live rollout: where, why, the soak's time left ticking, the ETA
        live = fleet.locator(f"tr[data-rollout='{ids['live']}']")
        expect(live).to_contain_text("ring prod (1 of 1) · wave 1 of 1")
        first, second = counts_down(live.locator(".next .countdown"))
        assert 0 < second < first <= 1800, (first, second)
        expect(live.locator(".eta")).to_contain_text(re.compile(r"ETA done in \d"))
        shot(page, "overview")

        # a halted rollout offers no Approve (nor any green button), even to an approver
        approver = signed_in(browser, url, "ada")
        approver.goto(f"{url}/ui/#/rollouts/{ids['halted1']}")
        expect(approver.locator("h1 .badge").first).to_have_attribute("data-state", "halted")
        expect(approver.locator("[data-action=approve]")).to_have_count(0)
        expect(approver.locator("#actions button.primary")).to_have_count(0)
        expect(approver.locator("#rollout-reason")).not_to_be_empty()
        failed = approver.locator("table.checks tr[data-check=steps]")
        expect(failed).to_contain_text("failed steps")
        expect(failed.locator(".measure")).to_have_text("1 cluster / 0 clusters")
        shot(approver, "halted")

        # the rollout's audit: reason and before -> after of what changed
        approver.goto(f"{url}/ui/#/audit/{ids['halted1']}")
        halted = approver.locator(
            "#audit tr[data-action='rollout.transition']", has_text="halted"
        ).first
        expect(halted.locator("li[data-key=state] ins")).to_have_text("halted")
        expect(halted.locator(".reason")).to_have_text(re.compile(r"[a-z]{3,} [a-z]{2,}"))
        trace = halted.locator("[data-trace]")
        trace_id = str(trace.get_attribute("data-trace"))
        assert re.fullmatch(r"[0-9a-f]{32}", trace_id), trace_id
        expect(halted.locator("button[data-copy]")).to_have_attribute("data-copy", trace_id)
        expect(halted.locator("a.trace")).to_have_attribute(
            "href", f"http://jaeger.test:16686/trace/{trace_id}"
        )
        shot(approver, "audit")

        # the Fleet's own changes: stg-1's maintenance window removed, by whom and why
        removed = httpx.put(
            f"{url}/v1/fleets/demo",
            params={"reason": "the window blocked the hotfix"},
            json=fleet_doc(window=False),
            headers={"Authorization": "Bearer root-token"},
            timeout=10,
        )
        assert removed.status_code == 200, removed.text
        page.click("a.fleet-audit")
        expect(page.locator("h1")).to_have_text("Changes to fleet demo")
        change = page.locator("#audit tr", has_text="stg-1").filter(has_text="root").first
        windows = change.locator("li[data-key*=indows]").first
        expect(windows.locator("del")).to_contain_text("0 22 * * *")
        expect(windows.locator("ins")).to_have_text("none")
        expect(change.locator(".reason")).to_have_text("the window blocked the hotfix")
        shot(page, "fleet-audit")


def test_with_tokens_a_wrong_token_is_refused_at_sign_in(browser: Browser, tmp_path: Path) -> None:
    harness = FleetHarness(tmp_path, RINGS, nodes=5)
    with serving(harness.ctx, access=access()) as url:
        page = signing_in(browser, url, "nobody")
        expect(page.locator("#signin-error")).to_have_text(
            "That token is not known to the API (HTTP 401): nothing was signed in. "
            "Check the token, or ask an admin of this API for one."
        )
        # refused before it was kept: no token in the tab, nothing shown, no one signed in
        assert page.evaluate("sessionStorage.getItem('driftwave.token')") is None
        expect(page.locator("#who")).to_have_text("")
        expect(page.locator("section.fleet")).to_have_count(0)
        expect(page.locator("#auth")).to_be_hidden()
        shot(page, "signin")
        # the right token, typed into the same form, is accepted with its own role
        page.fill("#token", "vera-token")
        page.click("button[type=submit]")
        expect(page.locator("#who")).to_have_text("vera (viewer)")
        expect(page.locator("section.fleet h2")).to_have_count(1)
        assert page.evaluate("sessionStorage.getItem('driftwave.token')") == "vera-token"


def test_without_tokens_the_dashboard_says_so_and_asks_for_none(
    browser: Browser, tmp_path: Path
) -> None:
    harness = FleetHarness(tmp_path, RINGS, nodes=5)
    with serving(harness.ctx, token_hashes=None) as url:
        page = browser.new_page(viewport={"width": 1360, "height": 900})
        page.goto(f"{url}/ui/")
        banner = page.locator("#auth")
        expect(banner).to_be_visible()
        expect(banner).to_contain_text(
            "This API runs without authentication, on a loopback address only: "
            "anyone who can reach it acts as admin."
        )
        expect(page.locator("#who")).to_have_text("unauthenticated (admin)")
        expect(page.locator(".ring[data-ring=prod] .cluster")).to_have_count(3)
        expect(page.locator("#token")).to_have_count(0)
        expect(page.locator("#signout")).to_be_hidden()
        shot(page, "unauthenticated")


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


def test_after_a_rollback_the_overview_and_cluster_page_show_what_the_cluster_runs(
    tmp_path: Path, browser: Browser
) -> None:
    harness = FleetHarness(tmp_path, {"canary": ["can-1"]}, nodes=6)
    harness.now = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=2)
    (old,) = harness.agents["can-1"].status().nodes_by_image
    ring = [{"name": "canary", "soak": "1m"}]
    rid = str(start_rollout(harness.ctx, harness.release(ring), "otto").id)
    harness.run_until(lambda: state(harness, rid) == "succeeded", limit=timedelta(hours=1))
    (new,) = harness.agents["can-1"].status().nodes_by_image
    with serving(harness.ctx, access=access()) as url:
        page = signed_in(browser, url, "vera")
        card = page.locator(".cluster[data-cluster=can-1]")
        expect(card.locator(".now")).to_have_attribute("data-holding", "on-target")
        expect(card.locator(".now")).to_contain_text(f"on target: 6/6 on {new}")

        rollback(harness.ctx, rid, "otto")
        harness.run_until(lambda: state(harness, rid) == "rolled-back", limit=timedelta(hours=1))
        assert harness.agents["can-1"].status().nodes_by_image == {old: 6}
        page.goto(f"{url}/ui/#/")
        page.reload()
        card = page.locator(".cluster[data-cluster=can-1]")
        now = card.locator(".now")
        expect(now).to_have_attribute("data-holding", "rolled-back")
        expect(now).to_contain_text(f"rolled back: 6/6 on {old} · observed ")
        expect(now.locator("time")).to_have_text(AGO)
        mark = now.locator(".badge")
        expect(mark).to_have_attribute("data-state", "rolled-back")
        assert colour(mark) == UNDONE
        expect(card.locator(".image")).to_have_text(old)  # what its nodes run, not the target
        record = card.locator(".step-record")  # the step's stored state, not as a badge
        expect(record).to_have_text("step verified")
        expect(card.locator(".badge[data-state=verified]")).to_have_count(0)
        assert "on target" not in card.inner_text()
        assert new not in card.inner_text()
        shot(page, "overview-rolled-back")

        page.click(".cluster[data-cluster=can-1] > a")
        expect(page.locator("h1")).to_have_text("Cluster can-1")
        expect(page.locator("#runs-now")).to_contain_text(f"6 node(s) on {old} · observed ")
        row = page.locator("#cluster-steps tr[data-step]").first
        expect(row.locator(".rollback .badge")).to_have_text("rolled-back")
        expect(row.locator(".now")).to_contain_text(f"rolled back: 6/6 on {old}")
        shot(page, "cluster-rolled-back")

        page.goto(f"{url}/ui/#/rollouts/{rid}")
        step = page.locator("#steps tr[data-cluster=can-1]")
        expect(step.locator(".now")).to_have_attribute("data-holding", "rolled-back")
        expect(step.locator(".now")).to_contain_text(f"rolled back: 6/6 on {old} · observed ")
