"""A new version read into the live cluster's cache shares with the version it replaces every part
that did not change (three levels down), so the earlier versions the adapter keeps for its merge
patches cost only what changed; the new version still reads as it was sent."""

from __future__ import annotations

import tracemalloc
from typing import Any

from pydantic import BaseModel

from agent.api.kube import Node, Pod
from agent.kube.real.convert import dump, load
from agent.kube.real.informer import ObjectCache
from agent.kube.real.resources import resource_of
from agent.kube.real.sharing import share

NODES = resource_of(Node)


def _node(
    version: int, heartbeat: str, label: str = "a", transition: str = "2026-11-29T10:00:00Z"
) -> Node:
    """A new decode of a Node each call, as the informer reads every version."""
    manifest: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "node-1",
            "uid": "u-1",
            "resourceVersion": str(version),
            "labels": {f"example.com/label-{n}": label for n in range(20)},
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {
            "providerID": "aws:///us-east-1a/i-0123456789abcdef0",
            "taints": [{"key": "dedicated", "value": "web", "effect": "NoSchedule"}],
        },
        "status": {
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "58"},
            "allocatable": {"cpu": "3920m", "memory": "15Gi", "pods": "58"},
            "conditions": [
                {
                    "type": kind,
                    "status": "True" if kind == "Ready" else "False",
                    "lastHeartbeatTime": heartbeat,
                    "lastTransitionTime": transition,
                    "reason": f"Kubelet{kind}",
                    "message": f"kubelet reports {kind}",
                }
                for kind in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
            ],
        },
    }
    return load(Node, manifest)


def test_a_heartbeat_changes_only_the_nodes_metadata() -> None:
    # a Node's conditions are read without their lastHeartbeatTime (agent.kube.real.convert)
    old, new = _node(1, "2026-11-29T10:00:00Z"), _node(2, "2026-11-29T10:00:10Z")
    share(old, new)
    assert new.status is old.status
    assert new.spec is old.spec
    assert new.metadata.labels is old.metadata.labels
    assert new.metadata is not old.metadata  # its resourceVersion changed
    assert new.metadata.resource_version == "2"


def test_a_changed_condition_shares_everything_but_what_it_changed() -> None:
    old = _node(1, "2026-11-29T10:00:00Z")
    new = _node(2, "2026-11-29T10:00:10Z", transition="2026-11-29T10:00:10Z")
    sent = dump(new)
    share(old, new)
    assert new.spec is old.spec
    assert new.metadata.labels is old.metadata.labels
    assert new.metadata.annotations is old.metadata.annotations
    assert new.metadata is not old.metadata  # its resourceVersion changed
    assert new.status is not None
    assert old.status is not None
    assert new.status.capacity is old.status.capacity
    assert new.status.conditions is not old.status.conditions
    for was, now in zip(old.status.conditions, new.status.conditions, strict=True):
        assert now is not was
        assert now.message is was.message
    assert dump(new) == sent, "sharing changes no value"


def test_a_changed_part_is_not_shared() -> None:
    old, new = _node(1, "2026-11-29T10:00:00Z"), _node(2, "2026-11-29T10:00:00Z", label="b")
    share(old, new)
    assert new.metadata.labels is not old.metadata.labels
    assert set(new.metadata.labels.values()) == {"b"}
    assert new.spec is old.spec


def test_the_cache_shares_a_new_version_with_the_one_it_replaces() -> None:
    cache = ObjectCache()
    first = _node(1, "2026-11-29T10:00:00Z")
    cache.put(NODES, first, "changed")
    second = _node(2, "2026-11-29T10:00:10Z")
    cache.put(NODES, second, "changed")
    held = cache.get(NODES, ("", "node-1"))
    assert held is second
    assert held.spec is first.spec
    stale = _node(1, "2026-11-29T09:59:50Z", label="z")
    assert not cache.put(NODES, stale, "changed")
    assert stale.metadata.labels is not first.metadata.labels, "a refused version is left alone"


def _kept(shared: bool, transitions: bool) -> int:
    """The memory ten versions of a Node after the first take, each a heartbeat later (and, with
    ``transitions``, each condition's transition too), shared with the version before or not."""
    tracemalloc.start()
    versions = [_node(1, "2026-11-29T10:00:00Z")]
    for n in range(2, 12):
        stamp = f"2026-11-29T10:00:{n:02d}Z"
        new = _node(n, stamp, transition=stamp if transitions else "2026-11-29T10:00:00Z")
        versions.append(share(versions[-1], new) if shared else new)
    size, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return size


def test_ten_changed_conditions_kept_cost_a_third_less_than_ten_nodes() -> None:
    # what each version still costs is its own models (the Node, its metadata and status, each
    # condition) and the values that changed: about 70 % of an unshared version here
    assert _kept(shared=True, transitions=True) < 0.8 * _kept(shared=False, transitions=True)


