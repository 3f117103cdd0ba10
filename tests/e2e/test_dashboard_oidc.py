"""The dashboard's sign-in with a real OIDC provider, in a real headless Chromium: "Sign in"
runs the authorization code flow with PKCE through ory/hydra's pages (tests/support/hydra.py)
as a person in the approvers' group, the header names them and their role, the address bar
keeps no code or token, the approval is recorded under their name; a person of the viewers'
group is offered no Approve; signing out forgets the token. Screenshots go to
``test-artifacts/screenshots/dashboard-oidc-*.png``."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from fleet.api.authconfig import AuthConfig, GroupGrant, OidcSettings
from fleet.api.identity import Authenticator
from fleet.api.oidc import OidcVerifier
from fleet.service.commands.rollouts import start_rollout
from tests.support.e2e import screenshot
from tests.support.fleetsim import FleetHarness
from tests.support.hydra import Hydra, Person, running_hydra
from tests.unit.fleet.api.helpers import serving

CLIENT = "driftwave-dashboard"
RINGS = {"canary": ["can-1"], "prod": ["prod-1"]}
STRATEGY: list[dict[str, Any]] = [
    {"name": "canary", "soak": "1m"},
    {"name": "prod", "requireApproval": True},
]
GROUPS = (GroupGrant("release-approvers", "approver"), GroupGrant("engineers", "viewer"))
SIGNED_IN_MS = 30_000
"""How long the header may take to name the person after the provider's redirect: the page
exchanges the code, the API fetches the provider's keys and answers whoami (several round trips
on a machine that may be busy with other work)."""


@pytest.fixture(scope="module")
def hydra(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hydra]:
    with running_hydra(tmp_path_factory.mktemp("hydra")) as provider:
        yield provider


def state(harness: FleetHarness, rid: str) -> str:
    with harness.ctx.reading() as uow:
        return str(uow.rollouts.get(rid).state)


def sign_in(browser: Browser, url: str, hydra: Hydra, username: str) -> Page:
    """A new page signed in through hydra's login form as ``username``."""
    page = browser.new_page(viewport={"width": 1360, "height": 900})
    page.goto(f"{url}/ui/")
    expect(page.locator("#oidc-signin")).to_have_text(
        f"Sign in with {urlsplit(hydra.issuer).netloc}"
    )
    screenshot(page, "dashboard-oidc-signin")
    page.click("#oidc-signin")
    form = page.locator("#username")
    try:
        form.wait_for(timeout=60_000)
    except PlaywrightTimeout:
        pytest.fail(f"no sign-in form at {page.url}: {page.locator('body').inner_text()[:500]}")
    form.fill(username)
    page.click("#sign-in")
    page.wait_for_url(f"{url}/ui/**")
    return page


def test_a_person_signs_in_with_oidc_and_approves(
    hydra: Hydra, browser: Browser, tmp_path: Path
) -> None:
    harness = FleetHarness(tmp_path, RINGS, nodes=4)
    rid = str(start_rollout(harness.ctx, harness.release(STRATEGY), "otto").id)
    harness.run_until(lambda: state(harness, rid) == "awaiting-approval", limit=timedelta(hours=1))
    hydra.add_person(Person("ada", groups=("engineers", "release-approvers")))
    hydra.add_person(Person("vic", groups=("engineers",)))
    settings = OidcSettings(issuer=hydra.issuer, client_id=CLIENT)
    auth = Authenticator(
        harness.ctx,
        config=AuthConfig(oidc=settings, groups=GROUPS),
        verifier=OidcVerifier(settings),
    )
    with serving(harness.ctx, auth=auth) as url:
        hydra.register_client(CLIENT, [f"{url}/ui/"])
        viewer = sign_in(browser, url, hydra, "vic")
        expect(viewer.locator("#who")).to_have_text(
            "vic@example.com (viewer)", timeout=SIGNED_IN_MS
        )
        viewer.goto(f"{url}/ui/#/rollouts/{rid}")
        expect(viewer.locator("h1 .badge").first).to_have_attribute(
            "data-state", "awaiting-approval"
        )
        expect(viewer.locator("#actions button")).to_have_count(0)
        expect(viewer.locator("[data-denied=approve]")).to_contain_text(
            "approve of ring prod needs an approver or higher: group:release-approvers"
        )
        screenshot(viewer, "dashboard-oidc-viewer")
        viewer.close()

        page = sign_in(browser, url, hydra, "ada")
        expect(page.locator("#who")).to_have_text(
            "ada@example.com (approver)", timeout=SIGNED_IN_MS
        )
        assert "code=" not in page.url
        assert "state=" not in page.url
        kept = page.evaluate("sessionStorage.getItem('driftwave.token')")
        assert kept.count(".") == 2  # the ID token, in this tab's session storage only
        page.goto(f"{url}/ui/#/rollouts/{rid}")
        page.once("dialog", lambda dialog: dialog.accept())
        page.click("[data-action=approve]")
        expect(page.locator("#toast")).to_contain_text("approved prod")
        harness.run_until(lambda: state(harness, rid) == "succeeded", limit=timedelta(hours=1))
        screenshot(page, "dashboard-oidc-approved")
        page.click("#signout")
        expect(page.locator("#oidc-signin")).to_be_visible()
        assert page.evaluate("sessionStorage.getItem('driftwave.token')") is None
    with harness.ctx.reading() as uow:
        approvals = [(r.action, r.actor) for r in uow.audit.list(rollout_id=rid)]
    assert ("rollout.approve", "ada@example.com") in approvals
