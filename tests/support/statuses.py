"""An agent's status document for the fleet's tests: a healthy cluster of the current release,
with the fields a test names changed (the fleet keeps and reads whole documents)."""

from __future__ import annotations

from typing import Any

from common.wire.status import StatusDocument

_HEALTHY: dict[str, Any] = {
    "cluster": "c-1",
    "kubernetesVersion": "1.30",
    "time": "2026-11-02T09:00:00Z",
    "nodes": 0,
    "nodesByImage": {},
    "drifted": 0,
    "disrupting": 0,
    "pendingPods": 0,
    "launchFailures": 0,
    "registrationFailures": 0,
    "driftHalted": [],
    "nodeClasses": [],
    "activeWave": None,
    "costPerHour": 0.0,
    "clock": {"simulated": False, "speed": 1.0},
}


def agent_status(**fields: Any) -> StatusDocument:
    """A status document: a healthy, empty, real cluster, with ``fields`` (wire names)."""
    return StatusDocument.model_validate(_HEALTHY | fields)
