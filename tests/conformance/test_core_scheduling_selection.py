"""Karpenter's instance-type selection tests: over an assorted catalog (every combination of size,
zone, capacity type, OS and architecture, one offering each), a pod launches on the cheapest type
its NodePool and its own constraints allow, and every instance-type option of the NodeClaim meets
those constraints (pkg/controllers/provisioning/scheduling/instance_selection_test.go)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent.catalog import Offering
from agent.cloud.port import InstanceTypeOfferings
from tests.conformance.karpenter import mirrors
from tests.conformance.test_core_scheduling_kit import (
    ARCH,
    CAPACITY_TYPE,
    INSTANCE_TYPE,
    OS,
    ZONE,
    Outcome,
    World,
    fake_type,
    nodepool,
    pod,
    pods,
    req,
)

SUITE = "core-scheduling"
SRC = "pkg/controllers/provisioning/scheduling/instance_selection_test.go"
CTX = "Instance Type Selection / "
DEFAULT_POOL = [req(CAPACITY_TYPE, "In", "spot", "on-demand"), req(ARCH, "In", "arm64", "amd64")]


def assorted(
    keep: Callable[[str, str, str, str], bool] | None = None,
) -> list[InstanceTypeOfferings]:
    """The fake provider's assorted types (``keep(arch, os, zone, capacity type)`` filters)."""
    out = []
    for cpu in (1, 2, 4, 8, 16, 32, 64):
        for mem in (1, 2, 4, 8, 16, 32, 64, 128):
            for zone in ("test-zone-1", "test-zone-2", "test-zone-3"):
                for kind in ("spot", "on-demand"):
                    for system in ("linux", "windows"):
                        for arch in ("amd64", "arm64"):
                            if keep is not None and not keep(arch, system, zone, kind):
                                continue
                            name = f"{cpu}-cpu-{mem}-mem-{arch}-{system}-{zone}-{kind}"
                            out.append(
                                fake_type(
                                    name,
                                    {"cpu": str(cpu), "memory": f"{mem}Gi", "pods": "5"},
                                    arch=arch,
                                    offerings=[(kind, zone)],
                                    labels={OS: system},
                                )
                            )
    return out


_ASSORTED = assorted()
MIN_PRICE = min(t.offerings[0].price for t in _ASSORTED)


def _launch(
    pool: list[dict[str, Any]], types: list[InstanceTypeOfferings] | None = None, **options: Any
) -> tuple[Outcome, World]:
    w = World(types if types is not None else _ASSORTED).apply(nodepool(requirements=pool))
    one = pod(**options)
    return w.provision(one), w


def _options(outcome: Outcome, w: World) -> list[InstanceTypeOfferings]:
    (launched,) = outcome.launched
    by_name = {t.instance_type.name: t for t in w.types}
    return [by_name[name] for name, _ in launched.claim.options()]


def cheapest(
    name: str, pool: list[dict[str, Any]], required: list[dict[str, Any]], labels: dict[str, str]
) -> Callable[[], None]:
    """A test: the pod launches at the catalog's lowest price, on options that all carry
    ``labels`` (zone and capacity type are the offering's)."""

    @mirrors(SRC, CTX + name)
    def test() -> None:
        outcome, w = _launch(pool, required=[required] if required else None)
        assert outcome.launched, outcome.result.errors
        (launched,) = outcome.launched
        assert launched.claim.options()[0][1] == MIN_PRICE
        for option in _options(outcome, w):
            offering: Offering = option.offerings[0]
            have = {
                **option.instance_type.labels,
                ZONE: offering.zone,
                CAPACITY_TYPE: offering.capacity_type,
            }
            assert all(have.get(k) == v for k, v in labels.items()), (
                option.instance_type.name,
                labels,
            )

    return test


