"""Whether the fleet drives a cluster's agent: its release against the fleet's promise.

Before a step first changes a cluster, the step runner reads the agent's status and asks
:func:`refusal`: an agent whose release is outside what this fleet drives
(:func:`common.wire.version.drivable`: the same major, one minor either side) fails the step with
the reason on the step, and nothing is applied. An agent that reports no version is of release
0.1.
"""

from __future__ import annotations

from common.wire.status import StatusDocument
from common.wire.version import Refusal, drivable


def refusal(cluster: str, status: StatusDocument) -> Refusal | None:
    """None when this fleet drives the agent whose status is ``status``; else why not, its
    reason naming the cluster."""
    refused = drivable(status.agent.version if status.agent is not None else None)
    if refused is None:
        return None
    return Refusal(refused.code, f"not applied: {cluster}: {refused.reason}")
