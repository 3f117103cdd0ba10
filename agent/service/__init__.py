"""The agent's service: its API (status, plan, waves, rollback) over a running agent (the
simulated World or a live one, :mod:`agent.service.runtime`), with no transport; the HTTP
server and the fleet's in-process gateway both call :class:`AgentService`."""

from agent.service.errors import AgentError, InvalidRequest, WaveConflict, WaveNotFound
from agent.service.service import AgentService

__all__ = [
    "AgentError",
    "AgentService",
    "InvalidRequest",
    "WaveConflict",
    "WaveNotFound",
]
