"""Shared fixtures of the catalog tests: one packaged catalog for the whole session."""

from __future__ import annotations

import pytest

from agent.catalog import Catalog


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    """The packaged catalog with the default zones, capacity types and spot seed."""
    return Catalog.packaged()
