"""``GET /v1/status``: the cluster now, and the parts the wave document shares with it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from common.wire.base import Answer
from common.wire.version import AgentIdentity, read_identity


class HaltedPool(Answer):
    """A NodePool whose drift is halted (repeated replacement failures)."""

    node_pool: str
    reason: str
    message: str


class NodeClassState(Answer):
    """An EC2NodeClass: its ``amiSelectorTerms`` and the images they resolve to now."""

    name: str
    ami_selector_terms: list[dict[str, Any]]
    images: list[str]


class Clock(Answer):
    """Whose time the agent's documents carry."""

    simulated: bool = Field(
        description="True: the cluster is a simulation and its clock is simulated time; "
        "False: the agent's clock is the wall clock (a real cluster)."
    )
    speed: float = Field(
        description="Simulated seconds per real second the simulation is advanced at when the "
        "machine keeps up (1 for the wall clock); a busy machine makes it run slower."
    )


class StatusDocument(Answer):
    """``GET /v1/status``: the cluster now."""

    cluster: str
    kubernetes_version: str
    time: str = Field(description="The agent's clock, RFC 3339 UTC.")
    nodes: int = Field(description="Registered NodeClaims.")
    nodes_by_image: dict[str, int]
    drifted: int
    disrupting: int = Field(description="NodeClaims being deleted or in a disruption under way.")
    pending_pods: int
    launch_failures: int = Field(
        description="NodeClaims deleted before their instance launched, last 30 minutes."
    )
    registration_failures: int = Field(
        description="NodeClaims launched but deleted before they initialized (never joined or "
        "never Ready), last 30 minutes."
    )
    drift_halted: list[HaltedPool]
    node_classes: list[NodeClassState]
    active_wave: str | None = Field(description="The latest wave under way, if any.")
    cost_per_hour: float = Field(description="USD per hour of the instances billed now.")
    clock: Clock
    agent: AgentIdentity | None = Field(
        default=None,
        description="Which release the agent is and what it can do (absent from an agent of "
        "release 0.1, which predates it).",
    )

    @field_validator("agent", mode="before")
    @classmethod
    def _readable_or_refused(cls, value: object) -> object:
        """An ``agent`` block this release cannot read stays an identity without a version."""
        return read_identity(value)


class Health(Answer):
    """``GET /healthz`` and ``GET /readyz``."""

    status: Literal["ok", "failing", "not-ready"]
    cluster: str


class Event(Answer):
    """One thing the agent did, and why."""

    time: str = Field(description="RFC 3339 UTC, the agent's clock.")
    type: str
    object: str
    reason: str
    details: dict[str, Any]


class EventsDocument(Answer):
    """``GET /v1/events``: the agent's last events, oldest first."""

    cluster: str
    events: list[Event]
