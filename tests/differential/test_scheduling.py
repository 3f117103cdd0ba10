"""Scheduling: driftwave's NodeClaims for pending pods against Karpenter's scheduler.

Generated workloads (a few deployments of identical pods: CPU and memory requests, node
selectors and required node affinity on well-known labels, hostname anti-affinity, hostname and
zone topology spread) over NodePools and a sample of the packaged EC2 catalog. Karpenter's
scheduler plans NodeClaims with instance-type *options* (the cloud provider picks the type at
launch), so what is compared is:

* with driftwave's Karpenter-order solver, for workloads without zone spread: the pods left
  unscheduled, the number of NodeClaims, which pods share a NodeClaim (as counts per deployment,
  since identical pods are interchangeable), and each NodeClaim's instance-type options (the
  same set) and cheapest price;
* with driftwave's own strategy, zone spread included: the pods left unscheduled, and, without
  zone spread, that its plan costs no more per hour than Karpenter's (each NodeClaim at its
  cheapest option).

Fixed cases compare what is deterministic in Karpenter's answer: pods per domain of a spread over
capacity types (with and without ``capacity-type Exists`` in the NodePool), of a zone spread with a
preferred zone, the nodes of a hostname spread with ``matchLabelKeys``, and pods with affinity to
pods of their own batch.

In the generated workloads, zone spread is left out of all but the unscheduled pods because
Karpenter's choice among equally-filled zones is not deterministic (it walks Go maps): the same
request can land a NodeClaim in another zone, at that zone's spot price and beside other pods,
from one call to the next.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.api.kube import Pod
from agent.api.nodepool import NodePool
from agent.catalog import Catalog
from agent.provisioning.pools import build_pool
from agent.scheduling.pods import shapes_of
from agent.scheduling.scheduler import Result
from agent.scheduling.strategy import solve
from common.kubemodel import parse_manifest
from tests.differential.objects import Manifest, nodepool
from tests.support.oracle import KarpenterOracle, instance_type_spec

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
TYPES = [
    f"{family}.{size}"
    for family in ("m5", "c5", "r5", "m6g", "c6g", "m7i", "c7i", "r7g")
    for size in ("large", "xlarge", "2xlarge", "4xlarge")
]
CPUS = ["100m", "250m", "500m", "1", "1500m", "3"]
MEMORIES = ["128Mi", "512Mi", "1Gi", "2Gi", "6Gi", "12Gi"]
SELECTORS: list[dict[str, str]] = [
    {"kubernetes.io/arch": "arm64"},
    {"kubernetes.io/arch": "amd64"},
    {"karpenter.sh/capacity-type": "on-demand"},
    {ZONE: "us-east-1b"},
    {"karpenter.k8s.aws/instance-category": "r"},
    {"karpenter.k8s.aws/instance-family": "c7i"},
]
AFFINITIES: list[dict[str, Any]] = [
    {"key": "karpenter.k8s.aws/instance-size", "operator": "NotIn", "values": ["large"]},
    {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["6"]},
    {"key": ZONE, "operator": "In", "values": ["us-east-1a", "us-east-1c"]},
]
POOL_REQUIREMENTS: list[list[dict[str, Any]]] = [
    [],
    [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}],
    [{"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m"]}],
    [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}],
]


@st.composite
def deployments(draw: st.DrawFn, name: str, zone_spread: bool) -> list[Manifest]:
    """The pods of one deployment: identical pods, named ``name-0``, ``name-1``, ...; now and
    then one pod per node (hostname anti-affinity) or spread over nodes, or over zones if
    ``zone_spread``."""
    container = {
        "name": "app",
        "image": "app:1",
        "resources": {
            "requests": {
                "cpu": draw(st.sampled_from(CPUS)),
                "memory": draw(st.sampled_from(MEMORIES)),
            }
        },
    }
    spec: Manifest = {"containers": [container]}
    if draw(st.integers(0, 3)) == 0:
        spec["nodeSelector"] = draw(st.sampled_from(SELECTORS))
    if draw(st.integers(0, 3)) == 0:
        terms = [{"matchExpressions": [draw(st.sampled_from(AFFINITIES))]}]
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
            }
        }
    if draw(st.integers(0, 5)) == 0:
        own = {"labelSelector": {"matchLabels": {"app": name}}, "topologyKey": HOSTNAME}
        spec.setdefault("affinity", {})["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [own]
        }
    elif draw(st.integers(0, 5)) == 0:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": draw(st.integers(1, 2)),
                "topologyKey": HOSTNAME,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": name}},
            }
        ]
    elif zone_spread and draw(st.integers(0, 3)) == 0:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": name}},
            }
        ]
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"{name}-{i}", "namespace": "default", "labels": {"app": name}},
            "spec": spec,
        }
        for i in range(draw(st.integers(1, 6)))
    ]


@st.composite
def workloads(draw: st.DrawFn, zone_spread: bool = True) -> list[Manifest]:
    """One to four deployments."""
    count = draw(st.integers(1, 4))
    return [pod for i in range(count) for pod in draw(deployments(f"app{i}", zone_spread))]


def ours(pools: list[Manifest], pods: list[Manifest], strategy: str) -> Result:
    catalog = Catalog.packaged()
    types = [catalog.get(name) for name in TYPES]
    planned = [
        build_pool(
            parse_manifest(NodePool, pool),
            catalog,
            types=types,
            offerings=[catalog.offerings(t) for t in types],
        )
        for pool in pools
    ]
    refs = shapes_of([parse_manifest(Pod, pod) for pod in pods])
    return solve(planned, refs, strategy="karpenter" if strategy == "karpenter" else "driftwave")


def karpenters(
    oracle: KarpenterOracle, pools: list[Manifest], pods: list[Manifest]
) -> dict[str, Any]:
    catalog = Catalog.packaged()
    specs = [instance_type_spec(catalog.get(name), catalog.offerings(name)) for name in TYPES]
    return oracle.ask("schedule", pods=pods, nodePools=pools, instanceTypes=specs)


def deployment(pod: str) -> str:
    """``default/app1-3`` → ``app1``."""
    return pod.split("/")[-1].rsplit("-", 1)[0]


def shape(pods: list[str]) -> tuple[tuple[str, int], ...]:
    """How many pods of each deployment a NodeClaim holds."""
    return tuple(sorted(Counter(map(deployment, pods)).items()))


def shares(claims: list[list[str]]) -> Counter[tuple[tuple[str, int], ...]]:
    """Which deployments' pods share a NodeClaim, and how many of each."""
    return Counter(shape(pods) for pods in claims)


