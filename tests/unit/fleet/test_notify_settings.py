"""The notifier's settings (``DRIFTWAVE_NOTIFY_*``): defaults, the retry schedule they make, and
bad values refused naming the variable and the rule."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from fleet.process import NotifySettings
from fleet.service.notifications.events import RetryPolicy


def test_defaults_retry_from_one_second_to_a_minute(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ENABLED", "TIMEOUT", "FIRST_RETRY", "MAX_RETRY", "MAX_ATTEMPTS", "PUBLIC_URL"):
        monkeypatch.delenv(f"DRIFTWAVE_NOTIFY_{name}", raising=False)
    settings = NotifySettings()
    assert settings.enabled
    assert settings.timeout == 5
    assert settings.public_url is None
    assert settings.policy() == RetryPolicy(first=1, cap=60, max_attempts=8, max_age=900)


def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DRIFTWAVE_NOTIFY_FIRST_RETRY", "2")
    monkeypatch.setenv("DRIFTWAVE_NOTIFY_PUBLIC_URL", "https://driftwave.example.com")
    settings = NotifySettings()
    assert settings.policy().delay(3) == 8
    assert settings.public_url == "https://driftwave.example.com"


@pytest.mark.parametrize(
    ("name", "value", "needle"),
    [
        (
            "PUBLIC_URL",
            "driftwave.example.com",
            "DRIFTWAVE_NOTIFY_PUBLIC_URL is not an http(s) URL",
        ),
        ("MAX_RETRY", "0.5", "must be at least DRIFTWAVE_NOTIFY_FIRST_RETRY"),
        ("TIMEOUT", "0", "greater than 0"),
        ("MAX_ATTEMPTS", "0", "greater than or equal to 1"),
    ],
)
def test_bad_values_are_refused(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, needle: str
) -> None:
    monkeypatch.setenv(f"DRIFTWAVE_NOTIFY_{name}", value)
    with pytest.raises(ValidationError) as info:
        NotifySettings()
    assert needle in str(info.value)
