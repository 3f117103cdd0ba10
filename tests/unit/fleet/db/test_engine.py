"""Engines and migrations on SQLite: the connection settings, empty to head and back, the models
matching the migration, ``ensure_current`` and the ``python -m fleet.db`` commands."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import Engine, inspect, text

from fleet.db import SchemaOutdated, ensure_current, head_revision, make_engine, migrate
from fleet.db.__main__ import main
from fleet.db.engine import (
    HEAD_REVISION,
    InvalidDatabaseUrl,
    normalize_url,
    schema_differences,
    schema_revision,
)

HEAD = "20261128_oidc"
"""The newest revision of the schema."""

TABLES = {
    "accounts",
    "approvals",
    "audit_log",
    "clusters",
    "fleets",
    "gate_evaluations",
    "regions",
    "releases",
    "rollouts",
    "scheduler_leases",
    "steps",
    "waves",
}


def test_sqlite_engine_creates_the_folder_and_sets_wal_foreign_keys_and_busy_timeout(
    tmp_path: Path,
) -> None:
    path = tmp_path / "nested" / "deeper" / "fleet.db"
    engine = make_engine(f"sqlite:///{path}", lock_timeout=2.5)
    try:
        with engine.connect() as connection:
            pragma = {
                name: connection.exec_driver_sql(f"PRAGMA {name}").scalar()
                for name in ("journal_mode", "foreign_keys", "busy_timeout")
            }
        assert path.parent.is_dir()
        assert pragma == {"journal_mode": "wal", "foreign_keys": 1, "busy_timeout": 2500}
    finally:
        engine.dispose()


def test_postgresql_urls_use_psycopg_and_other_databases_are_refused() -> None:
    assert normalize_url("postgresql://u:p@db:5432/fleet").drivername == "postgresql+psycopg"
    assert normalize_url("postgres://u@db/fleet").drivername == "postgresql+psycopg"
    assert normalize_url("sqlite:///x.db").drivername == "sqlite"
    with pytest.raises(InvalidDatabaseUrl, match="mysql"):
        make_engine("mysql://u@db/fleet")
    with pytest.raises(InvalidDatabaseUrl, match="reading database URL"):
        make_engine("not a url")


def test_postgresql_engine_does_not_connect_when_made() -> None:
    engine = make_engine("postgresql://nobody@127.0.0.1:1/none", schema="fleet_a")
    assert engine.dialect.name == "postgresql"
    assert engine.dialect.driver == "psycopg"
    engine.dispose()


def test_migrate_from_empty_to_head_and_back_to_base(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'fleet.db'}")
    try:
        assert schema_revision(engine) is None
        with pytest.raises(SchemaOutdated, match=r"has no schema.*driftwave db upgrade"):
            ensure_current(engine)
        migrate(engine)
        assert schema_revision(engine) == head_revision() == HEAD
        ensure_current(engine)
        assert set(inspect(engine).get_table_names()) >= TABLES
        migrate(engine)  # a second run finds nothing to do
        assert schema_revision(engine) == HEAD
        migrate(engine, "base")
        assert schema_revision(engine) is None
        assert set(inspect(engine).get_table_names()) == {"alembic_version"}
    finally:
        engine.dispose()


def test_the_head_revision_written_down_is_alembics_head() -> None:
    # ensure_current and migrate compare with the constant, so a new migration must change it
    assert HEAD_REVISION == head_revision() == HEAD


def test_checking_a_current_schema_does_not_load_alembic(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'fleet.db'}"
    migrate(url)
    check = (
        "import sys\n"
        "from fleet.db.engine import ensure_current, make_engine, migrate\n"
        f"engine = make_engine({url!r})\n"
        "migrate(engine)\n"
        "ensure_current(engine)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'alembic'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"


def test_several_revisions_in_the_version_table_are_refused(engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(text("INSERT INTO alembic_version (version_num) VALUES ('0001')"))
    with pytest.raises(SchemaOutdated, match=r"several revisions \(0001, 20261128_oidc\)"):
        schema_revision(engine)


def test_the_models_match_the_migration(engine: Engine) -> None:
    assert schema_differences(engine) == []


def test_a_schema_that_drifted_from_the_models_is_detected(engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(text("DROP INDEX ix_steps_state"))
    differences = schema_differences(engine)
    assert len(differences) == 1
    assert "add_index" in differences[0]
    assert "ix_steps_state" in differences[0]


def test_migrate_accepts_a_url_and_disposes_its_engine(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'by-url.db'}"
    migrate(url)
    engine = make_engine(url)
    try:
        assert schema_revision(engine) == HEAD
    finally:
        engine.dispose()


def test_the_command_line_upgrades_reports_and_checks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    assert main(["--url", url, "current"]) == 0
    assert capsys.readouterr().out.strip() == "none"
    assert main(["--url", url, "check"]) == 1
    assert "run upgrade" in capsys.readouterr().out
    assert main(["--url", url, "upgrade"]) == 0
    assert capsys.readouterr().out.strip() == f"database at revision {HEAD}"
    assert main(["--url", url, "check"]) == 0
    assert main(["--url", url, "history"]) == 0
    assert capsys.readouterr().out.startswith(f"{HEAD}: ")
    assert main(["--url", url, "downgrade", "base"]) == 0
    assert capsys.readouterr().out.strip() == "database at revision base"


def test_the_command_line_reads_the_url_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DRIFTWAVE_DATABASE_URL", f"sqlite:///{tmp_path / 'env.db'}")
    assert main(["upgrade"]) == 0
    assert (tmp_path / "env.db").exists()
    assert main(["--url", "mysql://x@y/z", "current"]) == 1
    assert "not supported" in capsys.readouterr().err


def test_the_command_line_refuses_a_bad_schema_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--url", "sqlite://", "--schema", "Bad-Name", "current"]) == 2
    assert "schema_name" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["frobnicate"])
    assert exit_info.value.code == 2
