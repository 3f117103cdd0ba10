"""The wire's version facts: which release an agent is, what it can do, and which agents a fleet
drives.

An agent reports itself in ``GET /v1/status`` as ``agent`` (:class:`AgentIdentity`): its release
``version`` (:data:`VERSION`, the project's version), the ``apiVersion`` of its HTTP API
(``v1``) and its ``capabilities`` (:class:`Capability`): the parts of the wire a fleet may
depend on that an agent of another release may lack.

The compatibility promise (:func:`drivable`): a fleet of release ``M.m`` drives agents of the
same major ``M`` and of the minors ``m-1``, ``m`` and ``m+1`` (a 0.2 fleet drives 0.1.x to
0.3.x), so either side may be upgraded first, one minor at a time. An agent that reports no
version is of release 0.1 (the last release before agents reported one); an agent outside the
range, or one whose version cannot be read, is refused with a :class:`Refusal` (a code and a
reason naming both versions and the range).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import Field, ValidationError, field_validator

from common.wire.base import Answer

VERSION = "0.2.0"
"""The project's release version (``pyproject.toml``'s ``version``; a unit test keeps the two
equal): what an agent reports and what a fleet compares agents with."""
API_VERSION = "v1"
"""The version of the agent's HTTP API (the ``/v1`` of its routes)."""
UNVERSIONED = "0.1.0"
"""The release an agent that reports no version is taken to be: the last one before agents
reported their version."""
_SEMVER = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(?:[-+][0-9A-Za-z.+-]*)?")


class Capability(StrEnum):
    """A part of the wire a fleet may depend on that an agent of another release may lack."""

    VERDICT_CODES = "verdict-codes"
    """``observed.state`` and ``observed.code``: a verdict a machine reads (an agent without it
    writes ``holds`` and ``reason`` only, so a fleet cannot tell a regression from a cluster
    still settling until the step's time runs out)."""
    WAVE_BUDGETS = "wave-budgets"
    """``progress.budgets``, ``waitingOnBudget`` and the wave's ETA: each NodePool's Drifted
    budget now."""
    ROLLBACK_RECORD = "rollback-record"
    """``POST /v1/waves/{id}/rollback`` with the fleet's record of what the wave replaced, so a
    wave is rolled back even by an agent that lost its own record."""
    CLUSTER_CLOCK = "cluster-clock"
    """``clock`` in the status and wave documents: whether the cluster's time is simulated, and
    ``elapsedSeconds`` on that clock."""
    STATUS_WITH_WAVE = "status-with-wave"
    """``GET /v1/status?wave={id}``: the status with that wave's document in it (``wave``; null
    when the agent does not know the wave), read in one call and one pass over the cluster, so
    a fleet verifying a step asks once instead of twice. An agent without it answers the status
    alone (it ignores the parameter), and the fleet reads the wave with a second call."""
    CHECKED_APPLY = "checked-apply"
    """``PUT /v1/waves/{id}/checked?fleet={version}``: the wave applied only if the calling
    fleet's release drives this agent (:func:`drivable`; else 409 ``fleet_refused``, nothing
    applied), answered with the status after it and the wave in it, so a fleet applies a wave in
    one call instead of reading the status first and again after. An agent without it answers
    404 (no such route), and the fleet reads the status, checks it and applies, as before."""


FLEET_REFUSED = "fleet_refused"
"""The error code of an agent refusing a checked apply (:attr:`Capability.CHECKED_APPLY`) to a
fleet whose release does not drive it."""

UNVERSIONED_CAPABILITIES = frozenset(
    {Capability.WAVE_BUDGETS, Capability.ROLLBACK_RECORD, Capability.CLUSTER_CLOCK}
)
"""What an agent that reports no version (release 0.1) can do."""
CAPABILITIES: tuple[Capability, ...] = (
    Capability.VERDICT_CODES,
    Capability.WAVE_BUDGETS,
    Capability.ROLLBACK_RECORD,
    Capability.CLUSTER_CLOCK,
    Capability.STATUS_WITH_WAVE,
    Capability.CHECKED_APPLY,
)
"""What an agent of this release can do (what it reports)."""


