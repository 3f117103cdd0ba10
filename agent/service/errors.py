"""The agent service's typed errors: what a caller (the HTTP server, the fleet in process) may
catch, each with the meaning a transport maps to a status code."""

from __future__ import annotations

from collections.abc import Sequence

from common.wire.version import FLEET_REFUSED


class AgentError(Exception):
    """Base of the agent service's errors. ``code`` is a stable machine-readable name."""

    code = "agent_error"


class InvalidRequest(AgentError):
    """The request broke a rule; ``fields`` lists ``(path, message)`` for each broken one, with
    paths such as ``target.amiSelectorTerms[0].id``. Nothing was changed."""

    code = "invalid_request"

    def __init__(self, doing: str, fields: Sequence[tuple[str, str]]) -> None:
        self.fields = list(fields)
        detail = "; ".join(f"{path}: {message}" if path else message for path, message in fields)
        super().__init__(f"{doing}: {detail}")


class WaveNotFound(AgentError):
    """No wave with that id is known to this agent (waves live in the agent's memory)."""

    code = "wave_not_found"

    def __init__(self, wave_id: str) -> None:
        self.wave_id = wave_id
        super().__init__(f"no wave {wave_id!r} on this agent")


class WaveConflict(AgentError):
    """The request clashes with a wave the agent knows: the same id with a different request,
    another wave still under way on the same EC2NodeClass, or a later wave on top of the one to
    roll back. ``other`` names the wave it clashes with."""

    code = "wave_conflict"

    def __init__(self, message: str, other: str) -> None:
        self.other = other
        super().__init__(message)


class FleetRefused(AgentError):
    """A wave applied for a fleet whose release does not drive this agent (the fleet's promise,
    :func:`common.wire.version.drivable`): nothing was applied. ``refusal`` is the promise's
    code (``agent-too-old``, ``agent-too-new``)."""

    code = FLEET_REFUSED

    def __init__(self, refusal: str, message: str) -> None:
        self.refusal = refusal
        super().__init__(message)
