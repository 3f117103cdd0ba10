"""``/docs``, the interactive API docs page of the fleet's API and of the agent's, needs no
network: the page names no other host, and every script, style sheet and icon it loads is
answered by the API itself (from the ``swagger-ui-bundle-v2`` package). Both APIs served on
loopback, read over HTTP."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from agent.server import create_app as agent_app
from common.apidocs import ASSETS
from tests.unit.agent.server.helpers import serving as serving_agent
from tests.unit.agent.server.helpers import traced_agent
from tests.unit.fleet.api.helpers import serving as serving_fleet
from tests.unit.fleet.api.helpers import traced_context

LINKED = re.compile(r"""(?:src|href)\s*=\s*["']([^"']+)["']|url\s*:\s*['"]([^"']+)['"]""")
TYPES = {".js": "text/javascript", ".css": "text/css", ".png": "image/png"}


@contextmanager
def served(which: str, tmp_path: Path) -> Iterator[str]:
    if which == "fleet":
        with serving_fleet(traced_context(tmp_path).ctx) as url:
            yield url
    else:
        with serving_agent(agent_app(traced_agent().service, token_hashes=None)) as url:
            yield url


@pytest.mark.parametrize("which", ["fleet", "agent"])
def test_the_docs_page_loads_nothing_from_another_host(which: str, tmp_path: Path) -> None:
    with served(which, tmp_path) as url, httpx.Client(base_url=url, timeout=30) as http:
        page = http.get("/docs")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        assert "://" not in page.text, "no absolute URL: nothing from a CDN"
        linked = {a or b for a, b in LINKED.findall(page.text)}
        assert "/openapi.json" in linked
        assets = sorted(u for u in linked if u.startswith("/docs/assets/"))
        assert {Path(u).name for u in assets} == set(ASSETS)
        for link in assets:
            answer = http.get(link)
            assert answer.status_code == 200, link
            assert answer.headers["content-type"].startswith(TYPES[Path(link).suffix]), link
            assert len(answer.content) > 500, link
        assert http.get("/openapi.json").json()["info"]["title"] == f"driftwave {which}"
        assert http.get("/docs/assets/index.html").status_code == 404, "only the page's files"
        assert http.get("/docs/assets/..%2F__init__.py").status_code == 404
        assert http.get("/redoc").status_code == 404, "ReDoc loads from a CDN: not served"
