"""The unavailable-offerings cache: marks last three minutes on the clock, then expire."""

from __future__ import annotations

from datetime import timedelta

import pytest

from agent.catalog.types import Offering
from agent.clock import EPOCH, VirtualClock
from agent.cloud import OfferingKey
from agent.cloud.unavailable import DEFAULT_TTL, UnavailableOfferings


def test_a_mark_lasts_three_minutes_by_default() -> None:
    clock = VirtualClock()
    cache = UnavailableOfferings(clock)
    assert timedelta(minutes=3) == DEFAULT_TTL
    expires = cache.mark_unavailable("m5.large", "us-east-1a", "spot", reason="ICE")
    assert expires == EPOCH + timedelta(minutes=3)
    assert cache.is_unavailable("m5.large", "us-east-1a", "spot")
    assert not cache.is_unavailable("m5.large", "us-east-1a", "on-demand")
    assert not cache.is_unavailable("m5.large", "us-east-1b", "spot")
    assert not cache.is_unavailable("m5.xlarge", "us-east-1a", "spot")
    clock.advance(timedelta(minutes=3) - timedelta(seconds=1))
    assert cache.is_unavailable("m5.large", "us-east-1a", "spot")
    clock.advance(timedelta(seconds=1))
    assert not cache.is_unavailable("m5.large", "us-east-1a", "spot")
    assert cache.entries() == {}


def test_marking_again_restarts_the_time_and_keeps_the_reason() -> None:
    clock = VirtualClock()
    cache = UnavailableOfferings(clock)
    cache.mark_unavailable("c5.large", "us-east-1a", "spot")
    clock.advance(timedelta(minutes=2))
    cache.mark_unavailable("c5.large", "us-east-1a", "spot", reason="InsufficientInstanceCapacity")
    clock.advance(timedelta(minutes=2))
    assert cache.is_unavailable("c5.large", "us-east-1a", "spot")
    key = OfferingKey("c5.large", "us-east-1a", "spot")
    assert cache.entries() == {key: EPOCH + timedelta(minutes=5)}
    assert cache.reason(key) == "InsufficientInstanceCapacity"


def test_the_ttl_is_configurable_and_must_be_positive() -> None:
    clock = VirtualClock()
    cache = UnavailableOfferings(clock, ttl=timedelta(seconds=30))
    cache.mark_unavailable("m5.large", "us-east-1a", "on-demand")
    clock.advance(timedelta(seconds=30))
    assert not cache.is_unavailable("m5.large", "us-east-1a", "on-demand")
    with pytest.raises(ValueError, match="positive"):
        UnavailableOfferings(clock, ttl=timedelta(0))


def test_a_capacity_type_mark_covers_every_offering_of_that_type() -> None:
    clock = VirtualClock()
    cache = UnavailableOfferings(clock)
    cache.mark_capacity_type_unavailable("spot")
    assert cache.is_unavailable("anything.large", "us-east-1c", "spot")
    assert not cache.is_unavailable("anything.large", "us-east-1c", "on-demand")
    clock.advance(timedelta(minutes=3))
    assert not cache.is_unavailable("anything.large", "us-east-1c", "spot")


def test_apply_turns_marked_offerings_unavailable_and_shares_unchanged_tuples() -> None:
    clock = VirtualClock()
    cache = UnavailableOfferings(clock)
    offerings = (
        Offering("us-east-1a", "spot", 0.04, True),
        Offering("us-east-1b", "spot", 0.05, True),
    )
    assert cache.apply("m5.large", offerings) is offerings
    cache.mark_unavailable("m5.large", "us-east-1b", "spot")
    assert cache.apply("c5.large", offerings) is offerings
    assert cache.apply("m5.large", offerings) == (
        Offering("us-east-1a", "spot", 0.04, True),
        Offering("us-east-1b", "spot", 0.05, False),
    )
    cache.clear()
    assert cache.apply("m5.large", offerings) is offerings
