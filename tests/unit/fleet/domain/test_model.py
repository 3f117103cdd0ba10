"""The plain data built from manifests, label selection, and the release-against-fleet rules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from common.kubemodel import parse_manifest
from fleet.domain.fleet import Fleet
from fleet.domain.gates import GatePolicy, MetricBound
from fleet.domain.model import (
    RingSpec,
    TargetInfo,
    fleet_info,
    nothing_to_roll,
    release_info,
    release_problems,
    selects,
)
from fleet.domain.release import Release
from fleet.domain.waves import Growing, MaxConcurrency
from fleet.domain.windows import Freeze, Window
from tests.unit.agent.api.helpers import with_field
from tests.unit.fleet.domain.helpers import (
    fleet,
    info_cluster,
    info_fleet,
    info_release,
    release,
)


def test_fleet_info_carries_rings_clusters_windows_and_freezes() -> None:
    data = with_field(
        fleet(),
        "spec.clusters[1].maintenanceWindows",
        [{"schedule": "0 22 * * 1-5", "duration": "4h", "timeZone": "Europe/Berlin"}],
    )
    data = with_field(data, "spec.clusters[1].labels", {"tier": "web"})
    data = with_field(
        data,
        "spec.freezes",
        [{"start": "2026-12-20T00:00:00Z", "end": "2027-01-04T00:00:00Z", "reason": "eoy"}],
    )
    info = fleet_info(parse_manifest(Fleet, data))
    assert info.name == "payments"
    assert info.rings == ("canary", "prod")
    prod = info.clusters[1]
    assert (prod.name, prod.ring, prod.account, prod.region) == (
        "web-prod",
        "prod",
        "main",
        "us-east-1",
    )
    assert prod.labels == {"tier": "web"}
    assert prod.windows == (Window("0 22 * * 1-5", timedelta(hours=4), "Europe/Berlin"),)
    assert info.freezes == (
        Freeze(datetime(2026, 12, 20, tzinfo=UTC), datetime(2027, 1, 4, tzinfo=UTC), "eoy"),
    )


def test_release_info_applies_the_defaults() -> None:
    info = release_info(parse_manifest(Release, release()))
    canary, prod = info.rings
    assert canary == RingSpec("canary")
    assert canary.waves == MaxConcurrency(count=1)
    assert canary.soak == timedelta(minutes=10)
    assert prod.require_approval
    assert info.cluster_labels is None
    assert (info.on_unreachable, info.on_cluster_added) == ("fail", "ignore")
    assert info.target.as_dict() == {"amiSelectorTerms": [{"alias": "al2023@v20251216"}]}


def test_release_info_reads_every_setting() -> None:
    prod = {
        "name": "prod",
        "growing": {"initial": 2, "factor": 3, "max": 9},
        "soak": "1h30m",
        "failureBudget": "10%",
        "onFailure": "halt",
        "gates": {
            "convergenceTimeout": "45m",
            "maxPendingPods": 5,
            "maxLaunchFailures": 2,
            "metrics": [
                {
                    "name": "slo",
                    "http": {"url": "https://slo.example/api", "field": "data.burn"},
                    "max": 1,
                }
            ],
        },
    }
    data = release(
        clusters={"matchLabels": {"tier": "web"}},
        strategy={
            "rings": [{"name": "canary", "maxConcurrency": "50%"}, prod],
            "onUnreachable": "skip",
            "onClusterAdded": "include",
        },
    )
    info = release_info(parse_manifest(Release, data))
    canary, ring = info.rings
    assert canary.waves == MaxConcurrency(percent=50)
    assert ring.waves == Growing(2, 3, 9)
    assert ring.soak == timedelta(minutes=90)
    assert ring.failure_budget == "10%"
    assert ring.on_failure == "halt"
    assert ring.gates.convergence_timeout == timedelta(minutes=45)
    assert ring.gates.metrics == (
        MetricBound("slo", max=1.0, source="http https://slo.example/api field data.burn"),
    )
    assert ring.policy("skip") == GatePolicy(ring.gates, "10%", False, "skip")
    assert info.cluster_labels == {"tier": "web"}
    assert (info.on_unreachable, info.on_cluster_added) == ("skip", "include")


def test_target_descriptions() -> None:
    assert TargetInfo(kubernetes_version="1.31").describe() == "Kubernetes 1.31"
    assert TargetInfo(kubernetes_version="1.31").as_dict() == {"kubernetesVersion": "1.31"}
    ami = TargetInfo(
        ami_selector_terms=({"alias": "al2023@v20251216"},),
        node_class_names=("default",),
        node_class_labels={"team": "web"},
    )
    assert ami.describe() == (
        "AMI alias al2023@v20251216 on EC2NodeClass default and EC2NodeClasses labelled team=web"
    )
    assert ami.as_dict()["nodeClasses"] == {"names": ["default"], "matchLabels": {"team": "web"}}
    assert TargetInfo(ami_selector_terms=({"id": "ami-1"},)).describe() == (
        "AMI id ami-1 on every EC2NodeClass"
    )


def test_selects_needs_every_label() -> None:
    labels = {"team": "web", "tier": "front"}
    assert selects(labels, None)
    assert selects(labels, {"team": "web"})
    assert not selects(labels, {"team": "web", "tier": "back"})
    assert not selects({}, {"team": "web"})


def test_release_problems() -> None:
    fleet_data = info_fleet(info_cluster("c1", "canary"), rings=("canary", "dev", "prod"))
    good = info_release(RingSpec("canary"), RingSpec("prod"))
    assert release_problems(good, fleet_data) == []
    bad = info_release(RingSpec("prod"), RingSpec("canary"), RingSpec("qa"))
    problems = release_problems(bad, fleet_data)
    assert [path for path, _ in problems] == [
        "spec.strategy.rings[1].name",
        "spec.strategy.rings[2].name",
    ]
    assert "rings follow the Fleet's order: canary, dev, prod" in problems[0][1]
    other = info_fleet(rings=("canary", "prod"))
    other = type(other)("billing", other.rings)
    assert release_problems(good, other)[0][0] == "spec.fleet"


def test_a_release_selecting_no_cluster_would_roll_nothing_and_is_a_problem() -> None:
    fleet_data = info_fleet(
        info_cluster("web-1", "canary", tier="web"), info_cluster("dev-1", "dev"),
        rings=("canary", "dev", "prod"),
    )  # fmt: skip
    assert nothing_to_roll(info_release(RingSpec("canary")), fleet_data) is None
    path, message = release_problems(info_release(RingSpec("prod")), fleet_data)[0]
    assert path == "spec.strategy.rings"
    assert "rings prod of fleet 'payments' hold no cluster: the release would roll nothing" in (
        message
    )
    db = info_release(RingSpec("canary"), RingSpec("dev"), labels={"tier": "db"})
    assert nothing_to_roll(db, fleet_data) == (
        "spec.clusters.matchLabels",
        "tier=db selects no cluster of fleet 'payments' in rings canary, dev: the release would "
        "roll nothing (rule: a release rolls at least one cluster)",
    )
    web_in_dev = info_release(RingSpec("dev"), labels={"tier": "web"})
    assert nothing_to_roll(web_in_dev, fleet_data) is not None, "web-1 is in a ring not rolled"


def test_targets_overlap_unless_both_name_disjoint_node_classes() -> None:
    def ami(*names: str, **labels: str) -> TargetInfo:
        return TargetInfo(({"alias": "al2023@latest"},), None, names, labels)

    k8s = TargetInfo(kubernetes_version="1.31")
    assert not ami("a").may_overlap(ami("b"))
    assert not ami("a", "c", team="x").may_overlap(ami("b", team="x"))
    assert ami("a", "b").may_overlap(ami("b"))
    assert ami("a").may_overlap(ami(team="x")), "labels may select class a"
    assert ami("a").may_overlap(ami()), "no selector: every class"
    assert ami().may_overlap(ami())
    assert k8s.may_overlap(ami("a"))
    assert ami("a").may_overlap(k8s)
    assert k8s.may_overlap(k8s)
