"""The live side-by-side benchmark's own logic, without a cluster: the workload's split, what one
look at the cluster counts, the audit log's evictions, the verdict of each row and bad options."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.catalog.pricing import OnDemandPrices
from bench.live import Result, audit_since, main, table, verdict
from bench.live_cluster import SHAPES, Look, create_workload, replicas


def node(provider: str, kind: str = "m5.xlarge", taints: list[str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": provider, "labels": {"node.kubernetes.io/instance-type": kind}},
        "spec": {
            "providerID": provider,
            "taints": [{"key": key, "effect": "NoSchedule"} for key in taints or []],
        },
    }


def claim(name: str, provider: str, image: str, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "status": {"providerID": provider, "imageID": image}}


def test_the_pods_are_spread_over_every_shape_and_add_up() -> None:
    assert sum(replicas(1000).values()) == 1000
    assert set(replicas(1000)) == {name for name, _, _ in SHAPES}
    split = replicas(10)
    assert sum(split.values()) == 10
    assert max(split.values()) - min(split.values()) == 1


def test_the_workload_has_a_pdb_per_deployment_and_no_empty_deployment() -> None:
    sent: list[tuple[str, str, dict[str, Any]]] = []

    class Recorder:
        def request(self, method: str, path: str, body: dict[str, Any]) -> None:
            sent.append((method, path, body))

    create_workload(Recorder(), 3)  # type: ignore[arg-type]
    pdbs = [b for _, p, b in sent if p.endswith("/poddisruptionbudgets")]
    deployments = [b for _, p, b in sent if p.endswith("/deployments")]
    assert len(pdbs) == len(SHAPES)
    assert {d["spec"]["replicas"] for d in deployments} == {1}
    assert len(deployments) == 3
    assert all(p["spec"]["maxUnavailable"] == "10%" for p in pdbs)


def test_a_look_counts_disrupted_claims_the_budget_pdbs_and_the_image() -> None:
    nodes = [node("aws:///a/i-1", taints=["karpenter.sh/disrupted"]), node("aws:///a/i-2")]
    nodes += [node(f"aws:///a/i-{n}") for n in range(3, 12)]
    claims = [
        claim("one", "aws:///a/i-1", "ami-old"),
        claim("two", "aws:///a/i-2", "ami-old", True),
    ]
    claims += [claim(f"c{n}", f"aws:///a/i-{n}", "ami-new") for n in range(3, 12)]
    pdbs: list[dict[str, Any]] = [
        {"status": {"desiredHealthy": 9, "currentHealthy": 7}},
        {"status": {}},
    ]
    seen = Look(nodes, claims, [], pdbs)
    assert seen.disrupted() == {"one", "two"}
    assert seen.allowed(10) == 2  # 10% of 11 Nodes, rounded up
    assert seen.below_pdb() == 2
    assert not seen.on_image("ami-new")
    assert Look(nodes[2:], claims[2:], [], []).on_image("ami-new")
    assert not Look(nodes[3:], claims[2:], [], []).on_image("ami-new"), "a claim without its Node"


def test_the_price_is_the_packaged_list_and_an_unpriced_type_is_named() -> None:
    prices = OnDemandPrices.packaged()
    m5 = prices.price("m5.xlarge")
    assert m5 is not None
    seen = Look([node("a"), node("b"), node("c", "no.such")], [], [], [])
    assert seen.hourly(prices) == pytest.approx(2 * m5)
    assert seen.unpriced(prices) == ["no.such"]


def test_the_audit_log_counts_evictions_and_deletions_outside_the_cluster(tmp_path: Path) -> None:
    def event(verb: str, code: int, agent: str, sub: str | None = None) -> str:
        ref = {"resource": "pods", **({"subresource": sub} if sub else {})}
        return json.dumps(
            {
                "stage": "ResponseComplete",
                "verb": verb,
                "objectRef": ref,
                "userAgent": agent,
                "responseStatus": {"code": code},
            }
        )

    log = tmp_path / "audit.log"
    log.write_text(event("create", 201, "karpenter/x", "eviction") + "\n")
    offset = log.stat().st_size
    lines = [
        event("create", 201, "karpenter/x", "eviction"),
        event("create", 429, "karpenter/x", "eviction"),
        event("create", 429, "karpenter/x", "eviction"),
        event("delete", 200, "kwok/v0.8.0"),
        event("delete", 200, "kube-controller-manager/v0.0.0"),
        event("delete", 200, "OpenAPI-Generator/37.0.1/python"),
        event("delete", 404, "OpenAPI-Generator/37.0.1/python"),
    ]
    with log.open("a") as out:
        out.write("\n".join(lines) + "\n")
    assert audit_since(log, offset) == (1, 2, 1)


def test_each_row_names_the_lower_figure_and_its_ratio() -> None:
    assert verdict(10.0, 5.0) == "driftwave agent (2.00x)"
    assert verdict(3.0, 6.0) == "Karpenter v1.14.1 (2.00x)"
    assert verdict(0.0, 0.0) == "tie"
    assert verdict(0.0, 2.0) == "Karpenter v1.14.1 (infx)"
    assert verdict(None, 1.0) == "-"


def test_the_table_has_every_row_and_says_what_did_not_finish() -> None:
    ours = Result("driftwave", 10, provision_s=12.0, nodes=2, hourly=0.4, drift_s=30.0)
    theirs = Result("karpenter", 10, provision_s=24.0, nodes=2, hourly=0.5, drift_s=None)
    text = table({"karpenter": theirs, "driftwave": ours}, 600)
    assert "| (a) time until every pod Running, s | 24.0 | 12.0 | driftwave agent (2.00x) |" in text
    assert "| (b) time to converge on the new image, s | did not finish | 30.0 | - |" in text
    assert "(c) nodes 10 min after scaling to half" in text


@pytest.mark.parametrize(
    ("argv", "named"),
    [(["--controllers", "karpenter,nope"], "--controllers"), (["--pods", "0"], "--pods")],
)
def test_bad_options_are_named_and_exit_1(
    argv: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 1
    assert named in capsys.readouterr().err
