"""The demo's fleet: clusters spread over the four rings, their agents' ports and tokens, and the
Fleet and Release manifests, all written into the demo's working folder.

Every cluster gets its own random bearer token: the agents keep only its SHA-256, the fleet
reads it from a file only the demo's user can read (``credentialsRef: file:...``).
"""

from __future__ import annotations

import hashlib
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from common.ports import free_ports

RINGS = ("canary", "dev", "staging", "prod")
REGIONS = ("us-east-1", "us-west-2", "eu-central-1", "ap-southeast-1")
OLD_RELEASE = "v20251202"
NEW_RELEASE = "v20251216"


@dataclass(frozen=True)
class DemoCluster:
    """One simulated cluster of the demo."""

    name: str
    ring: str
    region: str
    port: int
    token_file: Path
    token_hash: str
    seed: int


def ring_sizes(clusters: int) -> dict[str, int]:
    """How many clusters each ring gets: one canary, a quarter of the rest in dev and in staging,
    the remainder in prod (12 clusters: 1, 3, 3, 5)."""
    if clusters < 4:
        raise ValueError("the demo needs at least 4 clusters (one per ring)")
    rest = clusters - 1
    dev = max(1, round(rest / 4))
    staging = max(1, round(rest / 4))
    return {"canary": 1, "dev": dev, "staging": staging, "prod": rest - dev - staging}


def make_clusters(workdir: Path, clusters: int) -> list[DemoCluster]:
    """The demo's clusters, with ports and tokens (token files written, mode 0600)."""
    tokens = workdir / "tokens"
    tokens.mkdir(parents=True, exist_ok=True)
    out: list[DemoCluster] = []
    ports = iter(free_ports(clusters))
    for ring, size in ring_sizes(clusters).items():
        for i in range(size):
            name = f"{ring}-{i + 1}"
            token = secrets.token_urlsafe(24)
            path = tokens / name
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(token + "\n")
            out.append(
                DemoCluster(
                    name=name,
                    ring=ring,
                    region=REGIONS[len(out) % len(REGIONS)],
                    port=next(ports),
                    token_file=path,
                    token_hash="sha256:" + hashlib.sha256(token.encode()).hexdigest(),
                    seed=len(out) + 1,
                )
            )
    return out


def agents_config(
    clusters: list[DemoCluster], nodes: int, speed: float, faulty: bool
) -> list[dict[str, Any]]:
    """The ``driftwave agent serve --config`` entries of the demo's clusters."""
    return [
        {
            "name": c.name,
            "port": c.port,
            "nodes": nodes,
            "seed": c.seed,
            "speed": speed,
            "amiRelease": OLD_RELEASE,
            "faultyReleases": [NEW_RELEASE] if faulty else [],
            "tokenHash": c.token_hash,
        }
        for c in clusters
    ]


def fleet_manifest(clusters: list[DemoCluster], notify: Sequence[str] = ()) -> dict[str, Any]:
    """The demo's Fleet: four rings, one account, the agents on loopback; each of ``notify``
    a webhook told of every event (``notify-1``, ``notify-2``, ...)."""
    manifest: dict[str, Any] = {
        "apiVersion": "driftwave.io/v1alpha1",
        "kind": "Fleet",
        "metadata": {"name": "demo"},
        "spec": {
            "rings": list(RINGS),
            "accounts": [
                {
                    "name": "demo",
                    "accountId": "111122223333",
                    "roleArn": "arn:aws:iam::111122223333:role/driftwave-fleet",
                    "externalId": "driftwave-demo",
                }
            ],
            "clusters": [
                {
                    "name": c.name,
                    "account": "demo",
                    "region": c.region,
                    "ring": c.ring,
                    "labels": {"env": c.ring},
                    "agent": {
                        "endpoint": f"http://127.0.0.1:{c.port}",
                        "credentialsRef": f"file:{c.token_file}",
                    },
                }
                for c in clusters
            ],
        },
    }
    if notify:
        notifications = [{"name": f"notify-{n}", "url": url} for n, url in enumerate(notify, 1)]
        manifest["spec"]["notifications"] = notifications
    return manifest


def release_manifest(soak: str, timeout: str) -> dict[str, Any]:
    """The demo's Release: pin the newer AL2023 image, ring by ring, growing waves in dev and
    prod, an approval before prod."""
    gates = {"convergenceTimeout": timeout, "maxPendingPods": 0, "maxLaunchFailures": 0}
    return {
        "apiVersion": "driftwave.io/v1alpha1",
        "kind": "Release",
        "metadata": {"name": f"al2023-{NEW_RELEASE}"},
        "spec": {
            "fleet": "demo",
            "target": {
                "amiSelectorTerms": [{"alias": f"al2023@{NEW_RELEASE}"}],
                "nodeClasses": {"names": ["default"]},
            },
            "strategy": {
                "rings": [
                    {"name": "canary", "maxConcurrency": 1, "soak": soak, "gates": gates},
                    {
                        "name": "dev",
                        "growing": {"initial": 1, "factor": 2},
                        "soak": soak,
                        "gates": gates,
                    },
                    {"name": "staging", "maxConcurrency": 2, "soak": soak, "gates": gates},
                    {
                        "name": "prod",
                        "growing": {"initial": 1, "factor": 2, "max": 4},
                        "soak": soak,
                        "requireApproval": True,
                        "gates": gates,
                    },
                ],
                "onUnreachable": "fail",
            },
        },
    }


def write_yaml(path: Path, data: Any) -> Path:
    """Write ``data`` as YAML (a list of entries or one manifest) and return the path."""
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path