class AgentIdentity(Answer):
    """``agent`` in ``GET /v1/status``: which release the agent is and what it can do. Read
    tolerantly: a newer agent's extra fields and capabilities this release does not know are
    left out."""

    version: str = Field(description="The agent's release (semantic version, e.g. 0.2.0).")
    api_version: str = Field(description="The version of its HTTP API (v1).")
    capabilities: list[Capability] = Field(
        description="The parts of the wire it offers that a fleet may depend on."
    )

    @field_validator("capabilities", mode="before")
    @classmethod
    def _known_only(cls, value: Any) -> Any:
        """Capabilities this release does not know (a newer agent's) are left out."""
        if not isinstance(value, list):
            return value
        known = {c.value for c in Capability}
        return [c for c in value if isinstance(c, str) and c in known]


def identity() -> AgentIdentity:
    """This release's identity, as its agent reports it."""
    return AgentIdentity(version=VERSION, api_version=API_VERSION, capabilities=list(CAPABILITIES))


def read_identity(raw: object) -> AgentIdentity | None:
    """The ``agent`` block of a status as a reader takes it: as it is when it reads as an
    :class:`AgentIdentity` (or is absent), else an identity without a version, which
    :func:`drivable` refuses as unreadable (a broken block never hides an agent's release)."""
    if raw is None or isinstance(raw, AgentIdentity):
        return raw
    try:
        return AgentIdentity.model_validate(raw)
    except ValidationError:
        return AgentIdentity(version="", api_version="", capabilities=[])


def capabilities_of(agent: AgentIdentity | None) -> frozenset[Capability]:
    """What an agent can do: what it reports, or, without an identity, what release 0.1 could."""
    return UNVERSIONED_CAPABILITIES if agent is None else frozenset(agent.capabilities)


class RefusalCode(StrEnum):
    """Why a fleet refuses to drive an agent."""

    TOO_OLD = "agent-too-old"
    TOO_NEW = "agent-too-new"
    UNREADABLE = "agent-version-unreadable"


@dataclass(frozen=True)
class Refusal:
    """A fleet's refusal to drive an agent: ``code`` for programs, ``reason`` for people."""

    code: RefusalCode
    reason: str


def _parse(version: str) -> tuple[int, int] | None:
    """(major, minor) of a semantic version; None when ``version`` is not one."""
    match = _SEMVER.fullmatch(version)
    return (int(match[1]), int(match[2])) if match else None


def supported(fleet_version: str = VERSION) -> str:
    """The agent releases a fleet of ``fleet_version`` drives, for people: ``0.1.x to 0.3.x``."""
    parsed = _parse(fleet_version)
    if parsed is None:
        raise ValueError(f"{fleet_version!r} is not a semantic version (such as 0.2.0)")
    major, minor = parsed
    return f"{major}.{max(0, minor - 1)}.x to {major}.{minor + 1}.x"


def drivable(agent_version: str | None, fleet_version: str = VERSION) -> Refusal | None:
    """None when a fleet of ``fleet_version`` drives an agent of ``agent_version`` (None: an
    agent that reports no version, release 0.1); else the :class:`Refusal` saying why not."""
    fleet = _parse(fleet_version)
    if fleet is None:
        raise ValueError(f"{fleet_version!r} is not a semantic version (such as 0.2.0)")
    version = UNVERSIONED if agent_version is None else agent_version
    shown = f"{version} (it reports no version)" if agent_version is None else version
    drives = f"this fleet ({fleet_version}) drives agents {supported(fleet_version)}"
    agent = _parse(version)
    if agent is None:
        return Refusal(
            RefusalCode.UNREADABLE,
            f"the agent reports version {version[:40]!r}, which is not a semantic version "
            f"(such as {fleet_version}); {drives}",
        )
    if agent[0] < fleet[0] or (agent[0] == fleet[0] and agent[1] < fleet[1] - 1):
        return Refusal(
            RefusalCode.TOO_OLD,
            f"the agent runs driftwave {shown}; {drives}: upgrade the agent first",
        )
    if agent[0] > fleet[0] or agent[1] > fleet[1] + 1:
        return Refusal(
            RefusalCode.TOO_NEW,
            f"the agent runs driftwave {shown}; {drives}: upgrade the fleet first",
        )
    return None
