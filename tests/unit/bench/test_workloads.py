"""The benchmark workloads: Karpenter's ``makeDiversePods`` exactly, and written as Pod
manifests that read back as the same pods."""

from __future__ import annotations

from collections import Counter

import pytest

from agent.api.kube import Pod
from agent.scheduling.pods import (
    AffinityTerm,
    LabelMatcher,
    PodRef,
    SpreadConstraint,
    shape_of,
    shapes_of,
)
from bench.workloads import diverse_pods, pod_manifest, realistic_pods
from common.kubemodel import parse_manifest

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
VALUES = set("abcdefg")
MIB = 2**20


def _kind(pod: PodRef) -> str:
    shape = pod.shape
    if shape.spread:
        return f"spread {shape.spread[0].key}"
    if shape.affinity:
        return "affinity"
    if shape.anti_affinity:
        return "anti"
    return "generic"


@pytest.mark.parametrize("count", [1, 4, 5, 7, 50, 503, 5000])
def test_five_kinds_in_karpenters_order_with_the_remainder_generic_at_the_end(count: int) -> None:
    pods = diverse_pods(count)
    fifth = count // 5
    expected = (
        ["generic"] * fifth
        + [f"spread {ZONE}"] * fifth
        + [f"spread {HOST}"] * fifth
        + ["affinity"] * fifth
        + ["anti"] * fifth
        + ["generic"] * (count - 5 * fifth)
    )
    assert [_kind(pod) for pod in pods] == expected
    assert len({pod.key for pod in pods}) == count


def test_identical_pods_share_a_shape_as_the_products_reading_of_their_manifests_does() -> None:
    pods = diverse_pods(1000)
    read = shapes_of(parse_manifest(Pod, pod_manifest(pod)) for pod in pods)

    def groups(refs: list[PodRef]) -> set[frozenset[int]]:
        by_shape: dict[int, set[int]] = {}
        for index, ref in enumerate(refs):
            by_shape.setdefault(id(ref.shape), set()).add(index)
        return {frozenset(members) for members in by_shape.values()}

    ours = groups(pods)
    assert ours == groups(read)
    assert 1 < len(ours) < len(pods)  # some pods are identical, not all


def test_labels_selectors_and_sizes_are_karpenters() -> None:
    pods = diverse_pods(5000)
    kinds: dict[str, list[PodRef]] = {}
    for pod in pods:
        kinds.setdefault(_kind(pod), []).append(pod)
    for pod in pods:
        shape = pod.shape
        assert shape.namespace == "default"
        assert dict(shape.requests).keys() == {"cpu", "memory", "pods"}
        assert shape.requests["cpu"] in {100, 250, 500, 1000, 1500}
        assert shape.requests["memory"] in {m * MIB for m in (100, 256, 512, 1024, 2048, 4096)}
        assert shape.labels["testing/cluster"] == "unspecified"
        assert not shape.preferred
        assert not shape.tolerations
        assert not shape.preferred_affinity
        assert not shape.preferred_anti_affinity
    # every value of each set is drawn
    assert {p.shape.requests["cpu"] for p in pods} == {100, 250, 500, 1000, 1500}
    assert len({p.shape.requests["memory"] for p in pods}) == 6
    for pod in kinds["generic"]:
        assert set(pod.shape.labels) == {"testing/cluster", "my-label"}
    for key in (ZONE, HOST):
        spread = kinds[f"spread {key}"]
        for pod in spread:
            assert set(pod.shape.labels) == {"testing/cluster", "my-label"}
            (constraint,) = pod.shape.spread
            assert constraint.key == key
            assert (constraint.max_skew, constraint.do_not_schedule) == (1, True)
            assert constraint.selector is not None
            ((label, value),) = constraint.selector.match_labels
            assert label == "my-label"
            assert value in VALUES
        # the selector's value is drawn apart from the pod's own label
        own = [p.shape.labels["my-label"] for p in spread]
        selected = [dict(_matcher(p.shape.spread[0]).match_labels)["my-label"] for p in spread]
        assert set(own) == set(selected) == VALUES
        assert any(a != b for a, b in zip(own, selected, strict=True))
    for pod in kinds["affinity"]:
        (term,) = pod.shape.affinity
        value = pod.shape.labels["my-affininity"]  # Karpenter's spelling
        assert set(pod.shape.labels) == {"testing/cluster", "my-affininity"}
        assert term == AffinityTerm(ZONE, LabelMatcher((("my-affininity", value),)), _default())
    assert {p.shape.labels["my-affininity"] for p in kinds["affinity"]} == VALUES
    for pod in kinds["anti"]:
        assert dict(pod.shape.labels) == {"testing/cluster": "unspecified", "app": "nginx"}
        (term,) = pod.shape.anti_affinity
        assert term == AffinityTerm(HOST, LabelMatcher((("app", "nginx"),)), _default())
    assert Counter(_kind(p) for p in pods)["anti"] == 1000  # so 1,000 nodes at least


def _matcher(constraint: SpreadConstraint) -> LabelMatcher:
    assert constraint.selector is not None
    return constraint.selector


def _default() -> frozenset[str]:
    return frozenset({"default"})


@pytest.mark.parametrize("pods", [diverse_pods(50), realistic_pods(40)], ids=["diverse", "mix"])
def test_a_written_pod_reads_back_as_its_shape(pods: list[PodRef]) -> None:
    for pod in pods:
        read = shape_of(parse_manifest(Pod, pod_manifest(pod)))
        shape = pod.shape
        assert dict(read.requests) == dict(shape.requests)
        assert dict(read.labels) == dict(shape.labels)
        assert tuple(read.spread) == tuple(shape.spread)
        assert tuple(read.affinity) == tuple(shape.affinity)
        assert tuple(read.anti_affinity) == tuple(shape.anti_affinity)
