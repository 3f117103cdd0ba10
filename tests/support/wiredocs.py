"""Wire documents as an agent writes them, for tests of their readers: a status and a wave
document with every required field, any field overridden."""

from __future__ import annotations

import copy
from typing import Any

_STATUS: dict[str, Any] = {
    "cluster": "a",
    "kubernetesVersion": "1.31",
    "time": "2026-01-01T00:00:00.000Z",
    "nodes": 3,
    "nodesByImage": {"ami-new": 3},
    "drifted": 0,
    "disrupting": 0,
    "pendingPods": 0,
    "launchFailures": 0,
    "registrationFailures": 0,
    "driftHalted": [],
    "nodeClasses": [
        {"name": "default", "amiSelectorTerms": [{"id": "ami-new"}], "images": ["ami-new"]}
    ],
    "activeWave": None,
    "costPerHour": 1.5,
    "clock": {"simulated": False, "speed": 1.0},
}

_OBSERVED: dict[str, Any] = {
    "expected": "target",
    "holds": True,
    "state": "holds",
    "code": "holds",
    "reason": "",
    "kubernetesVersion": "1.31",
    "images": ["ami-new"],
    "nodes": 3,
    "onExpected": 3,
    "drifted": 0,
    "disrupting": 0,
    "launchFailures": 0,
    "registrationFailures": 0,
    "at": "2026-01-01T00:00:00.000Z",
}

_WAVE: dict[str, Any] = {
    "id": "w1",
    "phase": "converged",
    "target": {"amiSelectorTerms": [{"id": "ami-new"}]},
    "nodeClasses": ["default"],
    "nodePools": ["default"],
    "previous": {"default": {"amiSelectorTerms": [{"id": "ami-old"}], "amiFamily": None}},
    "kubernetesVersionBefore": "1.31",
    "imagesBefore": ["ami-old"],
    "targetImages": ["ami-new"],
    "appliedAt": "2026-01-01T00:00:00.000Z",
    "convergedAt": "2026-01-01T00:00:00.000Z",
    "finishedAt": "2026-01-01T00:00:00.000Z",
    "elapsedSeconds": 0.0,
    "reason": "",
    "rollout": None,
    "release": None,
    "history": [{"phase": "progressing", "at": "2026-01-01T00:00:00.000Z", "reason": ""}],
    "progress": {
        "nodes": 3,
        "onTarget": 3,
        "drifted": 0,
        "disrupting": 0,
        "pendingPods": 0,
        "launchFailures": 0,
        "registrationFailures": 0,
        "driftHalted": [],
        "nodesReplaced": 3,
    },
    "observed": _OBSERVED,
    "clock": {"simulated": False, "speed": 1.0},
}


def status_json(**fields: Any) -> dict[str, Any]:
    """A status document (``GET /v1/status``) with ``fields`` (camelCase) replaced."""
    return {**copy.deepcopy(_STATUS), **fields}


def wave_json(**fields: Any) -> dict[str, Any]:
    """A converged wave document whose observation holds, with ``fields`` (camelCase) replaced."""
    return {**copy.deepcopy(_WAVE), **fields}


def observed_json(**fields: Any) -> dict[str, Any]:
    """An observation that holds, with ``fields`` (camelCase) replaced (``None`` removes one)."""
    seen = {**copy.deepcopy(_OBSERVED), **fields}
    return {k: v for k, v in seen.items() if v is not None}
