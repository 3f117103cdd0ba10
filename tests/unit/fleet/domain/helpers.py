"""Builders of minimal valid Fleet and Release manifests and of the plain data the planner reads.

Tests take a fresh manifest, change one field with :func:`with_field` (from the agent's API test
helpers), and check that it parses, or is refused with one issue at the expected path.
"""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

from fleet.domain.model import ClusterInfo, FleetInfo, ReleaseInfo, RingSpec, TargetInfo
from fleet.domain.waves import WaveStrategy
from fleet.domain.windows import Window

ACCOUNT: dict[str, Any] = {
    "name": "main",
    "accountId": "123456789012",
    "roleArn": "arn:aws:iam::123456789012:role/driftwave-fleet",
}


def cluster(name: str, ring: str, **extra: Any) -> dict[str, Any]:
    """A Fleet cluster entry in account ``main``, us-east-1."""
    out: dict[str, Any] = {
        "name": name,
        "account": "main",
        "region": "us-east-1",
        "ring": ring,
        "agent": {
            "endpoint": f"https://agent.{name}.example.internal:9443",
            "credentialsRef": "env:DRIFTWAVE_TOKEN",
        },
    }
    out.update(copy.deepcopy(extra))
    return out


def fleet(**spec: Any) -> dict[str, Any]:
    """A Fleet ``payments`` with rings canary and prod and one cluster in each."""
    return {
        "apiVersion": "driftwave.io/v1alpha1",
        "kind": "Fleet",
        "metadata": {"name": "payments"},
        "spec": {
            "rings": ["canary", "prod"],
            "accounts": [dict(ACCOUNT)],
            "clusters": [cluster("web-canary", "canary"), cluster("web-prod", "prod")],
            **copy.deepcopy(spec),
        },
    }


def release(**spec: Any) -> dict[str, Any]:
    """A Release of an AL2023 AMI through fleet ``payments``: canary, then prod (approved)."""
    return {
        "apiVersion": "driftwave.io/v1alpha1",
        "kind": "Release",
        "metadata": {"name": "al2023-v20251216"},
        "spec": {
            "fleet": "payments",
            "target": {"amiSelectorTerms": [{"alias": "al2023@v20251216"}]},
            "strategy": {"rings": [{"name": "canary"}, {"name": "prod", "requireApproval": True}]},
            **copy.deepcopy(spec),
        },
    }


def info_cluster(name: str, ring: str, *windows: Window, **labels: str) -> ClusterInfo:
    """A planner cluster with optional windows and labels."""
    return ClusterInfo(name, ring, "main", "us-east-1", dict(labels), tuple(windows))


def info_fleet(*clusters: ClusterInfo, rings: tuple[str, ...] = ("canary", "prod")) -> FleetInfo:
    """Planner fleet data named ``payments``."""
    return FleetInfo("payments", rings, clusters)


def ring(name: str, waves: WaveStrategy | None = None, **kw: Any) -> RingSpec:
    """A ring strategy: zero soak unless given, so estimates are easy to read."""
    kw.setdefault("soak", timedelta(0))
    if waves is not None:
        kw["waves"] = waves
    return RingSpec(name, **kw)


def info_release(*rings: RingSpec, labels: dict[str, str] | None = None) -> ReleaseInfo:
    """Planner release data for fleet ``payments`` (a Kubernetes version target)."""
    return ReleaseInfo("k8s-1-31", "payments", TargetInfo(kubernetes_version="1.31"), rings, labels)
