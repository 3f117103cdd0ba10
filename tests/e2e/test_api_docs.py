"""The fleet API's ``/docs`` page in a real headless Chromium with every request that leaves
the API refused (as on a machine with no internet): Swagger UI renders the API's title and its
routes, and the page asked no other host for anything."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Browser, Route, expect

from tests.support.e2e import screenshot
from tests.unit.fleet.api.helpers import serving, traced_context


def test_the_docs_page_renders_with_no_internet(browser: Browser, tmp_path: Path) -> None:
    with serving(traced_context(tmp_path).ctx) as url:
        elsewhere: list[str] = []

        def offline(route: Route) -> None:
            if route.request.url.startswith(url + "/"):
                route.continue_()
            else:
                elsewhere.append(route.request.url)
                route.abort("internetdisconnected")

        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.route("**/*", offline)
        page.goto(f"{url}/docs")
        expect(page.locator(".swagger-ui .info .title")).to_contain_text(
            "driftwave fleet", timeout=30_000
        )
        expect(page.locator(".opblock-summary-path", has_text="/v1/rollouts").first).to_be_visible()
        assert page.locator(".opblock").count() > 10, "every route is listed"
        screenshot(page, "api-docs")
        assert elsewhere == [], "the page asked no other host"
        page.close()
