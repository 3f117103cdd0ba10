"""The benchmark workloads written as Pod manifests read back as the same pods."""

from __future__ import annotations

import pytest

from agent.api.base import parse_manifest
from agent.api.kube import Pod
from agent.scheduling.pods import PodRef, shape_of
from bench.workloads import diverse_pods, pod_manifest, realistic_pods


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