def test_ten_heartbeats_stored_and_kept_cost_under_a_third_of_ten_nodes() -> None:
    # a heartbeat changes only the Node's metadata once its conditions are read without their
    # lastHeartbeatTime: each version the cache stores costs its Node and metadata models and
    # little else (about 0.22 of an unshared version here; 0.7 with the heartbeats kept)
    def kept(stored: bool) -> int:
        cache = ObjectCache()
        tracemalloc.start()
        versions = []
        for n in range(1, 12):
            new = _node(n, f"2026-11-29T10:00:{n:02d}Z")
            if stored:
                cache.put(NODES, new, "changed")
            versions.append(new)
        size, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return size

    assert kept(stored=True) < 0.3 * kept(stored=False)


PODS = resource_of(Pod)


def _pod(n: int) -> Pod:
    """A pod of one Deployment as a kubelet reports it running (its own decode each call)."""
    stamp = f"2026-11-29T13:{n // 60:02d}:{n % 60:02d}Z"
    manifest: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"app-bd69cf5b6-{n:05d}",
            "generateName": "app-bd69cf5b6-",
            "namespace": "default",
            "uid": f"646b42fe-5e09-4886-9e79-{n:012d}",
            "resourceVersion": str(1000 + n),
            "creationTimestamp": stamp,
            "labels": {"app": "app", "pod-template-hash": "bd69cf5b6"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "app-bd69cf5b6",
                    "uid": "a4851737-e1cf-437e-8345-8c131b1095d2",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "app:1",
                    "resources": {"requests": {"cpu": "380m", "memory": "1Gi"}},
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "imagePullPolicy": "IfNotPresent",
                }
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "nodeName": f"ip-10-0-{n // 10}-{n % 10}.ec2.internal",
            "schedulerName": "default-scheduler",
            "tolerations": [
                {
                    "key": f"node.kubernetes.io/{taint}",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
                for taint in ("not-ready", "unreachable")
            ],
            "priority": 0,
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": kind, "status": "True", "lastTransitionTime": stamp}
                for kind in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "hostIP": "10.0.0.1",
            "podIP": f"10.64.{n // 250}.{n % 250}",
            "startTime": stamp,
            "qosClass": "Burstable",
        },
    }
    return load(Pod, manifest)


def test_a_new_object_shares_with_the_one_stored_before_it() -> None:
    cache = ObjectCache()
    first, second = _pod(1), _pod(2)
    sent = dump(second)
    cache.put(PODS, first, "changed")
    cache.put(PODS, second, "changed")
    assert second.spec.containers is first.spec.containers
    assert second.spec.tolerations is first.spec.tolerations
    assert second.metadata.owner_references is first.metadata.owner_references
    assert second.metadata.labels is first.metadata.labels
    assert second.spec is not first.spec, "their nodes differ"
    assert dump(second) == sent, "sharing changes no value"


def test_every_model_stored_holds_the_shared_fields_set_of_its_names() -> None:
    cache = ObjectCache()
    pods = [_pod(n) for n in range(3)]
    sent = [p.to_manifest() for p in pods]  # exclude_unset: read from the fields-sets
    for pod in pods:
        cache.put(PODS, pod, "changed")
    sets: dict[frozenset[str], set[int]] = {}
    for pod in pods:
        assert pod.status is not None
        models: list[BaseModel] = [pod, pod.metadata, pod.spec, pod.status]
        models += [*pod.spec.containers, *pod.status.conditions, *pod.spec.tolerations]
        for model in models:
            fields = model.__pydantic_fields_set__
            sets.setdefault(frozenset(fields), set()).add(id(fields))
    assert all(len(ids) == 1 for ids in sets.values()), "one set object per set of names"
    assert [p.to_manifest() for p in pods] == sent
    copied = pods[0].model_copy(update={"spec": pods[1].spec})
    assert copied.__pydantic_fields_set__ is not pods[0].__pydantic_fields_set__
    assert pods[0].to_manifest() == sent[0], "a copy's change leaves the shared set alone"


def test_a_hundred_pods_stored_cost_under_half_as_much_as_decoded() -> None:
    def kept(stored: bool) -> int:
        cache = ObjectCache()
        tracemalloc.start()
        pods = [_pod(n) for n in range(100)]
        if stored:
            for pod in pods:
                cache.put(PODS, pod, None)
        size, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert len(pods) == 100
        return size

    # measured: 0.38 of the decoded pods' size (their names, addresses, times and status
    # models remain each pod's own)
    assert kept(stored=True) < 0.5 * kept(stored=False)
