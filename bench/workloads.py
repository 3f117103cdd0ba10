"""Benchmark inputs: Karpenter's diverse synthetic pods, and realistic mixed deployments."""

from __future__ import annotations

import random
from dataclasses import dataclass

from agent.scheduling.pods import AffinityTerm, LabelMatcher, PodRef, PodShape, SpreadConstraint
from agent.scheduling.requirements import Requirements

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
MIB = 2**20
CPUS = (100, 250, 500, 1000, 1500)
MEMORIES = (100, 256, 512, 1024, 2048, 4096)
VALUES = ("a", "b", "c", "d", "e", "f", "g")
DISCOVERY_LABEL = "testing/cluster"
"""The label every pod of Karpenter's test helpers carries (value ``unspecified``)."""


def _shape(
    labels: dict[str, str],
    cpu: int,
    memory: int,
    *,
    spread: tuple[SpreadConstraint, ...] = (),
    affinity: tuple[AffinityTerm, ...] = (),
    anti_affinity: tuple[AffinityTerm, ...] = (),
) -> PodShape:
    return PodShape(
        namespace="default",
        labels=labels,
        requests={"cpu": cpu, "memory": memory * MIB, "pods": 1},
        alternatives=[Requirements()],
        spread=spread,
        affinity=affinity,
        anti_affinity=anti_affinity,
    )


def diverse_pods(count: int, seed: int = 42) -> list[PodRef]:
    """Karpenter's ``makeDiversePods`` (its scheduling benchmark's workload): ``count // 5`` pods
    of each of five kinds, in this order,

    * generic: label ``my-label`` from ``a``..``g``, no constraint;
    * zonal spread and hostname spread: label ``my-label`` from ``a``..``g``, and a spread
      (max skew 1, DoNotSchedule) whose selector is ``my-label`` with a value drawn on its own,
      independent of the pod's label;
    * zonal self pod-affinity: label ``my-affininity`` (Karpenter's spelling) from ``a``..``g``
      and required zone affinity to pods with that label;
    * hostname anti-affinity: label ``app: nginx`` and required hostname anti-affinity to
      ``app: nginx``, so no two of them share a node;

    then the remainder of ``count`` after ``5 * (count // 5)`` as generic pods at the end. Every
    pod requests a CPU from 100m, 250m, 500m, 1, 1.5 and a memory from 100, 256, 512, 1024, 2048,
    4096 MiB, drawn uniformly, and carries the ``testing/cluster: unspecified`` label Karpenter's
    test pods carry. Identical pods share one shape, as :func:`agent.scheduling.pods.shapes_of`
    makes the product's identical pods share one (a test holds the two to the same grouping).
    The values are drawn from a seeded generator of Python's (Karpenter's come from one
    ``math/rand`` stream shared by all its benchmarks, so its values depend on which ran first)."""
    rng = random.Random(seed)

    def value() -> str:
        return rng.choice(VALUES)

    def size() -> tuple[int, int]:
        return rng.choice(CPUS), rng.choice(MEMORIES)

    def tagged(labels: dict[str, str]) -> dict[str, str]:
        return {DISCOVERY_LABEL: "unspecified", **labels}

    fifth = count // 5
    pods: list[PodRef] = []
    shapes: dict[tuple[object, ...], PodShape] = {}

    def add(prefix: str, shape: PodShape) -> None:
        key = (
            tuple(sorted(shape.labels.items())),
            tuple(sorted(shape.requests.items())),
            shape.spread,
            shape.affinity,
            shape.anti_affinity,
        )
        pods.append(PodRef(f"{prefix}-{len(pods)}", "default", shapes.setdefault(key, shape)))

    def generic(n: int) -> None:
        for _ in range(n):
            own = tagged({"my-label": value()})
            add("generic", _shape(own, *size()))

    generic(fifth)
    for key in (ZONE, HOST):
        for _ in range(fifth):
            own = tagged({"my-label": value()})
            matcher = LabelMatcher((("my-label", value()),))
            spread = (SpreadConstraint(key, 1, matcher, True),)
            add("spread", _shape(own, *size(), spread=spread))
    for _ in range(fifth):
        picked = ("my-affininity", value())
        term = AffinityTerm(ZONE, LabelMatcher((picked,)), frozenset({"default"}))
        add("affinity", _shape(tagged(dict([picked])), *size(), affinity=(term,)))
    nginx = LabelMatcher((("app", "nginx"),))
    for _ in range(fifth):
        term = AffinityTerm(HOST, nginx, frozenset({"default"}))
        add("anti", _shape(tagged({"app": "nginx"}), *size(), anti_affinity=(term,)))
    generic(count - 5 * fifth)
    return pods


