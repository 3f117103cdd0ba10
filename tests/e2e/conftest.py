"""The browser the end-to-end tests share within a module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser

from tests.support.e2e import chromium


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's headless Chromium (see :func:`tests.support.e2e.chromium`)."""
    with chromium() as launched:
        yield launched
