"""The live side-by-side benchmark end to end at a small size: Karpenter's controller and the
native agent each provision a few pods on a cluster of their own, roll them onto the new image
under the 10% budget and consolidate, and every figure of both rows is measured."""

from __future__ import annotations

import json

import pytest

from bench.live import main
from tests.support.eksworld import unbuilt
from tests.support.required import unavailable

pytestmark = pytest.mark.integration


def test_both_controllers_run_every_phase_and_every_figure_is_measured(
    capsys: pytest.CaptureFixture[str],
) -> None:
    if missing := unbuilt():
        unavailable(f"not built: {', '.join(missing)} (make tools; needs Go)")
    code = main(["--pods", "8", "--consolidation-wait", "5", "--timeout", "240", "--json"])
    out, err = capsys.readouterr()
    rows = {
        r["controller"]: r for r in map(json.loads, (x for x in out.splitlines() if x[:1] == "{"))
    }
    assert set(rows) == {"karpenter", "driftwave"}, out
    for name, row in rows.items():
        assert row["problems"] == [], (name, row["problems"], err)
        assert row["provision_s"] > 0, name
        assert row["nodes"] >= 1, name
        assert row["hourly"] > 0, name
        assert row["provision_cpu"] > 0, name
        assert row["drift_s"] > 0, name
        assert row["drift_nodes_replaced"] == row["nodes"], name
        assert row["evictions_allowed"] >= 1, name
        assert 1 <= row["most_disrupted"] <= row["allowed_then"], name
        assert row["over_budget_samples"] == 0, name
        assert row["pdb_short"] == 0, name
        assert row["deleted_without_eviction"] == 0, name
        assert row["consolidated_nodes"] >= 1, name
        assert row["peak_rss_mb"] > 10, name
    assert code == 0, err
