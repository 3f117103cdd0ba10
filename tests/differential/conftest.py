"""The ``karpenter_oracle`` fixture: one oracle process for the whole test session.

Without the binary (``make tools`` builds it; it needs Go), the tests fail under
``DRIFTWAVE_REQUIRE_SERVICES`` (CI) and are skipped elsewhere, with the reason.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.oracle import KarpenterOracle, missing_oracle
from tests.support.required import unavailable


@pytest.fixture(scope="session")
def karpenter_oracle() -> Iterator[KarpenterOracle]:
    """A running ``karpenter-oracle``, shared by the session."""
    if reason := missing_oracle():
        unavailable(reason)
    with KarpenterOracle() as oracle:
        yield oracle
