"""The agent's HTTP server: the FastAPI application (:func:`create_app`), the runner that serves
one or several simulated agents in one process (:func:`run_agents`), and the serving of a live
agent over a real cluster (:func:`agent.server.live.serve_live`); :mod:`.serve` is what
``driftwave agent serve`` does with either."""

from agent.server.app import create_app
from agent.server.runner import AgentConfig, RunningAgent, run_agents

__all__ = [
    "AgentConfig",
    "RunningAgent",
    "create_app",
    "run_agents",
]
