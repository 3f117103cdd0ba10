"""Whether the fleet drives a cluster's agent: its release against the fleet's promise.

Before a step first changes a cluster, the step runner makes sure this fleet drives the agent:
an agent whose release is outside what this fleet drives (:func:`common.wire.version.drivable`:
the same major, one minor either side) fails the step with the reason on the step, and nothing is
applied. An agent that reports no version is of release 0.1.

Where the agent offers it (capability ``checked-apply``), the check costs no call of its own: the
wave is sent as a checked apply, which tells the agent this fleet's release, and the agent
applies it only if the same promise covers its own (else it refuses with ``fleet_refused`` and
applies nothing; the runner then reads the status for the reason, :func:`refusal`). An agent
without the route answers 404 to it and was never changed by it; the runner then reads its
status and asks :func:`refusal` before applying, as for any agent. The route is asked for first
because only agents that have it can answer it: an agent of a release from before the promise,
or one that has lost the route, cannot be sent a wave unchecked by it.
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
