"""What a test does when a service or tool it needs is missing: fail in CI, where
``DRIFTWAVE_REQUIRE_SERVICES`` is set (a skipped test there would hide the missing service),
skip with the reason elsewhere."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def unavailable(reason: str) -> NoReturn:
    """Fail the test with ``reason`` under ``DRIFTWAVE_REQUIRE_SERVICES``, else skip it."""
    if os.environ.get("DRIFTWAVE_REQUIRE_SERVICES"):
        pytest.fail(reason)
    pytest.skip(reason)
