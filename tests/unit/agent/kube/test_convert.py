"""Reading API objects into the agent's models: ``metadata.managedFields`` is dropped as an
object is read (the agent never reads it; kept, it doubles the cache's memory), and so are a
pod's volumes, its containers' volume mounts (the token volume's name is each pod's own) and
their statuses, and a Node's conditions' heartbeat times;
nothing else the model knows is."""

from __future__ import annotations

from typing import Any

from agent.api.kube.node import Node
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


def _with_token_volume(name: str) -> dict[str, Any]:
    """A pod as the API server stores it once the ServiceAccount admission injected its token."""
    data = _pod(name=name)
    volume = f"kube-api-access-{name[-5:]}"
    mount = {"name": volume, "readOnly": True, "mountPath": "/var/run/secrets/token"}
    data["spec"]["volumes"] = [{"name": volume, "projected": {"sources": []}}]
    for kind in ("containers", "initContainers"):
        data["spec"][kind] = [{"name": kind, "image": "pause", "volumeMounts": [mount]}]
    running = {"running": {"startedAt": "2026-11-29T13:03:32Z"}}
    data["status"] = {
        "phase": "Running",
        "containerStatuses": [{"name": "containers", "ready": True, "state": running}],
    }
    return data


def test_a_pods_volumes_mounts_and_container_statuses_are_dropped_as_it_is_read() -> None:
    data = _with_token_volume("web-abcde")
    pod = load(Pod, data)
    assert not pod.spec.volumes
    assert not any(c.volume_mounts for c in (*pod.spec.containers, *pod.spec.init_containers))
    assert pod.spec.containers[0].image == "pause"
    assert pod.status is not None
    assert pod.status.phase == "Running"
    assert not pod.status.container_statuses
    assert data["spec"]["containers"][0]["volumeMounts"], "the caller's data is left as it was"
    other = load(Pod, _with_token_volume("web-fghij"))
    assert other.spec.containers == pod.spec.containers, "two pods of a workload: one container"


def test_a_nodes_conditions_are_read_without_their_heartbeats() -> None:
    ready = {
        "type": "Ready",
        "status": "True",
        "lastHeartbeatTime": "2026-11-29T13:03:32Z",
        "lastTransitionTime": "2026-11-29T13:00:00Z",
        "reason": "KubeletReady",
    }
    data = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "node-1"},
        "status": {"conditions": [ready], "capacity": {"cpu": "4"}},
    }
    node = load(Node, data)
    assert node.status is not None
    [condition] = node.status.conditions
    assert condition.last_heartbeat_time is None
    assert (condition.type, condition.status, condition.reason) == ("Ready", "True", "KubeletReady")
    assert condition.last_transition_time == "2026-11-29T13:00:00Z"
    assert node.status.capacity == {"cpu": "4"}
    assert "lastHeartbeatTime" in ready, "the caller's data is left as it was"
