"""The simulated cloud: what it launches, capacity errors and the ICE cache, deletion, booting,
faulty images, deterministic ids and cost."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclass_status import AMIRequirement, EC2NodeClassStatus, ResolvedAMI
from agent.catalog import Catalog
from agent.clock import EPOCH, VirtualClock
from agent.cloud import (
    InsufficientCapacity,
    LaunchFailed,
    NodeClaimNotFound,
    NodeClassNotReady,
    OfferingKey,
)
from agent.cloud.simulated import (
    UNREGISTERED_TAINT,
    AMICatalog,
    BootedInstance,
    SimulatedCloud,
)

from ..helpers import CAPACITY_TYPE, INSTANCE_TYPE, ZONE, claim, nodeclass, nodepool, ready, req

SPOT_OR_OD = req(CAPACITY_TYPE, "In", "spot", "on-demand")
ONLY_OD = req(CAPACITY_TYPE, "In", "on-demand")


def _cloud(
    catalog: Catalog, clock: VirtualClock, amis: AMICatalog, **options: Any
) -> tuple[SimulatedCloud, list[BootedInstance]]:
    booted: list[BootedInstance] = []
    cloud = SimulatedCloud(catalog, clock, amis, on_boot=booted.append, **options)
    return cloud, booted


@pytest.fixture
def cloud(catalog: Catalog, clock: VirtualClock, amis: AMICatalog) -> SimulatedCloud:
    return _cloud(catalog, clock, amis)[0]


@pytest.fixture
def default(amis: AMICatalog) -> EC2NodeClass:
    return ready(amis)


def _offering(launched_labels: dict[str, str]) -> tuple[str, str, str]:
    return (launched_labels[INSTANCE_TYPE], launched_labels[ZONE], launched_labels[CAPACITY_TYPE])


def test_spot_is_preferred_when_allowed_and_the_cheapest_spot_offering_wins(
    cloud: SimulatedCloud, catalog: Catalog, default: EC2NodeClass
) -> None:
    launched = cloud.create(claim(req(INSTANCE_TYPE, "In", "m5.large"), SPOT_OR_OD), default)
    cheapest = catalog.cheapest_offering("m5.large", capacity_types=["spot"])
    assert cheapest is not None
    assert _offering(launched.metadata.labels) == ("m5.large", cheapest.zone, "spot")
    assert cloud.cost_per_hour() == pytest.approx(cheapest.price)


def test_on_demand_is_launched_when_it_is_the_only_capacity_type_allowed(
    cloud: SimulatedCloud, catalog: Catalog, default: EC2NodeClass
) -> None:
    launched = cloud.create(claim(req(INSTANCE_TYPE, "In", "m5.large"), ONLY_OD), default)
    assert launched.metadata.labels[CAPACITY_TYPE] == "on-demand"
    assert cloud.cost_per_hour() == pytest.approx(catalog.on_demand_price("m5.large") or 0)


def test_the_cheapest_offering_across_types_and_zones_is_launched(
    cloud: SimulatedCloud, catalog: Catalog, default: EC2NodeClass
) -> None:
    names = ["m5.large", "c5.large", "m7g.large", "r6i.large"]
    launched = cloud.create(claim(req(INSTANCE_TYPE, "In", *names)), default)
    best = catalog.cheapest(names, capacity_types=["spot"])
    assert best is not None
    assert _offering(launched.metadata.labels) == (best[0].name, best[1].zone, "spot")


def test_the_launched_claim_carries_the_instance_and_the_input_is_unchanged(
    cloud: SimulatedCloud, default: EC2NodeClass
) -> None:
    original = claim(req(INSTANCE_TYPE, "In", "m7g.large"), labels={"team": "payments"})
    before = original.model_dump()
    launched = cloud.create(original, default)
    assert original.model_dump() == before
    status = launched.status
    assert re.fullmatch(r"aws:///us-east-1[abc]/i-[0-9a-f]{17}", status.provider_id or "")
    assert status.provider_id is not None
    assert status.provider_id.startswith(f"aws:///{launched.metadata.labels[ZONE]}/")
    assert status.image_id == amis_name_to_id(
        cloud.amis, "amazon-eks-node-al2023-arm64-standard-1.30-v20251216"
    )
    assert status.allocatable == {
        "cpu": "1930m",
        "ephemeral-storage": "17825792Ki",
        "memory": "7008256Ki",
        "pods": 29,
        "vpc.amazonaws.com/pod-eni": 9,
    }
    assert status.capacity["cpu"] == 2
    labels = launched.metadata.labels
    assert labels["team"] == "payments"
    assert labels["kubernetes.io/arch"] == "arm64"
    assert labels["karpenter.k8s.aws/instance-family"] == "m7g"
    assert cloud.get(status.provider_id or "") == launched
    assert cloud.list() == [launched]


def amis_name_to_id(amis: AMICatalog, name: str) -> str:
    return next(ami.id for ami in amis if ami.name == name)


def test_insufficient_capacity_moves_to_the_next_offering_and_is_cached_for_three_minutes(
    catalog: Catalog, clock: VirtualClock, amis: AMICatalog, default: EC2NodeClass
) -> None:
    cloud, _ = _cloud(catalog, clock, amis)
    spot = sorted(
        (o for o in catalog.offerings("m5.large") if o.capacity_type == "spot"),
        key=lambda o: o.price,
    )
    cheapest, second = spot[0], spot[1]
    cloud.faults.insufficient_capacity(
        instance_type="m5.large",
        zone=cheapest.zone,
        capacity_type="spot",
        until=EPOCH + timedelta(minutes=1),
    )
    wanted = claim(req(INSTANCE_TYPE, "In", "m5.large"), SPOT_OR_OD)
    launched = cloud.create(wanted, default)
    assert _offering(launched.metadata.labels) == ("m5.large", second.zone, "spot")
    assert [e.kind for e in cloud.events] == ["insufficient-capacity", "launched"]
    assert cloud.events[0].zone == cheapest.zone

    def available() -> bool:
        entry = next(e for e in cloud.instance_types(nodepool(), default) if e.name == "m5.large")
        return next(
            o for o in entry.offerings if o.zone == cheapest.zone and o.capacity_type == "spot"
        ).available

    assert not available()
    clock.advance(timedelta(minutes=3) - timedelta(seconds=1))
    assert not available()
    assert cloud.create(wanted, default).metadata.labels[ZONE] == second.zone
    clock.advance(timedelta(seconds=1))
    assert available()
    assert cloud.create(wanted, default).metadata.labels[ZONE] == cheapest.zone


def test_when_every_offering_lacks_capacity_the_error_names_them(
    cloud: SimulatedCloud, default: EC2NodeClass
) -> None:
    cloud.faults.insufficient_capacity(instance_type="m5.large")
    wanted = claim(req(INSTANCE_TYPE, "In", "m5.large"), ONLY_OD)
    with pytest.raises(InsufficientCapacity) as caught:
        cloud.create(wanted, default)
    assert caught.value.retryable
    assert caught.value.offerings == tuple(
        OfferingKey("m5.large", zone, "on-demand")
        for zone in ("us-east-1a", "us-east-1b", "us-east-1c")
    )
    assert cloud.list() == []
    with pytest.raises(InsufficientCapacity) as again:
        cloud.create(wanted, default)
    assert again.value.offerings == ()  # all cached unavailable: nothing left to try


def test_spot_shortage_fails_the_launch_and_the_retry_falls_back_to_on_demand(
    cloud: SimulatedCloud, default: EC2NodeClass
) -> None:
    cloud.faults.insufficient_capacity(capacity_type="spot")
    wanted = claim(req(INSTANCE_TYPE, "In", "m5.large", "c5.large"), SPOT_OR_OD)
    with pytest.raises(InsufficientCapacity) as caught:
        cloud.create(wanted, default)
    assert {key.capacity_type for key in caught.value.offerings} == {"spot"}
    assert len(caught.value.offerings) == 6
    assert cloud.create(wanted, default).metadata.labels[CAPACITY_TYPE] == "on-demand"


def test_nothing_allowed_is_insufficient_capacity_without_offerings(
    cloud: SimulatedCloud, default: EC2NodeClass
) -> None:
    too_big = claim(req(INSTANCE_TYPE, "In", "m5.large"), requests={"cpu": "3"})
    with pytest.raises(InsufficientCapacity, match="unavailable during launch") as caught:
        cloud.create(too_big, default)
    assert caught.value.offerings == ()


def test_delete_then_delete_again_is_not_found(
    cloud: SimulatedCloud, default: EC2NodeClass
) -> None:
    launched = cloud.create(claim(req(INSTANCE_TYPE, "In", "m5.large")), default)
    provider_id = launched.status.provider_id or ""
    cloud.delete(launched)
    assert cloud.instance(provider_id).state == "terminated"
    with pytest.raises(NodeClaimNotFound) as caught:
        cloud.delete(launched)
    assert not caught.value.retryable
    assert caught.value.provider_id == provider_id
    with pytest.raises(NodeClaimNotFound):
        cloud.get(provider_id)
    assert cloud.list() == []
    assert [e.kind for e in cloud.events][-2:] == ["terminating", "terminated"]
    with pytest.raises(NodeClaimNotFound, match="no provider id"):
        cloud.delete(claim())


def test_a_termination_latency_keeps_the_instance_shutting_down_until_it_passes(
    catalog: Catalog, clock: VirtualClock, amis: AMICatalog, default: EC2NodeClass
) -> None:
    cloud, _ = _cloud(catalog, clock, amis, termination_latency=timedelta(seconds=45))
    launched = cloud.create(claim(req(INSTANCE_TYPE, "In", "m5.large")), default)
    cloud.delete(launched)
    clock.advance(timedelta(seconds=44))
    cloud.delete(launched)  # still shutting down: termination is under way, no error
    assert cloud.instance(launched.status.provider_id or "").state == "shutting-down"
    assert len(cloud.list()) == 1
    clock.advance(timedelta(seconds=1))
    with pytest.raises(NodeClaimNotFound):
        cloud.delete(launched)


def test_the_boot_callback_fires_after_the_latency_with_the_node_payload(
    catalog: Catalog, clock: VirtualClock, amis: AMICatalog, default: EC2NodeClass
) -> None:
    cloud, booted = _cloud(catalog, clock, amis)
    taint = {"key": "example.com/dedicated", "value": "batch", "effect": "NoSchedule"}
    startup = {"key": "example.com/warming", "effect": "NoSchedule"}
    launched = cloud.create(
        claim(req(INSTANCE_TYPE, "In", "m5.large"), taints=[taint], startupTaints=[startup]),
        default,
    )
    provider_id = launched.status.provider_id or ""
    assert cloud.instance(provider_id).state == "pending"
    clock.advance(timedelta(seconds=10))
    assert cloud.instance(provider_id).state == "running"
    clock.advance(timedelta(seconds=19))
    assert booted == []
    clock.advance(timedelta(seconds=1))
    assert len(booted) == 1
    node = booted[0]
    assert node.provider_id == provider_id
    assert node.booted_at == EPOCH + timedelta(seconds=30)
    assert re.fullmatch(r"ip-10-0-\d{1,3}-\d{1,3}\.ec2\.internal", node.node_name)
    assert node.node_name == f"ip-{node.private_ip.replace('.', '-')}.ec2.internal"
    assert node.nodeclaim == "claim-a"
    assert (node.instance_type, node.zone, node.capacity_type) == _offering(
        launched.metadata.labels
    )
    assert node.labels == {**launched.metadata.labels, "kubernetes.io/hostname": node.node_name}
    assert [(t.key, t.effect) for t in node.taints] == [
        ("example.com/dedicated", "NoSchedule"),
        ("example.com/warming", "NoSchedule"),
        (UNREGISTERED_TAINT.key, "NoExecute"),
    ]
    assert node.capacity == catalog.get("m5.large").capacity
    assert node.allocatable == catalog.get("m5.large").allocatable
    assert node.image_id == launched.status.image_id
    assert node.image_faulty is False
    assert [e.kind for e in cloud.events] == ["launched", "running", "booted"]


def test_an_instance_deleted_before_booting_never_calls_back(
    catalog: Catalog, clock: VirtualClock, amis: AMICatalog, default: EC2NodeClass
) -> None:
    cloud, booted = _cloud(catalog, clock, amis, boot_latency=timedelta(seconds=60))
    launched = cloud.create(claim(req(INSTANCE_TYPE, "In", "m5.large")), default)
    clock.advance(timedelta(seconds=20))
    cloud.delete(launched)
    clock.advance(timedelta(minutes=5))
    assert booted == []
    with pytest.raises(ValueError, match="boot_latency"):
        SimulatedCloud(
            catalog,
            clock,
            amis,
            launch_latency=timedelta(seconds=5),
            boot_latency=timedelta(seconds=1),
        )


def test_an_instance_from_a_faulty_release_boots_with_a_faulty_payload(
    catalog: Catalog, clock: VirtualClock, amis: AMICatalog
) -> None:
    cloud, booted = _cloud(catalog, clock, amis)
    good = ready(amis)
    bad_release = amis.publish("AL2023", created=clock.now(), faulty=True)
    bad = ready(amis)
    cloud.create(claim(req(INSTANCE_TYPE, "In", "m5.large"), name="old"), good)
    launched = cloud.create(claim(req(INSTANCE_TYPE, "In", "m5.large"), name="new"), bad)
    assert launched.status.image_id in {ami.id for ami in bad_release}
    clock.advance(timedelta(seconds=30))
    assert {b.nodeclaim: b.image_faulty for b in booted} == {"old": False, "new": True}


def test_ids_are_deterministic_for_a_seed(
    catalog: Catalog, amis: AMICatalog, default: EC2NodeClass
) -> None:
    def launch(seed: int) -> list[tuple[str, str]]:
        cloud, booted = _cloud(catalog, VirtualClock(), amis, seed=seed)
        for index in range(3):
            cloud.create(claim(req(INSTANCE_TYPE, "In", "m5.large"), name=f"c{index}"), default)
        assert isinstance(cloud.clock, VirtualClock)
        cloud.clock.advance(timedelta(minutes=1))
        return [(b.provider_id, b.node_name) for b in booted]

    first = launch(7)
    assert first == launch(7)
    assert len({provider_id for provider_id, _ in first}) == 3
    assert len({node for _, node in first}) == 3
    other = launch(8)
    assert {p for p, _ in first}.isdisjoint({p for p, _ in other})


def test_cost_per_hour_counts_billed_instances_and_accrues_over_time(
    cloud: SimulatedCloud, catalog: Catalog, clock: VirtualClock, default: EC2NodeClass
) -> None:
    a = cloud.create(claim(req(INSTANCE_TYPE, "In", "m5.large"), ONLY_OD, name="a"), default)
    cloud.create(claim(req(INSTANCE_TYPE, "In", "c5.large"), ONLY_OD, name="b"), default)
    assert cloud.cost_per_hour() == pytest.approx(0.096 + 0.085)
    clock.advance(timedelta(hours=1))
    cloud.delete(a)
    assert cloud.cost_per_hour() == pytest.approx(0.085)
    clock.advance(timedelta(hours=1))
    assert cloud.accrued_cost() == pytest.approx(0.096 + 2 * 0.085)
    assert catalog.on_demand_price("c5.large") == pytest.approx(0.085)


def test_a_node_class_without_amis_is_not_ready(cloud: SimulatedCloud) -> None:
    with pytest.raises(NodeClassNotReady) as caught:
        cloud.create(claim(req(INSTANCE_TYPE, "In", "m5.large")), nodeclass())
    assert caught.value.retryable
    assert cloud.list() == []


def test_injected_launch_failures_fail_the_next_launches_only(
    cloud: SimulatedCloud, default: EC2NodeClass
) -> None:
    wanted = claim(req(INSTANCE_TYPE, "In", "m5.large"))
    cloud.faults.fail_launches(reason="RequestLimitExceeded")
    with pytest.raises(LaunchFailed) as caught:
        cloud.create(wanted, default)
    assert caught.value.retryable
    assert caught.value.reason == "RequestLimitExceeded"
    assert cloud.events[-1].kind == "launch-failed"
    assert cloud.create(wanted, default).status.provider_id is not None


def test_an_image_missing_from_the_catalog_is_a_permanent_launch_failure(
    cloud: SimulatedCloud, default: EC2NodeClass
) -> None:
    arch = AMIRequirement(key="kubernetes.io/arch", operator="In", values=["amd64"])
    missing = ResolvedAMI(id="ami-00000000000000000", requirements=[arch])
    gone = default.model_copy(update={"status": EC2NodeClassStatus(amis=[missing])})
    with pytest.raises(LaunchFailed, match=r"InvalidAMIID\.NotFound") as caught:
        cloud.create(claim(req(INSTANCE_TYPE, "In", "m5.large")), gone)
    assert not caught.value.retryable
    assert cloud.list() == []


def test_windows_nodes_take_their_os_from_the_image(
    cloud: SimulatedCloud, amis: AMICatalog
) -> None:
    windows = ready(amis, {"alias": "windows2022@latest"})
    launched = cloud.create(claim(req(INSTANCE_TYPE, "In", "m5.large")), windows)
    assert launched.metadata.labels["kubernetes.io/os"] == "windows"
    assert launched.metadata.labels["node.kubernetes.io/windows-build"] == "10.0.20348"
    with pytest.raises(InsufficientCapacity):
        cloud.create(claim(req("kubernetes.io/os", "In", "linux")), windows)


def test_instance_types_lists_every_catalog_type(
    cloud: SimulatedCloud, catalog: Catalog, default: EC2NodeClass
) -> None:
    listed = cloud.instance_types(nodepool(), default)
    assert [entry.name for entry in listed] == list(catalog.names())
    assert listed[0].offerings == catalog.offerings(listed[0].instance_type)
