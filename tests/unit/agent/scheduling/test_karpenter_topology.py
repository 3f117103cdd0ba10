"""Topology as Karpenter's scheduler handles it: spread over capacity types, preferred node
affinity leaving a spread's domains alone, ``matchLabelKeys``, pods retried while a solve makes
progress, and zone anti-affinity that does not shut out the pods it targets."""

from __future__ import annotations

from collections import Counter

import pytest

from agent.api.kube import Pod
from agent.scheduling.pods import AffinityTerm, LabelMatcher, SpreadConstraint, shapes_of
from agent.scheduling.queue import PodQueue
from agent.scheduling.requirement import Requirement
from agent.scheduling.requirements import PreferredTerm, Requirements
from agent.scheduling.scheduler import Result
from agent.scheduling.strategy import Strategy, make_scheduler, solve
from tests.unit.agent.scheduling.test_scheduler import CAPACITY, ZONE, pods, pool, shape

WEB = LabelMatcher((("app", "web"),))
STRATEGIES: list[Strategy] = ["karpenter", "driftwave"]


def spread_of(result: Result, key: str) -> Counter[str]:
    """Pods per single domain of ``key`` (claims not narrowed to one domain count as '')."""
    out: Counter[str] = Counter()
    for claim in result.claims:
        domain = claim.requirements.get(key)
        name = next(iter(domain.values)) if len(domain.values) == 1 else ""
        out[name] += len(claim.pods)
    return out


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("pool_requirement", [None, Requirement(CAPACITY, "Exists")])
def test_a_spread_over_capacity_types_uses_spot_and_on_demand_alike(
    strategy: Strategy, pool_requirement: Requirement | None
) -> None:
    spread = SpreadConstraint(CAPACITY, 1, WEB, True)
    reqs = [pool_requirement] if pool_requirement else []
    result = solve(
        [pool("default", *reqs)],
        pods(4, shape(labels={"app": "web"}, spread=(spread,))),
        strategy=strategy,
    )
    assert result.errors == {}
    assert spread_of(result, CAPACITY) == {"on-demand": 2, "spot": 2}


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_preferred_zone_does_not_shrink_the_zones_a_spread_counts(strategy: Strategy) -> None:
    preferred = PreferredTerm(10, Requirements(Requirement(ZONE, "In", ["test-zone-1"])))
    web = shape(
        labels={"app": "web"}, spread=(SpreadConstraint(ZONE, 1, WEB, True),), preferred=[preferred]
    )
    result = solve([pool()], pods(6, web), strategy=strategy)
    assert result.errors == {}
    assert spread_of(result, ZONE) == {"test-zone-1": 2, "test-zone-2": 2, "test-zone-3": 2}


def _pod(name: str, version: str, zone: str | None = None) -> Pod:
    return Pod.model_validate(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": "default",
                "labels": {"app": "web", "v": version},
            },
            "spec": {
                "nodeSelector": {ZONE: zone} if zone else {},
                "containers": [
                    {"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}
                ],
                "topologySpreadConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": ZONE,
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {"matchLabels": {"app": "web"}},
                        "matchLabelKeys": ["v"],
                    }
                ],
            },
        },
        by_alias=True,
    )


def test_match_label_keys_narrow_the_spread_selector_by_the_pods_own_values() -> None:
    (one,) = shapes_of([_pod("a", "1")])
    (spread,) = one.shape.spread
    assert spread.selector is not None
    assert spread.selector.matches({"app": "web", "v": "1"})
    assert not spread.selector.matches({"app": "web", "v": "2"})


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_each_revision_spreads_on_its_own_with_match_label_keys(strategy: Strategy) -> None:
    # revision 1's two pods must run in zone 1; revision 2 spreads over all three zones, zone 1
    # included (counted together, zone 1 would be two ahead and revision 2 would avoid it)
    old = [_pod(f"a{i}", "1", zone="test-zone-1") for i in range(2)]
    batch = shapes_of(old + [_pod(f"b{i}", "2") for i in range(3)])
    result = solve([pool()], batch, strategy=strategy)
    assert result.errors == {}
    new: Counter[str] = Counter()
    for claim in result.claims:
        (zone,) = claim.requirements.get(ZONE).values
        new.update(zone for ref in claim.pods if ref.shape.labels["v"] == "2")
    assert new == {"test-zone-1": 1, "test-zone-2": 1, "test-zone-3": 1}


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_affinity_to_pods_of_the_same_batch_schedules_once_they_have(strategy: Strategy) -> None:
    # the pods with affinity are bigger, so they come first and fail; retried after the pods
    # they follow have been placed, they join them
    follow = AffinityTerm(ZONE, LabelMatcher((("app", "db"),)), frozenset({"default"}))
    web = shape(cpu=2000, labels={"app": "web"}, affinity=(follow,))
    db = shape(
        cpu=500,
        labels={"app": "db"},
        alternatives=[Requirements(Requirement(ZONE, "In", ["test-zone-2"]))],
    )
    result = solve([pool()], pods(2, web, "w") + pods(2, db, "d"), strategy=strategy)
    assert result.errors == {}
    assert spread_of(result, ZONE) == {"test-zone-2": 4}


def test_the_queue_retries_while_a_round_makes_progress_and_stops_after() -> None:
    a, b, c = pods(3, shape())
    queue = PodQueue([a, b, c])
    assert queue.pop() is a
    queue.push(a)  # failed: [b, c, a]
    assert queue.pop() is b  # b succeeds: progress
    assert queue.pop() is c
    queue.push(c)  # failed: [a, c]
    assert queue.pop() is a  # a was pushed with 3 in the queue, now 2: tried again
    queue.push(a)  # failed again: [c, a]
    assert queue.pop() is None  # c was pushed with 2 in the queue: a full round without progress
    assert len(queue) == 2


def test_a_pending_zone_anti_affinity_does_not_shut_out_the_pods_it_targets() -> None:
    # the web pods can only run in zone 1; the small pod that must avoid them goes after them
    # (as in Karpenter's order), not first into zone 1
    avoid = AffinityTerm(ZONE, WEB, frozenset({"default"}))
    loner = shape(cpu=100, labels={"app": "loner"}, anti_affinity=(avoid,))
    web = shape(
        cpu=2000,
        labels={"app": "web"},
        alternatives=[Requirements(Requirement(ZONE, "In", ["test-zone-1"]))],
    )
    batch = pods(1, loner, "l") + pods(3, web, "w")
    result = make_scheduler([pool()], batch).solve(batch)  # the default strategy, on its own
    assert result.errors == {}
    zones = {
        ref.name: claim.requirements.get(ZONE) for claim in result.claims for ref in claim.pods
    }
    assert not zones["l0"].has("test-zone-1")
