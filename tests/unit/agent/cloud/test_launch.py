"""The launch choices every adapter shares: which candidates a claim allows, the capacity type,
the image per instance type, and the quantities written to a NodeClaim's status."""

from __future__ import annotations

import pytest

from agent.catalog import Catalog
from agent.catalog.resources import Resources
from agent.catalog.types import Offering
from agent.cloud import InstanceTypeOfferings, NodeClassNotReady
from agent.cloud.launch import (
    choose_capacity_type,
    fleet_overrides,
    launch_candidates,
    resolved_images,
    resource_quantities,
    resource_requests,
)
from agent.cloud.simulated import AMICatalog

from .helpers import CAPACITY_TYPE, INSTANCE_TYPE, ZONE, claim, nodeclass, ready, req


def _types(catalog: Catalog, *names: str) -> list[InstanceTypeOfferings]:
    return [InstanceTypeOfferings(catalog.get(n), catalog.offerings(n)) for n in names]


def test_candidates_honour_type_zone_and_capacity_requirements(
    catalog: Catalog, amis: AMICatalog
) -> None:
    images = ready(amis).status.amis  # type: ignore[union-attr]
    wanted = claim(
        req(INSTANCE_TYPE, "In", "m5.large", "c5.large"),
        req(ZONE, "NotIn", "us-east-1a"),
        req(CAPACITY_TYPE, "In", "on-demand"),
    )
    found = launch_candidates(wanted, images, _types(catalog, "m5.large", "c5.large", "m7g.large"))
    assert {(c.instance_type.name, c.offering.zone, c.offering.capacity_type) for c in found} == {
        (name, zone, "on-demand")
        for name in ("m5.large", "c5.large")
        for zone in ("us-east-1b", "us-east-1c")
    }
    prices = [c.offering.price for c in found]
    assert prices == sorted(prices)
    assert found[0].instance_type.name == "c5.large"  # 0.085 beats m5.large's 0.096


def test_labels_the_cloud_does_not_decide_are_not_checked(
    catalog: Catalog, amis: AMICatalog
) -> None:
    images = ready(amis).status.amis  # type: ignore[union-attr]
    wanted = claim(
        req(INSTANCE_TYPE, "In", "m5.large"),
        req("karpenter.sh/nodepool", "In", "default"),
        req("team.example.com/owner", "In", "payments"),
    )
    assert len(launch_candidates(wanted, images, _types(catalog, "m5.large"))) == 6


def test_a_well_known_label_the_type_lacks_counts_as_absent(
    catalog: Catalog, amis: AMICatalog
) -> None:
    images = ready(amis).status.amis  # type: ignore[union-attr]
    gpu = claim(req("karpenter.k8s.aws/instance-gpu-count", "Exists"))
    names = {
        c.instance_type.name
        for c in launch_candidates(gpu, images, _types(catalog, "m5.large", "g5.xlarge"))
    }
    assert names == {"g5.xlarge"}


def test_each_type_gets_the_image_that_fits_it(catalog: Catalog, amis: AMICatalog) -> None:
    images = ready(amis).status.amis  # type: ignore[union-attr]
    by_type = {
        c.instance_type.name: c.image.name
        for c in launch_candidates(
            claim(), images, _types(catalog, "m5.large", "m7g.large", "g5.xlarge", "inf2.xlarge")
        )
    }
    assert by_type == {
        "m5.large": "amazon-eks-node-al2023-x86_64-standard-1.30-v20251216",
        "m7g.large": "amazon-eks-node-al2023-arm64-standard-1.30-v20251216",
        "g5.xlarge": "amazon-eks-node-al2023-x86_64-nvidia-1.30-v20251216",
        "inf2.xlarge": "amazon-eks-node-al2023-x86_64-neuron-1.30-v20251216",
    }


def test_types_without_a_fitting_image_or_room_for_the_requests_are_left_out(
    catalog: Catalog, amis: AMICatalog
) -> None:
    arm_only = ready(
        amis, {"name": "amazon-eks-node-al2023-arm64-standard-1.30-*"}, ami_family="AL2023"
    ).status.amis  # type: ignore[union-attr]
    types = _types(catalog, "m5.large", "m7g.large", "m7g.xlarge")
    assert {c.instance_type.name for c in launch_candidates(claim(), arm_only, types)} == {
        "m7g.large",
        "m7g.xlarge",
    }
    big = claim(requests={"cpu": "2", "memory": "1Gi"})
    assert {c.instance_type.name for c in launch_candidates(big, arm_only, types)} == {"m7g.xlarge"}


def test_capacity_type_preference_is_reserved_then_spot_then_on_demand(
    catalog: Catalog, amis: AMICatalog
) -> None:
    images = ready(amis).status.amis  # type: ignore[union-attr]
    m5 = catalog.get("m5.large")
    offerings = (
        Offering("us-east-1a", "on-demand", 0.096, True),
        Offering("us-east-1a", "spot", 0.04, True),
        Offering("us-east-1a", "reserved", 0.2, True),
    )
    types = [InstanceTypeOfferings(m5, offerings)]
    assert choose_capacity_type(launch_candidates(claim(), images, types)) == "reserved"
    no_reserved = claim(req(CAPACITY_TYPE, "In", "spot", "on-demand"))
    assert choose_capacity_type(launch_candidates(no_reserved, images, types)) == "spot"
    only_od = claim(req(CAPACITY_TYPE, "In", "on-demand"))
    chosen = launch_candidates(only_od, images, types)
    assert choose_capacity_type(chosen) == "on-demand"
    assert [c.offering.capacity_type for c in fleet_overrides(chosen, "on-demand")] == ["on-demand"]


def test_a_node_class_without_resolved_amis_or_not_ready_is_refused(amis: AMICatalog) -> None:
    with pytest.raises(NodeClassNotReady) as caught:
        resolved_images(nodeclass())
    assert caught.value.retryable
    assert caught.value.nodeclass == "default"
    good = ready(amis)
    assert good.status is not None
    assert resolved_images(good) == good.status.amis
    failing = good.status.conditions[0].model_copy(update={"status": "False"})
    status = good.status.model_copy(update={"conditions": [failing]})
    with pytest.raises(NodeClassNotReady, match="not ready"):
        resolved_images(good.model_copy(update={"status": status}))


def test_requests_and_status_quantities_convert_units() -> None:
    wanted = claim(requests={"cpu": "1500m", "memory": "2Gi", "nvidia.com/gpu": "1", "pods": "3"})
    assert resource_requests(wanted) == {
        "cpu": 1500,
        "memory": 2 * 2**30,
        "nvidia.com/gpu": 1,
        "pods": 3,
    }
    assert resource_requests(claim(requests={"cpu": "0.0015"})) == {"cpu": 2}
    quantities = resource_quantities(
        Resources({"cpu": 1930, "memory": 7238320128, "ephemeral-storage": 1000, "pods": 29})
    )
    assert quantities == {
        "cpu": "1930m",
        "memory": "7068672Ki",
        "ephemeral-storage": 1000,
        "pods": 29,
    }
    assert resource_quantities(Resources({"cpu": 4000})) == {"cpu": 4}