def spread(pods: list[Manifest]) -> bool:
    """Whether any pod spreads over zones (see the module docstring)."""
    return any("topologySpreadConstraints" in pod["spec"] for pod in pods)


SCHEDULING = settings(max_examples=40, deadline=None)


@SCHEDULING
@given(pods=workloads(zone_spread=False), requirements=st.sampled_from(POOL_REQUIREMENTS))
def test_karpenter_order_plans_karpenters_nodeclaims(
    karpenter_oracle: KarpenterOracle, pods: list[Manifest], requirements: list[dict[str, Any]]
) -> None:
    pools = [nodepool(requirements=requirements)]
    theirs = karpenters(karpenter_oracle, pools, pods)
    result = ours(pools, pods, "karpenter")
    assert set(result.errors) == set(theirs["unschedulable"])
    assert len(result.claims) == len(theirs["nodeClaims"])
    our_claims = [sorted(p.key for p in claim.pods) for claim in result.claims]
    assert shares(our_claims) == shares([claim["pods"] for claim in theirs["nodeClaims"]])
    our_options = Counter(
        (shape(pods), frozenset(name for name, _ in claim.options()), claim.options()[0][1])
        for pods, claim in zip(our_claims, result.claims, strict=True)
    )
    their_options = Counter(
        (shape(claim["pods"]), frozenset(claim["instanceTypes"]), claim["cheapestPrice"])
        for claim in theirs["nodeClaims"]
    )
    assert our_options == their_options


@SCHEDULING
@given(pods=workloads(), requirements=st.sampled_from(POOL_REQUIREMENTS))
def test_driftwave_schedules_what_karpenter_schedules_for_no_more(
    karpenter_oracle: KarpenterOracle, pods: list[Manifest], requirements: list[dict[str, Any]]
) -> None:
    pools = [nodepool(requirements=requirements)]
    theirs = karpenters(karpenter_oracle, pools, pods)
    result = ours(pools, pods, "driftwave")
    assert set(result.errors) == set(theirs["unschedulable"])
    if not spread(pods):
        their_cost = sum(claim["cheapestPrice"] for claim in theirs["nodeClaims"])
        assert result.hourly_cost <= their_cost + 1e-9


@st.composite
def nodepools(draw: st.DrawFn) -> list[Manifest]:
    """Two or three NodePools, some of equal weight, with requirements of their own."""
    names = draw(st.lists(st.sampled_from(["alpha", "beta", "gamma"]), min_size=2, unique=True))
    return [
        nodepool(
            name,
            requirements=draw(st.sampled_from(POOL_REQUIREMENTS)),
            weight=draw(st.sampled_from([None, 10, 20])),
        )
        for name in names
    ]


@SCHEDULING
@given(pods=workloads(zone_spread=False), pools=nodepools())
def test_nodepools_are_tried_in_karpenters_order(
    karpenter_oracle: KarpenterOracle, pods: list[Manifest], pools: list[Manifest]
) -> None:
    theirs = karpenters(karpenter_oracle, pools, pods)
    result = ours(pools, pods, "karpenter")
    assert set(result.errors) == set(theirs["unschedulable"])
    our_pools = Counter(
        (claim.pool.name, shape([p.key for p in claim.pods])) for claim in result.claims
    )
    their_pools = Counter(
        (claim["nodePool"], shape(claim["pods"])) for claim in theirs["nodeClaims"]
    )
    assert our_pools == their_pools


