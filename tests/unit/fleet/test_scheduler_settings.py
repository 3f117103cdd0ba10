"""The scheduler's settings: a short lease (a standby takes over within seconds) that still
outlasts three ticks, and the heartbeat policy the API and metrics read."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError

from fleet.process import SchedulerSettings
from fleet.service.scheduling.health import HeartbeatPolicy


def test_defaults_give_a_takeover_within_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("INTERVAL", "LEASE_TTL", "STALE_INTERVALS"):
        monkeypatch.delenv(f"DRIFTWAVE_SCHEDULER_{name}", raising=False)
    settings = SchedulerSettings()
    assert (settings.interval, settings.lease_ttl) == (1.0, 6.0)
    assert settings.heartbeat() == HeartbeatPolicy(1.0, 10)
    assert settings.heartbeat().stale_after == timedelta(seconds=10)


def test_a_lease_shorter_than_three_intervals_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DRIFTWAVE_SCHEDULER_INTERVAL", "15")
    monkeypatch.delenv("DRIFTWAVE_SCHEDULER_LEASE_TTL", raising=False)
    with pytest.raises(ValidationError, match="must be at least three"):
        SchedulerSettings()
    monkeypatch.setenv("DRIFTWAVE_SCHEDULER_LEASE_TTL", "45")
    assert SchedulerSettings().lease_ttl == 45
