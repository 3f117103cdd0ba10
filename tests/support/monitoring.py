"""The prometheus-operator's ServiceMonitor and PrometheusRule kinds, for installing the fleet's
chart with ``monitoring.enabled`` into the test control plane.

These are minimal structural CRDs written for the tests, not the operator's own: the group,
versions, kinds, plurals and scope are the operator's (``monitoring.coreos.com/v1``,
namespaced), and the schema requires what the operator's requires of the fields the chart
sets (a ServiceMonitor's ``selector`` and ``endpoints``; a PrometheusRule's ``groups``, each
with a ``name`` and ``rules`` that carry an ``expr``), leaving the rest open
(``x-kubernetes-preserve-unknown-fields``). Their purpose is that the API server admits (or
refuses) the chart's objects of these kinds as a cluster with the operator would, for the
fields the chart uses.
"""

from __future__ import annotations

from typing import Any

from agent.kube.port import NotFound
from agent.kube.real.rest import KubeREST
from tests.support.kubeobjects import eventually

GROUP = "monitoring.coreos.com"
BASE = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
OPEN: dict[str, Any] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
STRINGS: dict[str, Any] = {"type": "object", "additionalProperties": {"type": "string"}}


def _crd(kind: str, plural: str, spec: dict[str, Any]) -> dict[str, Any]:
    schema = {
        "type": "object",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": kind,
                "plural": plural,
                "singular": kind.lower(),
                "listKind": f"{kind}List",
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


DURATION = "^(0|(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"
"""The operator's duration pattern (a scrape interval)."""


def _endpoint() -> dict[str, Any]:
    return {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "properties": {
            "port": {"type": "string"},
            "path": {"type": "string"},
            "interval": {"type": "string", "pattern": DURATION},
        },
    }


SERVICE_MONITOR = _crd(
    "ServiceMonitor",
    "servicemonitors",
    {
        "type": "object",
        "required": ["selector", "endpoints"],
        "x-kubernetes-preserve-unknown-fields": True,
        "properties": {
            "selector": OPEN,
            "namespaceSelector": OPEN,
            "endpoints": {"type": "array", "items": _endpoint()},
        },
    },
)
PROMETHEUS_RULE = _crd(
    "PrometheusRule",
    "prometheusrules",
    {
        "type": "object",
        "required": ["groups"],
        "properties": {
            "groups": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["name", "rules"],
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {
                        "name": {"type": "string", "minLength": 1},
                        "rules": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "required": ["expr"],
                                "x-kubernetes-preserve-unknown-fields": True,
                                "properties": {
                                    "alert": {"type": "string"},
                                    "record": {"type": "string"},
                                    "expr": {"x-kubernetes-int-or-string": True},
                                    "for": {"type": "string"},
                                    "labels": {
                                        "type": "object",
                                        "additionalProperties": {"type": "string"},
                                    },
                                    "annotations": {
                                        "type": "object",
                                        "additionalProperties": {"type": "string"},
                                    },
                                },
                            },
                        },
                    },
                },
            }
        },
    },
)
CRDS = (SERVICE_MONITOR, PROMETHEUS_RULE)


def install_monitoring_crds(rest: KubeREST) -> None:
    """Create the two CRDs (when absent) and wait until the API server serves them."""
    for crd in CRDS:
        name = crd["metadata"]["name"]
        try:
            rest.request("GET", f"{BASE}/{name}")
        except NotFound:
            rest.request("POST", BASE, body=crd)

    def established() -> bool:
        for crd in CRDS:
            status = rest.request("GET", f"{BASE}/{crd['metadata']['name']}").get("status") or {}
            if not any(
                c["type"] == "Established" and c["status"] == "True"
                for c in status.get("conditions") or []
            ):
                return False
        return True

    eventually(established, 60)
