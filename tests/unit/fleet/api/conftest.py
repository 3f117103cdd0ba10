"""Fixtures of the fleet API tests: a traced context on its own database, served on a free port
with a token, and a client sending that token."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .helpers import Traced, client, serving, traced_context


@pytest.fixture
def fleet(tmp_path: Path) -> Traced:
    """This test's own fleet context (empty database, virtual clock, spans in memory)."""
    return traced_context(tmp_path)


@pytest.fixture
def api(fleet: Traced) -> Iterator[httpx.Client]:
    """A client (sending the token) of the API served over :func:`fleet`."""
    with serving(fleet.ctx) as url, client(url) as http:
        yield http
