"""core-disruption: the spot-node entries of Karpenter's consolidation tables
(pkg/controllers/disruption/consolidation_test.go), whose suite turns spot-to-spot consolidation
on. Where the entry's outcome does not hinge on replacing spot with spot, driftwave agrees; where
it does, driftwave keeps Karpenter's default (no spot-to-spot replacement) and says so."""

from __future__ import annotations

from pathlib import Path

from tests.conformance.karpenter import departs, mirrors
from tests.conformance.test_core_disruption_consolidation import (
    FREED,
    MULTI,
    REP,
    SPOT,
    SPOT_TO_SPOT,
    _consolidations,
    _freed,
    _types,
    _underutilized,
)
from tests.conformance.test_core_disruption_kit import (
    DND,
    SUITE,
    Sim,
    deployment,
    pdb,
    pool,
    scale,
)

SUITE = SUITE
FILE = "pkg/controllers/disruption/consolidation_test.go"
S = ("spot",)


@mirrors(FILE, REP + "can replace nodes, considers PDB" + SPOT)
def test_a_blocking_pdb_holds_a_spot_node(tmp_path: Path) -> None:
    sim = _freed(tmp_path, 1, capacity=S, extra=(pdb("small", maxUnavailable=0),))
    sim.run(FREED + 300)
    found, held = sim.candidates("graceful")
    (node,) = [n.metadata.name or "" for n in sim.nodes()]
    assert node not in found
    assert "prevents pod evictions" in held[node]
    assert sim.commands() == []


@mirrors(FILE, REP + "can replace nodes, considers karpenter.sh/do-not-disrupt set to true on nodes" + SPOT)  # fmt: skip  # noqa: E501
def test_a_do_not_disrupt_spot_node_is_held(tmp_path: Path) -> None:
    sim = _freed(tmp_path, 1, capacity=S)
    (node,) = [n.metadata.name or "" for n in sim.nodes()]
    sim.annotate_node(node, {DND: "true"})
    sim.run(FREED + 300)
    assert DND in sim.candidates("graceful")[1][node]
    assert sim.commands() == []


@mirrors(FILE, REP + "can replace nodes, considers karpenter.sh/do-not-disrupt set to true on pods" + SPOT)  # fmt: skip  # noqa: E501
def test_a_spot_node_with_a_do_not_disrupt_pod_is_held(tmp_path: Path) -> None:
    sim = _freed(tmp_path, 1, capacity=S,
                 small=deployment("small", 1, "1", annotations={DND: "true"}))  # fmt: skip
    sim.run(FREED + 300)
    (node,) = [n.metadata.name or "" for n in sim.nodes()]
    assert DND in sim.candidates("graceful")[1][node]
    assert sim.commands() == []


@departs(SPOT_TO_SPOT)
@mirrors(FILE, REP + "can replace nodes, PDB namespace must match" + SPOT)
def test_a_spot_node_free_of_budgets_is_still_not_replaced_by_spot(tmp_path: Path) -> None:
    elsewhere = pdb("small", maxUnavailable=0)
    elsewhere["metadata"]["namespace"] = "other"
    sim = _freed(tmp_path, 1, capacity=S, extra=(elsewhere,))
    (node,) = [n.metadata.name or "" for n in sim.nodes()]
    assert node in sim.run(FREED + 120).candidates("graceful")[0]  # the budget does not hold it
    sim.run(FREED + 300)
    assert _consolidations(sim) == []
    assert _types(sim) == ["m6i.2xlarge"]


@departs(SPOT_TO_SPOT)
@mirrors(FILE, REP + "can replace nodes if another nodePool returns no instance types" + SPOT)
def test_a_spot_node_is_not_replaced_whatever_other_pools_offer(tmp_path: Path) -> None:
    nothing = pool("nothing", types=("m6i.xlarge",), capacity=("reserved",), weight=50)
    sim = _freed(tmp_path, 1, capacity=S, extra=(nothing,))
    sim.run(FREED + 300)
    assert _consolidations(sim) == []
    assert _types(sim) == ["m6i.2xlarge"]


@mirrors(FILE, MULTI + "won't merge 2 nodes into 1 of the same type" + SPOT)
def test_spot_nodes_are_deleted_rather_than_merged_into_their_own_type(tmp_path: Path) -> None:
    sim = _freed(tmp_path, 3, types=("m6i.xlarge",), big="2500m", capacity=S)
    sim.run(FREED + 300)
    (command,) = _consolidations(sim)
    assert len(command["candidates"]) == 2
    assert command["replacements"] == []
    assert len(sim.nodes()) == 1


@mirrors(FILE, MULTI + "should wait for the node TTL for non-empty nodes before consolidating (multi-node)" + SPOT)  # fmt: skip  # noqa: E501
def test_spot_consolidation_waits_for_consolidate_after(tmp_path: Path) -> None:
    sim = _freed(tmp_path, 3, types=("m6i.xlarge",), big="2500m", capacity=S,
                 disruption=_underutilized(after="4m"))  # fmt: skip
    sim.run(FREED + 230)
    assert sim.commands() == []
    sim.run(FREED + 400)
    first = _consolidations(sim)[0]
    assert first["t"] >= FREED + 240


@mirrors(FILE, MULTI + "should consolidate multiple empty nodes via multi-nodeclaim consolidation" + SPOT)  # fmt: skip  # noqa: E501
def test_empty_spot_nodes_go_together(tmp_path: Path) -> None:
    manifests = [pool(disruption=_underutilized(), capacity=S),
                 deployment("web", 3, "3", spread=True)]  # fmt: skip
    sim = Sim(tmp_path, manifests, [scale("web", 0, "3m")]).run(FREED - 1)
    before = {n.metadata.name for n in sim.nodes()}
    sim.run(FREED + 300)
    (command,) = sim.commands()
    assert set(command["candidates"]) == before
    assert sim.nodes() == []
