"""A new version read into the live cluster's cache shares with the version it replaces every part
that did not change (three levels down), so the earlier versions the adapter keeps for its merge
patches cost only what changed; the new version still reads as it was sent."""

from __future__ import annotations

import tracemalloc
from typing import Any

from agent.api.kube import Node
from agent.kube.real.convert import dump, load
from agent.kube.real.informer import ObjectCache
from agent.kube.real.resources import resource_of
from agent.kube.real.sharing import share

NODES = resource_of(Node)


def _node(version: int, heartbeat: str, label: str = "a") -> Node:
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
                    "lastTransitionTime": "2026-11-29T10:00:00Z",
                    "reason": f"Kubelet{kind}",
                    "message": f"kubelet reports {kind}",
                }
                for kind in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
            ],
        },
    }
    return load(Node, manifest)


def test_a_heartbeat_shares_everything_but_what_it_changed() -> None:
    old, new = _node(1, "2026-11-29T10:00:00Z"), _node(2, "2026-11-29T10:00:10Z")
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


def test_ten_heartbeats_kept_cost_a_third_less_than_ten_nodes() -> None:
    def kept(shared: bool) -> int:
        tracemalloc.start()
        versions = [_node(1, "2026-11-29T10:00:00Z")]
        for n in range(2, 12):
            new = _node(n, f"2026-11-29T10:00:{n:02d}Z")
            versions.append(share(versions[-1], new) if shared else new)
        size, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return size

    # what each version still costs is its own models (the Node, its metadata and status, each
    # condition) and the values that changed: about 70 % of an unshared version here
    assert kept(shared=True) < 0.8 * kept(shared=False)
