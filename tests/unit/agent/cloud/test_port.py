"""The port's value types and errors: retry meaning, names of offerings, cheapest offering."""

from __future__ import annotations

import math

import pytest

from agent.catalog import Catalog
from agent.catalog.types import Offering
from agent.clock import VirtualClock
from agent.cloud import (
    CloudError,
    CloudProvider,
    InstanceTypeOfferings,
    InsufficientCapacity,
    LaunchFailed,
    NodeClaimNotFound,
    NodeClassNotReady,
    OfferingKey,
)
from agent.cloud.simulated import AMICatalog, SimulatedCloud


@pytest.mark.parametrize(
    ("error", "retryable"),
    [
        (InsufficientCapacity("no capacity"), True),
        (NodeClassNotReady("no AMIs", "default"), True),
        (NodeClaimNotFound("gone", "aws:///us-east-1a/i-0"), False),
        (LaunchFailed("bad image", "InvalidAMIID.NotFound"), False),
        (LaunchFailed("slow down", "RequestLimitExceeded", retryable=True), True),
    ],
)
def test_errors_say_whether_a_retry_can_help(error: CloudError, retryable: bool) -> None:
    assert isinstance(error, CloudError)
    assert error.retryable is retryable


def test_insufficient_capacity_names_the_offerings_tried() -> None:
    tried = [
        OfferingKey("m5.large", "us-east-1a", "spot"),
        OfferingKey("m5.large", "us-east-1b", "spot"),
    ]
    error = InsufficientCapacity("no capacity", tried)
    assert error.offerings == tuple(tried)
    assert str(error) == "no capacity; tried m5.large/us-east-1a/spot, m5.large/us-east-1b/spot"
    assert InsufficientCapacity("nothing to try").offerings == ()
    assert (
        str(LaunchFailed("bad image", "InvalidAMIID.NotFound"))
        == "InvalidAMIID.NotFound: bad image"
    )


def test_cheapest_skips_unavailable_offerings_and_filters(catalog: Catalog) -> None:
    m5 = catalog.get("m5.large")
    entry = InstanceTypeOfferings(
        m5,
        (
            Offering("us-east-1a", "spot", 0.01, False),
            Offering("us-east-1a", "on-demand", 0.096, True),
            Offering("us-east-1b", "spot", 0.04, True),
            Offering("us-east-1c", "spot", math.inf, False),
        ),
    )
    assert entry.name == "m5.large"
    assert [o.zone for o in entry.available] == ["us-east-1a", "us-east-1b"]
    assert entry.cheapest() == Offering("us-east-1b", "spot", 0.04, True)
    assert entry.cheapest(capacity_types=["on-demand"]) == Offering(
        "us-east-1a", "on-demand", 0.096, True
    )
    assert entry.cheapest(zones=["us-east-1c"]) is None


def test_the_simulated_cloud_implements_the_port(catalog: Catalog) -> None:
    provider: CloudProvider = SimulatedCloud(catalog, VirtualClock(), AMICatalog())
    assert provider.name() == "simulated"
    assert provider.list() == []
