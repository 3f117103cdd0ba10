"""The agent's HTTP server: the FastAPI application (:func:`create_app`) and the runner that
serves one or several simulated agents in one process (:func:`run_agents`)."""

from agent.server.app import create_app
from agent.server.auth import AuthConfigError, hash_token
from agent.server.runner import AgentConfig, RunningAgent, run_agents

__all__ = [
    "AgentConfig",
    "AuthConfigError",
    "RunningAgent",
    "create_app",
    "hash_token",
    "run_agents",
]