CAPACITY = "karpenter.sh/capacity-type"


def _pods(
    name: str, count: int, spec: Manifest, labels: dict[str, str] | None = None
) -> list[Manifest]:
    """``count`` pods named ``name-i`` requesting 500m each, with ``spec`` fields."""
    container = {"name": "app", "image": "app:1", "resources": {"requests": {"cpu": "500m"}}}
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{name}-{i}",
                "namespace": "default",
                "labels": labels or {"app": name},
            },
            "spec": {"containers": [container], **spec},
        }
        for i in range(count)
    ]


def _their_domains(theirs: dict[str, Any], key: str) -> list[int]:
    """Pods per single domain of ``key`` in Karpenter's NodeClaims, sorted."""
    counts: Counter[str] = Counter()
    for claim in theirs["nodeClaims"]:
        (requirement,) = [r for r in claim["requirements"] if r["key"] == key]
        assert requirement["operator"] == "In", requirement
        (value,) = requirement["values"]
        counts[value] += len(claim["pods"])
    return sorted(counts.values())


def _our_domains(result: Result, key: str) -> list[int]:
    counts: Counter[str] = Counter()
    for claim in result.claims:
        (value,) = claim.requirements.get(key).values
        counts[value] += len(claim.pods)
    return sorted(counts.values())


def _spread(key: str, app: str) -> Manifest:
    return {
        "maxSkew": 1,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": app}},
    }


CASES: dict[str, tuple[list[Manifest], list[Manifest], str]] = {
    "capacity-type spread": (
        [nodepool()],
        _pods("web", 4, {"topologySpreadConstraints": [_spread(CAPACITY, "web")]}),
        CAPACITY,
    ),
    "capacity-type spread, capacity-type Exists": (
        [nodepool(requirements=[{"key": CAPACITY, "operator": "Exists"}])],
        _pods("web", 4, {"topologySpreadConstraints": [_spread(CAPACITY, "web")]}),
        CAPACITY,
    ),
    "zone spread with a preferred zone": (
        [nodepool()],
        _pods(
            "web",
            6,
            {
                "topologySpreadConstraints": [_spread(ZONE, "web")],
                "affinity": {
                    "nodeAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "weight": 10,
                                "preference": {
                                    "matchExpressions": [
                                        {"key": ZONE, "operator": "In", "values": ["us-east-1a"]}
                                    ]
                                },
                            }
                        ]
                    }
                },
            },
        ),
        ZONE,
    ),
    "hostname spread with matchLabelKeys": (
        [nodepool()],
        [
            *_pods(
                "a",
                2,
                {
                    "topologySpreadConstraints": [
                        {**_spread(HOSTNAME, "web"), "matchLabelKeys": ["rev"]}
                    ]
                },
                {"app": "web", "rev": "1"},
            ),
            *_pods(
                "b",
                2,
                {
                    "topologySpreadConstraints": [
                        {**_spread(HOSTNAME, "web"), "matchLabelKeys": ["rev"]}
                    ]
                },
                {"app": "web", "rev": "2"},
            ),
        ],
        HOSTNAME,
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_topology_domains_are_karpenters(karpenter_oracle: KarpenterOracle, case: str) -> None:
    pools, pods, key = CASES[case]
    theirs = karpenters(karpenter_oracle, pools, pods)
    result = ours(pools, pods, "karpenter")
    assert set(result.errors) == set(theirs["unschedulable"])
    if key == HOSTNAME:
        assert len(result.claims) == len(theirs["nodeClaims"])
        assert sorted(len(c.pods) for c in result.claims) == sorted(
            len(c["pods"]) for c in theirs["nodeClaims"]
        )
    else:
        assert _our_domains(result, key) == _their_domains(theirs, key)


def test_affinity_to_pods_of_the_same_batch_is_karpenters(
    karpenter_oracle: KarpenterOracle,
) -> None:
    follow = {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": HOSTNAME}
    big = {"name": "app", "image": "app:1", "resources": {"requests": {"cpu": "1500m"}}}
    web = [
        {
            **pod,
            "spec": {
                "containers": [big],
                "affinity": {
                    "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [follow]}
                },
            },
        }
        for pod in _pods("web", 2, {})
    ]
    pods = [*web, *_pods("db", 1, {})]
    pools = [nodepool()]
    theirs = karpenters(karpenter_oracle, pools, pods)
    result = ours(pools, pods, "karpenter")
    assert set(result.errors) == set(theirs["unschedulable"]) == set()
    assert shares([sorted(p.key for p in c.pods) for c in result.claims]) == shares(
        [claim["pods"] for claim in theirs["nodeClaims"]]
    )
