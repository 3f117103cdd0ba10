"""Instance types and offerings from DescribeInstanceTypes / DescribeInstanceTypeOfferings and
spot prices from DescribeSpotPriceHistory, against moto's server; the computed allocatable
resources compared with the packaged catalog's (the differences are the documented ones)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclass_status import EC2NodeClassStatus, ResolvedSubnet
from agent.api.nodepool import NodePool
from agent.catalog.loader import packaged_instance_types
from agent.clock import VirtualClock
from agent.cloud.aws.instancetypes import AWSInstanceTypes
from agent.cloud.aws.pricing import AWSPrices
from agent.cloud.aws.session import AWSClients, AWSConfig
from agent.cloud.unavailable import UnavailableOfferings
from common.kubemodel import parse_manifest
from tests.support.awsproxy import Answer, AWSProxy, Request

REGION = "us-east-1"
NOW = datetime(2026, 1, 10, tzinfo=UTC)
MIB = 2**20
SPOT = [  # (type, zone, price, hours ago): the latest per type and zone counts
    ("m5.large", "us-east-1a", "0.0410", 5),
    ("m5.large", "us-east-1a", "0.0380", 1),
    ("m5.large", "us-east-1b", "0.0420", 2),
]


@dataclass
class Env:
    proxy: AWSProxy
    clock: VirtualClock
    unavailable: UnavailableOfferings
    types: AWSInstanceTypes


def spot_answer(_: Request) -> tuple[int, dict[str, str], bytes]:
    items = "".join(
        f"<item><instanceType>{t}</instanceType><productDescription>Linux/UNIX</productDescription>"
        f"<spotPrice>{p}</spotPrice><timestamp>"
        f"{(NOW - timedelta(hours=h)).strftime('%Y-%m-%dT%H:%M:%S.000Z')}</timestamp>"
        f"<availabilityZone>{z}</availabilityZone></item>"
        for t, z, p, h in SPOT
    )
    body = (
        '<DescribeSpotPriceHistoryResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">'
        f"<requestId>proxy</requestId><spotPriceHistorySet>{items}</spotPriceHistorySet>"
        "</DescribeSpotPriceHistoryResponse>"
    )
    return 200, {"Content-Type": "text/xml"}, body.encode()


@pytest.fixture
def env(moto_proxy: tuple[str, AWSProxy]) -> Env:
    _url, proxy = moto_proxy
    proxy.intercept(lambda r: r.action == "DescribeSpotPriceHistory", spot_answer)
    clock = VirtualClock(NOW)
    clients = AWSClients(AWSConfig(region=REGION, endpoint_url=proxy.url))
    unavailable = UnavailableOfferings(clock)
    types = AWSInstanceTypes(clients, AWSPrices(clients, clock), unavailable, clock)
    return Env(proxy, clock, unavailable, types)


def nodeclass(kubelet: dict[str, object] | None = None) -> EC2NodeClass:
    spec: dict[str, object] = {
        "role": "KarpenterNodeRole",
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "prod-1"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "prod-1"}}],
    }
    if kubelet:
        spec["kubelet"] = kubelet
    parsed = parse_manifest(
        EC2NodeClass,
        {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
         "metadata": {"name": "default"}, "spec": spec},
    )  # fmt: skip
    status = EC2NodeClassStatus(
        subnets=[
            ResolvedSubnet(id="subnet-0a", zone="us-east-1a"),
            ResolvedSubnet(id="subnet-0b", zone="us-east-1b"),
        ]
    )
    return parsed.model_copy(update={"status": status})


POOL = parse_manifest(
    NodePool,
    {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "general"},
        "spec": {"template": {"spec": {"nodeClassRef": {
            "group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
            "requirements": []}}},
    },
)  # fmt: skip


def test_offerings_in_the_subnets_zones_with_prices(env: Env) -> None:
    listed = {t.name: t for t in env.types.list(POOL, nodeclass())}
    assert len(listed) > 700, "moto's catalog of real instance types"
    m5 = listed["m5.large"]
    by_key = {(o.zone, o.capacity_type): o for o in m5.offerings}
    assert {z for z, _ in by_key} == {"us-east-1a", "us-east-1b"}, "only the subnets' zones"
    assert by_key[("us-east-1a", "on-demand")].price == pytest.approx(0.096)
    assert by_key[("us-east-1a", "spot")].price == pytest.approx(0.038), "the latest price"
    assert by_key[("us-east-1b", "spot")].price == pytest.approx(0.042)
    assert all(o.available for o in m5.offerings)
    c5 = listed["c5.large"]
    assert not any(o.available for o in c5.offerings if o.capacity_type == "spot"), "no spot price"

    env.unavailable.mark_unavailable("m5.large", "us-east-1a", "spot")
    again = next(t for t in env.types.list(POOL, nodeclass()) if t.name == "m5.large")
    gone = {(o.zone, o.capacity_type) for o in again.offerings if not o.available}
    assert gone == {("us-east-1a", "spot")}
    calls = Counter(r.action for r in env.proxy.requests)
    assert calls["DescribeSpotPriceHistory"] == 1, "spot prices are cached for an hour"
    env.clock.advance(timedelta(minutes=61))
    env.types.list(POOL, nodeclass())
    assert Counter(r.action for r in env.proxy.requests)["DescribeSpotPriceHistory"] == 2


def test_launches_at_once_describe_the_types_once(env: Env) -> None:
    """Eight launches on their threads find the caches empty (or expired) together: one of them
    describes the types, their zones and the spot prices, the others wait and read what it read
    (each described every type at once before: eight DescribeInstanceTypes answers decoded
    together)."""
    slow = {"DescribeInstanceTypes", "DescribeInstanceTypeOfferings"}

    def slowly(request: Request) -> Answer:
        time.sleep(0.3)  # long enough for every thread to find the cache empty meanwhile
        return env.proxy.forward(request)

    env.proxy.intercept(lambda r: r.action in slow, slowly)
    start = threading.Barrier(8)

    def launch(_: int) -> int:
        start.wait()
        return len(env.types.list(POOL, nodeclass()))

    for _round in range(2):  # a first fill, then a refresh once the caches expire
        with ThreadPoolExecutor(8) as pool:
            counts = set(pool.map(launch, range(8)))
        assert len(counts) == 1, "every launch read the same list"
        assert counts.pop() > 700, "the whole list"
        env.clock.advance(timedelta(minutes=61))
    calls = Counter(r.action for r in env.proxy.requests)
    assert calls["DescribeInstanceTypes"] == 2, calls
    assert calls["DescribeInstanceTypeOfferings"] == 2, calls
    assert calls["DescribeSpotPriceHistory"] == 2, calls


def test_kubelet_settings_change_allocatable(env: Env) -> None:
    default = next(t for t in env.types.list(POOL, nodeclass()) if t.name == "m5.large")
    capped = next(
        t for t in env.types.list(POOL, nodeclass({"maxPods": 20})) if t.name == "m5.large"
    )
    assert default.instance_type.allocatable["pods"] == 29
    assert capped.instance_type.allocatable["pods"] == 20
    saved = (29 - 20) * 11 * MIB  # kube-reserved memory follows max pods
    assert (
        capped.instance_type.allocatable["memory"] - default.instance_type.allocatable["memory"]
        == saved
    )


def test_allocatable_matches_the_packaged_catalog_but_for_the_documented_differences(
    env: Env,
) -> None:
    listed = {t.name: t.instance_type for t in env.types.list(POOL, nodeclass())}
    differences: Counter[str] = Counter()
    compared = 0
    for known in packaged_instance_types():
        mine = listed.get(known.name)
        if mine is None:
            continue
        compared += 1
        assert mine.allocatable["cpu"] == known.allocatable["cpu"], known.name
        assert mine.allocatable["ephemeral-storage"] == known.allocatable["ephemeral-storage"]
        assert mine.labels == known.labels
        memory = (mine.allocatable["memory"] - known.allocatable["memory"]) // MIB
        if mine.allocatable["pods"] != known.allocatable["pods"]:
            differences["pods (catalog counts both network cards)"] += 1
        elif memory:
            assert (memory, known.arch) == (59, "arm64"), known.name
            differences["memory +59Mi on arm64"] += 1
    assert compared > 700
    assert differences["pods (catalog counts both network cards)"] <= 4
    assert differences["memory +59Mi on arm64"] == sum(
        1
        for t in packaged_instance_types()
        if t.name in listed
        and t.arch == "arm64"
        and t.name not in {"i8ge.48xlarge", "i8ge.metal-48xl"}
    )
