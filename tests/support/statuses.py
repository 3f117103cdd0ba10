"""An agent's status document for the fleet's tests: a healthy, empty cluster of the current
release, with the fields a test names changed (the fleet keeps and reads whole documents). The
document's every required field comes from :mod:`tests.support.wiredocs`."""

from __future__ import annotations

from typing import Any

from common.wire.status import StatusDocument
from tests.support.wiredocs import status_json

_EMPTY: dict[str, Any] = {
    "cluster": "c-1",
    "kubernetesVersion": "1.30",
    "time": "2026-11-02T09:00:00Z",
    "nodes": 0,
    "nodesByImage": {},
    "nodeClasses": [],
    "costPerHour": 0.0,
}


def agent_status(**fields: Any) -> StatusDocument:
    """A status document: a healthy, empty, real cluster, with ``fields`` (wire names)."""
    return StatusDocument.model_validate(status_json(**(_EMPTY | fields)))
