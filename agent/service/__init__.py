"""The agent's service: its API (status, plan, waves, rollback) over a running agent (the
simulated World or a live one, :mod:`agent.service.runtime`), with no transport; the HTTP
server and the fleet's in-process gateway both call :class:`AgentService`."""

from agent.service.combined import apply_checked, status_with_wave
from agent.service.errors import (
    AgentError,
    FleetRefused,
    InvalidRequest,
    WaveConflict,
    WaveNotFound,
)
from agent.service.service import AgentService

__all__ = [
    "AgentError",
    "AgentService",
    "FleetRefused",
    "InvalidRequest",
    "WaveConflict",
    "WaveNotFound",
    "apply_checked",
    "status_with_wave",
]
