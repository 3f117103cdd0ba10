"""The dashboard's assets and settings: every script the page loads is served, and the trace
URL template (``DRIFTWAVE_TRACE_URL`` or ``create_app(trace_url=...)``) is checked when the app
is built and handed to the page at ``/ui/settings.json``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from fleet.api.app import ApiConfigError, create_app

from .helpers import traced_context

JAEGER = "http://jaeger:16686/trace/{traceId}"


def test_every_script_the_page_loads_is_served(tmp_path: Path) -> None:
    with TestClient(create_app(traced_context(tmp_path).ctx)) as http:
        page = http.get("/ui/")
        scripts = re.findall(r'<script src="/ui/([^"]+)"', page.text)
        assert scripts[-1] == "app.js"  # the router starts once every view is defined
        for name in [*scripts, "style.css"]:
            answer = http.get(f"/ui/{name}")
            assert answer.status_code == 200, name
            assert answer.text.strip(), name
        assert http.get("/ui/missing.js").status_code == 404


def test_the_trace_url_comes_from_the_environment_or_the_argument(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = traced_context(tmp_path).ctx
    with TestClient(create_app(ctx)) as http:
        assert http.get("/ui/settings.json").json() == {"traceUrl": None, "oidc": None}
    monkeypatch.setenv("DRIFTWAVE_TRACE_URL", JAEGER)
    with TestClient(create_app(ctx)) as http:
        assert http.get("/ui/settings.json").json() == {"traceUrl": JAEGER, "oidc": None}
    other = "https://traces.example/t/{traceId}?org=1"
    with TestClient(create_app(ctx, trace_url=other)) as http:
        assert http.get("/ui/settings.json").json() == {"traceUrl": other, "oidc": None}


@pytest.mark.parametrize(
    "bad", ["jaeger:16686/trace/{traceId}", "http://jaeger:16686/trace/", "ftp://x/{traceId}"]
)
def test_an_unusable_trace_url_stops_the_app_naming_the_setting_and_the_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bad: str
) -> None:
    monkeypatch.setenv("DRIFTWAVE_TRACE_URL", bad)
    with pytest.raises(ApiConfigError) as caught:
        create_app(traced_context(tmp_path).ctx)
    message = str(caught.value)
    assert message.startswith("DRIFTWAVE_TRACE_URL is not a trace URL template")
    assert "rule: an http:// or https:// URL with {traceId}" in message
    assert bad not in message  # the value may carry a credential: never echoed
