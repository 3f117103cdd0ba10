"""The live cluster's cache holds one waiting change per object: changes an object went through
while the agent's loop was busy come to the handlers as one, its latest state (an addition then
changes stays an addition, a deletion wins), so a long step does not keep every version the API
server sent; an object deleted and made again under its name keeps both changes, in order."""

from __future__ import annotations

from agent.api.kube.pod import Pod
from agent.kube.real.convert import load
from agent.kube.real.informer import ObjectCache
from agent.kube.real.resources import resource_of
from tests.support.kubeobjects import pod

PODS = resource_of(Pod)


def _pod(name: str, version: int, uid: str = "") -> Pod:
    manifest = pod(name, "default", {"app": "web"})
    manifest["metadata"] |= {"resourceVersion": str(version), "uid": uid or f"uid-{name}"}
    return load(Pod, manifest)


def _seen(cache: ObjectCache) -> list[tuple[str, str, str, str]]:
    seen: list[tuple[str, str, str, str]] = []
    for event in cache.take_events():
        assert isinstance(event.obj, Pod)
        meta = event.obj.metadata
        seen.append((event.type, meta.name or "", meta.resource_version or "", meta.uid or ""))
    return seen


def test_an_objects_changes_wait_as_one_its_latest() -> None:
    cache = ObjectCache()
    for version in range(1, 6):
        cache.put(PODS, _pod("web-1", version), "changed")
    cache.put(PODS, _pod("web-2", 7), "changed")
    assert cache.waiting() == 2
    assert _seen(cache) == [
        ("ADDED", "web-1", "5", "uid-web-1"),
        ("ADDED", "web-2", "7", "uid-web-2"),
    ]
    assert (cache.waiting(), _seen(cache)) == (0, [])


def test_a_change_after_delivery_is_a_modification_and_moves_last() -> None:
    cache = ObjectCache()
    cache.put(PODS, _pod("web-1", 1), "changed")
    cache.put(PODS, _pod("web-2", 2), "changed")
    cache.take_events()
    cache.put(PODS, _pod("web-1", 3), "changed")
    cache.put(PODS, _pod("web-2", 4), "changed")
    cache.put(PODS, _pod("web-1", 5), "changed")
    assert _seen(cache) == [
        ("MODIFIED", "web-2", "4", "uid-web-2"),
        ("MODIFIED", "web-1", "5", "uid-web-1"),
    ]


def test_a_deletion_wins_over_the_changes_before_it() -> None:
    cache = ObjectCache()
    cache.put(PODS, _pod("web-1", 1), "changed")
    cache.put(PODS, _pod("web-1", 2), "changed")
    assert cache.remove(PODS, _pod("web-1", 3))
    assert _seen(cache) == [("DELETED", "web-1", "3", "uid-web-1")]


def test_an_object_made_again_under_its_name_keeps_both_changes() -> None:
    cache = ObjectCache()
    cache.put(PODS, _pod("web-1", 1, uid="first"), "changed")
    cache.take_events()
    assert cache.remove(PODS, _pod("web-1", 2, uid="first"))
    cache.put(PODS, _pod("web-1", 3, uid="second"), "changed")
    assert _seen(cache) == [("DELETED", "web-1", "2", "first"), ("ADDED", "web-1", "3", "second")]


def test_an_older_version_neither_replaces_the_newer_nor_waits() -> None:
    cache = ObjectCache()
    cache.put(PODS, _pod("web-1", 5), "changed")
    assert not cache.put(PODS, _pod("web-1", 4), "changed")
    assert _seen(cache) == [("ADDED", "web-1", "5", "uid-web-1")]
