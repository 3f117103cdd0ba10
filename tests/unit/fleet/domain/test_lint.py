"""Warnings for risky but valid Fleet and Release settings."""

from __future__ import annotations

from typing import Any

import pytest

from common.kubemodel import parse_manifest
from fleet.domain.fleet import Fleet
from fleet.domain.lint import fleet_lint, is_prod_like
from fleet.domain.release import Release
from tests.unit.agent.api.helpers import with_field
from tests.unit.fleet.domain.helpers import fleet, release


def warnings(model: type[Fleet] | type[Release], data: dict[str, Any]) -> dict[str, str]:
    return dict(fleet_lint(parse_manifest(model, data)))


def test_the_minimal_manifests_have_no_warnings() -> None:
    assert warnings(Fleet, fleet()) == {}
    assert warnings(Release, release()) == {}


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("prod", True),
        ("production", True),
        ("prod-eu", True),
        ("us-prd", True),
        ("live", True),
        ("product", False),
        ("preprod", False),
        ("staging", False),
    ],
)
def test_prod_like_names(name: str, expected: bool) -> None:
    assert is_prod_like(name) is expected


def test_prod_ring_without_approval_warns_on_the_first_prod_ring() -> None:
    rings = [{"name": "canary"}, {"name": "prod-eu"}, {"name": "prod-us"}]
    found = warnings(Release, with_field(release(), "spec.strategy.rings", rings))
    assert list(found) == ["spec.strategy.rings[1].requireApproval"]
    assert "does not require approval" in found["spec.strategy.rings[1].requireApproval"]


def test_zero_soak_warns() -> None:
    found = warnings(Release, with_field(release(), "spec.strategy.rings[1].soak", "0s"))
    assert "no time to show" in found["spec.strategy.rings[1].soak"]


def test_failure_budget_on_the_first_ring_warns() -> None:
    found = warnings(Release, with_field(release(), "spec.strategy.rings[0].failureBudget", "5%"))
    assert "first ring" in found["spec.strategy.rings[0].failureBudget"]
    assert warnings(Release, with_field(release(), "spec.strategy.rings[1].failureBudget", 2)) == {}


def test_latest_alias_warns() -> None:
    data = with_field(release(), "spec.target.amiSelectorTerms", [{"alias": "al2023@latest"}])
    found = warnings(Release, data)
    assert "does not pin" in found["spec.target.amiSelectorTerms[0].alias"]


def test_fleet_ring_without_clusters_warns() -> None:
    data = with_field(fleet(), "spec.rings", ["canary", "dev", "prod"])
    found = warnings(Fleet, data)
    assert set(found) == {"spec.rings[1]"}
    assert "every release skips it" in found["spec.rings[1]"]


@pytest.mark.parametrize(
    "endpoint", ["http://127.0.0.1:9101", "http://localhost:9101", "http://[::1]:9101"]
)
def test_plain_http_on_loopback_does_not_warn(endpoint: str) -> None:
    data = with_field(fleet(), "spec.clusters[0].agent.endpoint", endpoint)
    assert "spec.clusters[0].agent.endpoint" not in warnings(Fleet, data)
