"""The notification events the fleet posts to webhooks: CloudEvents 1.0 in structured mode with
a Slack-compatible ``text`` line (built by :mod:`fleet.service.notifications.events`).

An event's ``data`` always carries the rollout, release, fleet, ring, wave, state, reason and
actor; the other fields only the event types that say them (the gate's, a rollback's): a field
an event does not carry is absent from its JSON, not null (dump with ``exclude_unset``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from common.wire.base import Document

__all__ = ["CloudEvent", "EventData", "FailedCheck"]


class FailedCheck(Document):
    """A gate check that failed: the worst observed value against its threshold."""

    name: str
    observed: int | float | None
    threshold: int | float | None
    message: str


class EventData(Document):
    """What an event says about its rollout."""

    rollout: str
    release: str
    fleet: str
    ring: str | None = Field(description="The ring (null: a command before the first wave).")
    wave: int | None = Field(description="The wave's place in its ring, from 1.")
    state: str | None = Field(description="The rollout's state after the change.")
    reason: str | None
    actor: str
    link: str | None = Field(default=None, description="The rollout's page on the dashboard.")
    wave_id: str | None = Field(default=None, description="The gated wave (gate events).")
    checks: list[FailedCheck] | None = Field(
        default=None, description="The gate's failing checks (gate events)."
    )
    failed_clusters: list[str] | None = Field(
        default=None, description="The wave's clusters that failed (gate events)."
    )
    clusters: int | None = Field(
        default=None, description="How many clusters roll back (rollout rollback)."
    )


class CloudEvent(Document):
    """One event as posted (``application/cloudevents+json``)."""

    specversion: Literal["1.0"]
    id: str
    source: str
    type: str
    time: str
    subject: str
    datacontenttype: Literal["application/json"]
    data: EventData
    text: str