@dataclass(frozen=True)
class Deployment:
    """One workload of the realistic mix."""

    name: str
    share: float
    cpu: int
    memory_mib: int
    zonal_spread: bool = False


REALISTIC = (
    Deployment("web-frontend", 0.22, 250, 512, zonal_spread=True),
    Deployment("api", 0.18, 500, 1024, zonal_spread=True),
    Deployment("checkout", 0.06, 1000, 2048, zonal_spread=True),
    Deployment("workers", 0.16, 1000, 1536),
    Deployment("batch", 0.08, 2000, 4096),
    Deployment("cache", 0.06, 500, 6144, zonal_spread=True),
    Deployment("search", 0.05, 2000, 8192),
    Deployment("ml-inference", 0.04, 4000, 8192),
    Deployment("sidecarless-jobs", 0.10, 100, 256),
    Deployment("analytics", 0.05, 1500, 12288),
)
"""A service mix: CPU-heavy, memory-heavy and small pods; the user-facing ones spread by zone."""


def realistic_pods(count: int) -> list[PodRef]:
    """``count`` pods of :data:`REALISTIC` (identical pods of a deployment share one shape)."""
    pods: list[PodRef] = []
    remaining = count
    for index, deployment in enumerate(REALISTIC):
        replicas = remaining if index == len(REALISTIC) - 1 else round(count * deployment.share)
        remaining -= replicas
        labels = {"app": deployment.name}
        spread: tuple[SpreadConstraint, ...] = ()
        if deployment.zonal_spread:
            spread = (SpreadConstraint(ZONE, 1, LabelMatcher((("app", deployment.name),)), True),)
        shape = _shape(labels, deployment.cpu, deployment.memory_mib, spread=spread)
        pods.extend(PodRef(f"{deployment.name}-{i}", "default", shape) for i in range(replicas))
    return pods


def _selector(matcher: LabelMatcher | None) -> dict[str, object] | None:
    if matcher is None:
        return None
    selector: dict[str, object] = {"matchLabels": dict(matcher.match_labels)}
    if matcher.expressions:
        selector["matchExpressions"] = [
            {"key": key, "operator": operator, "values": list(values)}
            for key, operator, values in matcher.expressions
        ]
    return selector


def _affinity_term(term: AffinityTerm) -> dict[str, object]:
    out: dict[str, object] = {"topologyKey": term.key, "namespaces": sorted(term.namespaces)}
    selector = _selector(term.selector)
    if selector is not None:
        out["labelSelector"] = selector
    return out


def pod_manifest(pod: PodRef) -> dict[str, object]:
    """``pod`` as a core/v1 Pod manifest (what Karpenter reads): its labels, CPU and memory
    requests, zone or hostname spread and required pod (anti-)affinity, which is all the
    benchmark workloads use; raises ValueError for a shape with anything else."""
    shape = pod.shape
    unwritten = bool(
        shape.preferred
        or shape.tolerations
        or shape.preferred_affinity
        or shape.preferred_anti_affinity
        or set(shape.requests) - {"cpu", "memory", "pods"}
        or any(alternative for alternative in shape.alternatives)
    )
    if unwritten:
        raise ValueError(f"pod {pod.key}: only labels, requests, spread and affinity are written")
    requests = {
        "cpu": f"{shape.requests.get('cpu', 0)}m",
        "memory": str(shape.requests.get("memory", 0)),
    }
    spec: dict[str, object] = {
        "containers": [{"name": "app", "image": "app", "resources": {"requests": requests}}]
    }
    if shape.spread:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": c.max_skew,
                "topologyKey": c.key,
                "whenUnsatisfiable": "DoNotSchedule" if c.do_not_schedule else "ScheduleAnyway",
                **({"labelSelector": s} if (s := _selector(c.selector)) is not None else {}),
            }
            for c in shape.spread
        ]
    affinity: dict[str, object] = {}
    for kind, terms in (("podAffinity", shape.affinity), ("podAntiAffinity", shape.anti_affinity)):
        if terms:
            required = [_affinity_term(term) for term in terms]
            affinity[kind] = {"requiredDuringSchedulingIgnoredDuringExecution": required}
    if affinity:
        spec["affinity"] = affinity
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": pod.name, "namespace": pod.namespace, "labels": dict(shape.labels)},
        "spec": spec,
    }
