"""The ``karpenter_oracle`` fixture: one oracle process for the whole test session.

Without the binary (``make tools`` builds it; it needs Go), the tests fail under
``DRIFTWAVE_REQUIRE_SERVICES`` (CI) and are skipped elsewhere, with the reason.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.support.oracle import KarpenterOracle, missing_oracle


@pytest.fixture(scope="session")
def karpenter_oracle() -> Iterator[KarpenterOracle]:
    """A running ``karpenter-oracle``, shared by the session."""
    if reason := missing_oracle():
        if os.environ.get("DRIFTWAVE_REQUIRE_SERVICES"):
            pytest.fail(reason)
        pytest.skip(reason)
    with KarpenterOracle() as oracle:
        yield oracle
