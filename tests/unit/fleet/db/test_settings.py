"""DatabaseSettings: the embedded default, the environment variables, and refused values."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from fleet.settings import DEFAULT_DATABASE_URL, DatabaseSettings


def test_defaults_to_the_embedded_sqlite_file(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("URL", "ECHO", "LOCK_TIMEOUT", "SCHEMA_NAME"):
        monkeypatch.delenv(f"DRIFTWAVE_DATABASE_{name}", raising=False)
    settings = DatabaseSettings()
    assert settings.url == DEFAULT_DATABASE_URL == "sqlite:///.driftwave/fleet.db"
    assert settings.echo is False
    assert settings.lock_timeout == 30.0
    assert settings.schema_name is None


def test_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DRIFTWAVE_DATABASE_URL", "postgresql://fleet@db:5432/fleet")
    monkeypatch.setenv("DRIFTWAVE_DATABASE_ECHO", "true")
    monkeypatch.setenv("DRIFTWAVE_DATABASE_LOCK_TIMEOUT", "5")
    monkeypatch.setenv("DRIFTWAVE_DATABASE_SCHEMA_NAME", "fleet_prod")
    settings = DatabaseSettings()
    assert settings.url == "postgresql://fleet@db:5432/fleet"
    assert settings.echo is True
    assert settings.lock_timeout == 5.0
    assert settings.schema_name == "fleet_prod"


@pytest.mark.parametrize(
    ("field", "value"),
    [("lock_timeout", 0), ("schema_name", "public; drop"), ("url", "")],
)
def test_refuses_bad_values_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(ValidationError, match=field):
        DatabaseSettings.model_validate({field: value})