test_cheapest = cheapest("should schedule on one of the cheapest instances", DEFAULT_POOL, [], {})
test_cheapest_pod_amd64 = cheapest(
    "should schedule on one of the cheapest instances (pod arch = amd64)",
    DEFAULT_POOL,
    [req(ARCH, "In", "amd64")],
    {ARCH: "amd64"},
)
test_cheapest_pod_arm64 = cheapest(
    "should schedule on one of the cheapest instances (pod arch = arm64)",
    DEFAULT_POOL,
    [req(ARCH, "In", "arm64")],
    {ARCH: "arm64"},
)
test_cheapest_pool_amd64 = cheapest(
    "should schedule on one of the cheapest instances (prov arch = amd64)",
    [req(ARCH, "In", "amd64")],
    [],
    {ARCH: "amd64"},
)
test_cheapest_pool_arm64 = cheapest(
    "should schedule on one of the cheapest instances (prov arch = arm64)",
    [req(ARCH, "In", "arm64")],
    [],
    {ARCH: "arm64"},
)
test_cheapest_pool_windows = cheapest(
    "should schedule on one of the cheapest instances (prov os = windows)",
    [req(OS, "In", "windows")],
    [],
    {OS: "windows"},
)
test_cheapest_pod_windows = cheapest(
    "should schedule on one of the cheapest instances (pod os = windows)",
    DEFAULT_POOL,
    [req(OS, "In", "windows")],
    {OS: "windows"},
)
test_cheapest_pod_linux = cheapest(
    "should schedule on one of the cheapest instances (pod os = linux)",
    DEFAULT_POOL,
    [req(OS, "In", "linux")],
    {OS: "linux"},
)
test_cheapest_pool_zone = cheapest(
    "should schedule on one of the cheapest instances (prov zone = test-zone-2)",
    [req(ZONE, "In", "test-zone-2")],
    [],
    {ZONE: "test-zone-2"},
)
test_cheapest_pod_zone = cheapest(
    "should schedule on one of the cheapest instances (pod zone = test-zone-2)",
    DEFAULT_POOL,
    [req(ZONE, "In", "test-zone-2")],
    {ZONE: "test-zone-2"},
)
test_cheapest_pool_spot = cheapest(
    "should schedule on one of the cheapest instances (prov ct = spot)",
    [req(CAPACITY_TYPE, "In", "spot")],
    [],
    {CAPACITY_TYPE: "spot"},
)
test_cheapest_pod_spot = cheapest(
    "should schedule on one of the cheapest instances (pod ct = spot)",
    DEFAULT_POOL,
    [req(CAPACITY_TYPE, "In", "spot")],
    {CAPACITY_TYPE: "spot"},
)
test_cheapest_pool_on_demand_zone = cheapest(
    "should schedule on one of the cheapest instances (prov ct = ondemand, prov zone = test-zone-1)",  # noqa: E501
    [req(CAPACITY_TYPE, "In", "on-demand"), req(ZONE, "In", "test-zone-1")],
    [],
    {CAPACITY_TYPE: "on-demand", ZONE: "test-zone-1"},
)
test_cheapest_pod_spot_zone = cheapest(
    "should schedule on one of the cheapest instances (pod ct = spot, pod zone = test-zone-1)",
    DEFAULT_POOL,
    [req(CAPACITY_TYPE, "In", "spot"), req(ZONE, "In", "test-zone-1")],
    {CAPACITY_TYPE: "spot", ZONE: "test-zone-1"},
)
test_cheapest_pool_spot_pod_zone = cheapest(
    "should schedule on one of the cheapest instances (prov ct = spot, pod zone = test-zone-2)",
    [req(CAPACITY_TYPE, "In", "spot")],
    [req(ZONE, "In", "test-zone-2")],
    {CAPACITY_TYPE: "spot", ZONE: "test-zone-2"},
)
test_cheapest_pool_everything = cheapest(
    "should schedule on one of the cheapest instances (prov ct = ondemand/test-zone-1/arm64/windows)",  # noqa: E501
    [
        req(ARCH, "In", "arm64"),
        req(OS, "In", "windows"),
        req(CAPACITY_TYPE, "In", "on-demand"),
        req(ZONE, "In", "test-zone-1"),
    ],
    [],
    {ARCH: "arm64", OS: "windows", CAPACITY_TYPE: "on-demand", ZONE: "test-zone-1"},
)
test_cheapest_pool_and_pod = cheapest(
    "should schedule on one of the cheapest instances (prov = spot/test-zone-2, pod = amd64/linux)",
    [req(ARCH, "In", "amd64"), req(OS, "In", "linux")],
    [req(CAPACITY_TYPE, "In", "spot"), req(ZONE, "In", "test-zone-2")],
    {ARCH: "amd64", OS: "linux", CAPACITY_TYPE: "spot", ZONE: "test-zone-2"},
)
test_cheapest_pod_everything = cheapest(
    "should schedule on one of the cheapest instances (pod ct = spot/test-zone-2/amd64/linux)",
    DEFAULT_POOL,
    [
        req(ARCH, "In", "amd64"),
        req(OS, "In", "linux"),
        req(CAPACITY_TYPE, "In", "spot"),
        req(ZONE, "In", "test-zone-2"),
    ],
    {ARCH: "amd64", OS: "linux", CAPACITY_TYPE: "spot", ZONE: "test-zone-2"},
)


@mirrors(SRC, CTX + "should not schedule if no instance type matches selector (pod arch = arm)")
def test_no_type_of_the_pods_arch_launches_nothing() -> None:
    types = assorted(lambda arch, *_: arch == "amd64")
    outcome, _ = _launch(DEFAULT_POOL, types, required=[[req(ARCH, "In", "arm64")]])
    assert not outcome.launched


def _no_arm_in_zone_2(arch: str, system: str, zone: str, kind: str) -> bool:
    del system, kind
    return zone != "test-zone-2" or arch == "amd64"


