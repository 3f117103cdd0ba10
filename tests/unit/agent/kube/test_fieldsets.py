"""Models given shared fields-sets (:mod:`agent.kube.fieldsets`): one set object per distinct set
of names, what ``exclude_unset`` dumps read unchanged, a copy's changes kept to the copy."""

from __future__ import annotations

from agent.api.kube import Pod
from agent.kube.fieldsets import FieldSets
from common.kubemodel import parse_manifest


def _pod(name: str, cpu: str) -> Pod:
    return parse_manifest(
        Pod,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
            "spec": {
                "containers": [
                    {"name": "web", "image": "web:1", "resources": {"requests": {"cpu": cpu}}}
                ],
                "tolerations": [{"key": "dedicated", "operator": "Exists"}],
            },
        },
    )


def _models(pod: Pod) -> list[object]:
    return [pod, pod.metadata, pod.spec, *pod.spec.containers, *pod.spec.tolerations]


def test_equal_sets_of_names_become_one_set() -> None:
    sets = FieldSets()
    first, second = _pod("web-1", "1"), _pod("web-2", "2")
    written = [first.to_manifest(), second.to_manifest()]
    sets.share(first)
    sets.share(second)
    for one, other in zip(_models(first), _models(second), strict=True):
        assert one.__pydantic_fields_set__ is other.__pydantic_fields_set__  # type: ignore[attr-defined]
    assert [first.to_manifest(), second.to_manifest()] == written, "the dumps read the same"


def test_a_copy_changes_its_own_set_and_gets_the_shared_one_when_stored() -> None:
    sets = FieldSets()
    stored = _pod("web-1", "1")
    sets.share(stored)
    written = stored.to_manifest()
    copied = stored.model_copy(update={"status": None})
    assert "status" in copied.__pydantic_fields_set__
    assert "status" not in stored.__pydantic_fields_set__, "model_copy copied the set first"
    assert stored.to_manifest() == written
    sets.share(copied)
    again = stored.model_copy(update={"status": None})
    sets.share(again)
    assert again.__pydantic_fields_set__ is copied.__pydantic_fields_set__
    assert again.metadata is stored.metadata, "the parts a copy keeps were shared already"
