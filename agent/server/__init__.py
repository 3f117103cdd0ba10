"""The agent's HTTP server: the FastAPI application (:func:`create_app`) and the runner that
serves one or several simulated agents in one process (:func:`run_agents`)."""

from agent.server.app import create_app
from agent.server.runner import AgentConfig, RunningAgent, run_agents

__all__ = [
    "AgentConfig",
    "RunningAgent",
    "create_app",
    "run_agents",
]
