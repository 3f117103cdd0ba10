"""Reading API objects into the agent's models: ``metadata.managedFields`` is dropped as an
object is read (the agent never reads it; kept, it doubles the cache's memory), and nothing else
the model knows is."""

from __future__ import annotations

from typing import Any

from agent.api.kube.pod import Pod
from agent.kube.real.convert import load

MANAGED = [
    {
        "manager": "kube-controller-manager",
        "operation": "Update",
        "apiVersion": "v1",
        "time": "2026-11-29T05:00:00Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}}},
    }
]


def _pod(**metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web-1", "namespace": "default", "labels": {"app": "web"}, **metadata},
        "spec": {"containers": [{"name": "app", "image": "pause"}], "nodeName": "node-1"},
    }


def test_managed_fields_are_dropped_as_an_object_is_read() -> None:
    data = _pod(managedFields=MANAGED)
    pod = load(Pod, data)
    assert pod.metadata.managed_fields is None
    assert pod.metadata.labels == {"app": "web"}
    assert pod.spec.node_name == "node-1"
    assert data["metadata"]["managedFields"] == MANAGED  # the caller's data is left as it was


def test_an_object_reads_the_same_with_or_without_them() -> None:
    assert load(Pod, _pod(managedFields=MANAGED * 4)) == load(Pod, _pod())
