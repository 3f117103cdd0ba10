"""Migration 0004 on a real PostgreSQL, in a schema of its own: a populated database at 0003
upgrades keeping its rows and its append-only audit log, and goes back
(:func:`tests.unit.fleet.db.test_contact_migration.check_upgrade`)."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import text

from fleet.db import make_engine
from tests.unit.fleet.db.test_contact_migration import check_upgrade

pytestmark = pytest.mark.integration


def test_0004_upgrades_a_populated_postgresql_database_and_goes_back(database_url: str) -> None:
    schema = f"dw_m4_{uuid.uuid4().hex[:10]}"
    admin = make_engine(database_url)
    with admin.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    engine = make_engine(database_url, schema=schema)
    try:
        check_upgrade(engine)
    finally:
        engine.dispose()
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()
