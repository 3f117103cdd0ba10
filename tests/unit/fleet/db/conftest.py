"""Fixtures of the fleet database tests: a migrated SQLite file per test, and a seeded fleet.

The schema is migrated once per test session into a template file; each test gets its own copy
in its tmp_path, so tests stay independent and parallel workers never share a file.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from fleet.db import make_engine, migrate


@pytest.fixture(scope="session")
def template_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file migrated to head, copied by each test."""
    path = tmp_path_factory.mktemp("template") / "fleet.db"
    engine = make_engine(f"sqlite:///{path}")
    migrate(engine)
    engine.dispose()
    return path


@pytest.fixture
def db_path(template_db: Path, tmp_path: Path) -> Path:
    """This test's own migrated database file."""
    path = tmp_path / "fleet.db"
    shutil.copy(template_db, path)
    return path


@pytest.fixture
def engine(db_path: Path) -> Iterator[Engine]:
    """An engine on this test's migrated database."""
    engine = make_engine(f"sqlite:///{db_path}", lock_timeout=5.0)
    yield engine
    engine.dispose()
