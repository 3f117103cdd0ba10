"""``ShapeCache``: a pod's shape is computed once, whether its versions share their objects (the
simulation's copies) or are decoded anew each time (an API server's watch)."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from agent.api.kube import Pod
from agent.scheduling import pods
from common.kubemodel import parse_manifest


def _pod(node: str | None = None, team: str = "web") -> Pod:
    """A new decode of the same pod each call (as each watch event is)."""
    spec: dict[str, Any] = {
        "containers": [{"name": "app", "resources": {"requests": {"cpu": "500m"}}}],
        "tolerations": [{"key": "dedicated", "operator": "Exists"}],
    }
    if node is not None:
        spec["nodeName"] = node
    return parse_manifest(
        Pod,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "app-1",
                "namespace": "shop",
                "uid": "u-1",
                "labels": {"team": team},
            },
            "spec": spec,
        },
    )


@pytest.fixture
def described(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The pods described in full (their signatures computed)."""
    seen: list[str] = []
    signature = pods._signature

    def counting(pod: Pod) -> str:
        seen.append(pod.metadata.name or "")
        return signature(pod)

    monkeypatch.setattr(pods, "_signature", counting)
    return seen


def test_a_pods_later_versions_reuse_its_shape_while_its_parts_are_equal(
    described: list[str],
) -> None:
    cache = pods.ShapeCache()
    first = cache.ref(_pod())
    bound = cache.ref(_pod(node="node-a"))
    assert described == ["app-1"]
    assert bound.shape is first.shape
    assert (first.node_name, bound.node_name) == (None, "node-a")
    relabelled = cache.ref(_pod(node="node-a", team="payments"))
    assert described == ["app-1", "app-1"]
    assert relabelled.shape.labels == {"team": "payments"}


def test_the_same_version_is_answered_without_a_new_ref(described: list[str]) -> None:
    cache = pods.ShapeCache()
    pod = _pod()
    assert cache.ref(pod) is cache.ref(pod)
    assert described == ["app-1"]


def test_only_a_pods_latest_version_is_held_by_its_uid() -> None:
    cache = pods.ShapeCache()
    cache.MAX_PARTS = 1  # the first version's parts leave the identity table at the next pod
    old = _pod()
    containers = old.spec.containers
    cache.ref(old)
    cache.ref(_pod(node="node-a"))
    cache.shape(_pod(team="other"))  # another pod's parts take the identity table's place
    del old
    gc.collect()
    holders = [r for r in gc.get_referrers(containers) if isinstance(r, tuple)]
    assert holders == [], "the cache still holds the first version's containers"
