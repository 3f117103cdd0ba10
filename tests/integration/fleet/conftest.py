"""What the fleet's integration tests share: a PostgreSQL schema of each test's own."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest


@pytest.fixture
def schema(database_url: str) -> Iterator[str]:
    """A PostgreSQL schema of this test's own, dropped afterwards."""
    name = f"dw_it_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute(f'CREATE SCHEMA "{name}"')
    yield name
    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute(f'DROP SCHEMA "{name}" CASCADE')