@mirrors(
    SRC,
    CTX
    + "should not schedule if no instance type matches selector (pod arch = arm zone=test-zone-2)",
)
def test_no_type_of_the_pods_arch_in_its_zone_launches_nothing() -> None:
    outcome, _ = _launch(
        DEFAULT_POOL,
        assorted(_no_arm_in_zone_2),
        required=[[req(ARCH, "In", "arm64"), req(ZONE, "In", "test-zone-2")]],
    )
    assert not outcome.launched


@mirrors(SRC, CTX + "should schedule on an instance with enough resources")
def test_every_option_holds_the_pods_and_the_overhead() -> None:
    for cpu in (0.1, 1.0, 2.5, 8.0):
        for mem in (0.1, 2.0, 16.0):
            w = World(_ASSORTED).apply(nodepool(requirements=DEFAULT_POOL))
            batch = pods(
                3, requests={"cpu": f"{int(cpu * 1000)}m", "memory": f"{int(mem * 1024)}Mi"}
            )
            outcome = w.provision(*batch)
            assert len(outcome.hosts(batch)) == 1
            for option in _options(outcome, w):
                capacity = option.instance_type.capacity
                assert 3 * int(cpu * 1000) + 100 < capacity["cpu"]
                assert 3 * int(mem * 1024) * 2**20 + 10 * 2**20 < capacity["memory"]


@mirrors(
    SRC,
    CTX
    + "should schedule on cheaper on-demand instance even when spot price ordering would place other instance types first",  # noqa: E501
)
def test_the_cheapest_on_demand_type_wins_whatever_the_spot_prices() -> None:
    def priced(name: str, on_demand: float, spot: float) -> InstanceTypeOfferings:
        plain = fake_type(name, {"cpu": "1", "memory": "1Gi"})
        return InstanceTypeOfferings(
            plain.instance_type,
            (
                Offering("test-zone-1", "on-demand", on_demand, True),
                Offering("test-zone-1", "spot", spot, True),
            ),
        )

    types = [priced("test-instance1", 1.0, 0.2), priced("test-instance2", 1.3, 0.1)]
    outcome, _ = _launch([req(CAPACITY_TYPE, "In", "on-demand")], types)
    (launched,) = outcome.launched
    assert launched.instance_type == "test-instance1"
    assert INSTANCE_TYPE in launched.labels


MIN_VALUES = CTX + "MinValues / "


def _two_types(second_arch: str = "arm64") -> list[InstanceTypeOfferings]:
    """A 1-vCPU type at 0.52 and a 4-vCPU one at 1.0, spot in one zone."""

    def one(name: str, size: str, arch: str, price: float) -> InstanceTypeOfferings:
        plain = fake_type(name, {"cpu": size, "memory": f"{size}Gi"}, arch=arch)
        return InstanceTypeOfferings(
            plain.instance_type, (Offering("test-zone-1", "spot", price, True),)
        )

    return [
        one("instance-type-1", "1", "arm64", 0.52),
        one("instance-type-2", "4", second_arch, 1.0),
    ]


def _apart_with(pool: list[dict[str, Any]], types: list[InstanceTypeOfferings]) -> None:
    """Two pods that share only the bigger type launch apart, each claim with both types."""
    w = World(types).apply(nodepool(requirements=pool))
    batch = pods(2, requests={"cpu": "900m", "memory": "900Mi"})
    outcome = w.provision(*batch)
    assert len(outcome.hosts(batch)) == 2
    assert all(len(launched.claim.options()) >= 2 for launched in outcome.launched)


@mirrors(
    SRC, MIN_VALUES + "should schedule respecting the minValues from instance-type requirements"
)
def test_min_values_on_instance_types_keep_two_options_per_claim() -> None:
    pool = [{**req(INSTANCE_TYPE, "In", "instance-type-1", "instance-type-2"), "minValues": 2}]
    _apart_with(pool, _two_types())


@mirrors(SRC, MIN_VALUES + "should schedule and respect multiple requirement keys with minValues")
def test_min_values_on_two_keys_keep_two_archs_per_claim() -> None:
    pool = [
        {**req(ARCH, "Exists"), "minValues": 2},
        {**req(INSTANCE_TYPE, "In", "instance-type-1", "instance-type-2"), "minValues": 1},
    ]
    _apart_with(pool, _two_types(second_arch="amd64"))


@mirrors(
    SRC,
    MIN_VALUES
    + "schedule should fail if minimum number of InstanceTypes is not met as per the minValues in the requirement",  # noqa: E501
)
def test_min_values_above_the_types_there_are_schedule_nothing() -> None:
    pool = [{**req(INSTANCE_TYPE, "Exists"), "minValues": 11}]
    outcome, _ = _launch(pool, _ASSORTED[:10])
    assert not outcome.launched
    assert outcome.result.errors
