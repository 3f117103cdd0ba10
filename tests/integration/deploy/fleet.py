"""What the fleet chart's tests share: the value sets they render, lint and install, the golden
files of ``helm template`` for them, and the objects by kind.

The golden files (``golden/fleet-<set>.yaml``) are what ``helm template`` renders for each set
(release ``driftwave``, namespace ``driftwave``). After changing the chart on purpose,
regenerate them and review the difference::

    DRIFTWAVE_UPDATE_GOLDEN=1 .venv/bin/pytest -n 0 -k golden \\
        tests/integration/deploy/test_fleet_chart.py
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

PEM = "-----BEGIN CERTIFICATE-----\nMIIBdGVzdCBjZXJ0aWZpY2F0ZQ==\n-----END CERTIFICATE-----\n"
"""A certificate-shaped PEM (the chart only mounts it; nothing parses it here)."""
RELEASE = "driftwave"
GOLDEN = Path(__file__).parent / "golden"
MINIMAL: dict[str, Any] = {
    "database": {"url": "postgresql://driftwave:db-password@db.internal:5432/driftwave"},
    "broker": {"url": "redis://:broker-password@redis.internal:6379/0"},
}
FULL: dict[str, Any] = {
    **MINIMAL,
    "image": {"repository": "images.example.com/platform/driftwave", "tag": "0.1.0"},
    "auth": {
        "oidc": {"issuer": "https://login.example.com", "clientId": "driftwave",
                 "clientSecret": "oidc-client-secret", "caBundle": PEM},
        "groups": [{"group": "platform-admins", "role": "admin"},
                   {"group": "sre", "role": "approver", "rings": ["canary", "dev", "staging"]},
                   {"group": "developers", "role": "viewer"}],
    },
    "agentTLS": {"caBundles": {"prod.pem": PEM, "staging.pem": PEM},
                 "clientCertificateSecret": "driftwave-fleet-client"},
    "ingress": {"enabled": True, "className": "nginx", "host": "driftwave.example.com",
                "tlsSecretName": "driftwave-tls",
                "annotations": {"cert-manager.io/cluster-issuer": "letsencrypt"}},
    "monitoring": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}},
    "worker": {"replicas": 3, "concurrency": 8,
               "resources": {"requests": {"cpu": "500m", "memory": "384Mi"},
                             "limits": {"memory": "768Mi"}}},
    "settings": {"DRIFTWAVE_SCHEDULER_INTERVAL": "2",
                 "DRIFTWAVE_NOTIFY_PUBLIC_URL": "https://driftwave.example.com"},
    "networkPolicy": {
        "apiFrom": [{"namespaceSelector": {"matchLabels": {
            "kubernetes.io/metadata.name": "ingress-nginx"}}}],
        "database": {"port": 5432, "to": [{"ipBlock": {"cidr": "10.20.0.0/16"}}]},
        "broker": {"port": 6379, "to": [{"ipBlock": {"cidr": "10.21.0.0/16"}}]},
    },
}  # fmt: skip
EXISTING: dict[str, Any] = {
    "database": {"existingSecret": "fleet-database", "existingSecretKey": "dsn"},
    "broker": {"existingSecret": "fleet-broker"},
    "auth": {"oidc": {"issuer": "https://login.example.com", "clientId": "driftwave",
                      "existingSecret": "fleet-oidc"},
             "groups": [{"group": "platform", "role": "admin"}]},
    "agentTLS": {"existingSecret": "fleet-agent-cas"},
    "serviceAccount": {"create": False, "name": "platform-fleet"},
}  # fmt: skip
OFF: dict[str, Any] = {
    **MINIMAL,
    "networkPolicy": {"enabled": False},
    "podDisruptionBudget": {"enabled": False},
    "api": {"replicas": 1},
    "scheduler": {"replicas": 1},
    "worker": {"replicas": 0},
}
VALUE_SETS = {"minimal": MINIMAL, "full": FULL, "existing-secrets": EXISTING, "switched-off": OFF}


def by_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The objects of ``kind``, in helm's order."""
    return [d for d in docs if d["kind"] == kind]


def named(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    """The one object of ``kind`` named ``name``."""
    found = [d for d in by_kind(docs, kind) if d["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind} {name}: {len(found)} found"
    return found[0]


def pod_specs(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every pod template (Deployments and the Job), by its object's name."""
    return {
        d["metadata"]["name"]: d["spec"]["template"]["spec"]
        for d in docs
        if d["kind"] in ("Deployment", "Job")
    }


def hook(doc: dict[str, Any]) -> dict[str, str]:
    """The object's helm hook annotations (empty: a release object)."""
    annotations = doc["metadata"].get("annotations") or {}
    return {k: v for k, v in annotations.items() if k.startswith("helm.sh/hook")}
