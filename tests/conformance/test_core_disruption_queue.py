"""core-disruption: how a started command is carried out (Karpenter's
pkg/controllers/disruption/queue_test.go) and the controller-wide cases of suite_test.go
(disruption taints, successive replacements, no duplicated capacity)."""

from __future__ import annotations

from pathlib import Path

from agent.api.kube import Node, Taint
from common.kubemodel import Condition
from tests.conformance.karpenter import mirrors
from tests.conformance.test_core_disruption_kit import (
    NEW_AMI,
    SUITE,
    UP,
    Sim,
    deployment,
    drift_at,
    pool,
    scale,
)

SUITE = SUITE
QUEUE = "pkg/controllers/disruption/queue_test.go"
SUITE_FILE = "pkg/controllers/disruption/suite_test.go"
Q = "Queue / Reconcile / "
DRIFT = 300.0


def _tainted(sim: Sim, node: str) -> bool:
    found = sim.world.cluster.get(Node, node)
    return any(t.key == "karpenter.sh/disrupted" for t in found.spec.taints)


def _initialized_at(sim: Sim, claim: str) -> float:
    return float(
        next(e["t"] for e in sim.events("Initialized") if e["object"] == f"nodeclaim/{claim}")
    )


def _disrupted_at(sim: Sim, node: str) -> float:
    return float(next(e["t"] for e in sim.events("Disrupted") if e["object"] == f"node/{node}"))


@mirrors(QUEUE, Q + "should keep nodes tainted when replacements haven't finished initialization")
def test_a_candidate_stays_tainted_while_its_replacement_boots(tmp_path: Path) -> None:
    sim = Sim(tmp_path, [pool(), deployment("web", 1, "3")], [drift_at("5m")]).run(DRIFT + 5)
    (command,) = sim.commands("drift")
    (node,) = command["candidates"]
    assert _tainted(sim, node)
    assert any(c.name == sim.claim_of(node).name for c in sim.claims())
    assert not sim.claim_of(node).metadata.deletion_timestamp
    assert sim.events("Disrupted") == []


@mirrors(QUEUE, Q + "should untaint nodes when a command times out")
def test_a_command_whose_replacement_never_initializes_times_out(tmp_path: Path) -> None:
    faulty = {"at": "5m", "publishAmi": {**NEW_AMI, "faulty": True}}
    sim = Sim(tmp_path, [pool(), deployment("web", 1, "3")], [faulty]).run(DRIFT + 5)
    (command,) = sim.commands("drift")
    (node,) = command["candidates"]
    sim.run(DRIFT + 11 * 60)
    failed = sim.events("DisruptionFailed")
    assert failed
    assert "did not initialize within 10m" in failed[0]["reason"]  # not 0:10:00
    assert 600 <= failed[0]["t"] - DRIFT <= 620
    untainted = [e["t"] for e in sim.events("Untainted") if e["object"] == f"node/{node}"]
    assert failed[0]["t"] in untainted  # released when the command failed (drift may retry)
    assert sim.pods("web")[0].spec.node_name == node


@mirrors(QUEUE, Q + "should fully handle a command when replacements are initialized")
def test_the_candidate_is_deleted_once_its_replacement_initialized(tmp_path: Path) -> None:
    sim = Sim(tmp_path, [pool(), deployment("web", 1, "3")], [drift_at("5m")]).run(1200)
    (command,) = sim.commands("drift")
    (node,) = command["candidates"]
    (replacement,) = command["replacements"]
    ready = _initialized_at(sim, replacement)
    assert _disrupted_at(sim, node) >= ready
    assert [c.name for c in sim.claims()] == [replacement]
    assert sim.pods("web")[0].spec.node_name == sim.claims()[0].status.node_name


@mirrors(QUEUE, Q + "should only finish a command when all replacements are initialized")
def test_the_candidate_waits_for_every_replacement(tmp_path: Path) -> None:
    smaller = {"at": "3m", "apply": pool(types=("m6i.xlarge",))}
    sim = Sim(tmp_path, [pool(types=("m6i.2xlarge",)), deployment("web", 2, "3")], [smaller])
    sim.run(1200)
    (command,) = sim.commands("drift")
    assert len(command["replacements"]) == 2
    last = max(_initialized_at(sim, name) for name in command["replacements"])
    assert _disrupted_at(sim, command["candidates"][0]) >= last


@mirrors(QUEUE, Q + "should not wait for replacements when none are needed")
def test_a_command_without_replacements_deletes_at_once(tmp_path: Path) -> None:
    sim = Sim(tmp_path, [pool(), deployment("web", 2, "3", spread=True)],
              [scale("web", 0, "3m"), drift_at("5m")]).run(DRIFT + 1)  # fmt: skip
    commands = sim.commands("drift")
    assert commands
    for command in commands:
        assert command["replacements"] == []
        (node,) = command["candidates"]
        assert _disrupted_at(sim, node) == command["t"]


@mirrors(QUEUE, Q + "should finish two commands in order as replacements are initialized")
def test_two_commands_each_finish_when_their_own_replacement_is_up(tmp_path: Path) -> None:
    sim = Sim(tmp_path, [pool(), deployment("web", 2, "3", spread=True)], [drift_at("5m")])
    sim.run(1200)
    commands = sim.commands("drift")
    assert len(commands) == 2
    for command in commands:
        (replacement,) = command["replacements"]
        assert _disrupted_at(sim, command["candidates"][0]) >= _initialized_at(sim, replacement)
    assert sim.summary()["podsLost"] == 0


# ---------------------------------------------------------------- suite_test.go


@mirrors(SUITE_FILE, "Disruption Taints / should remove taints from NodeClaims that were left tainted from a previous disruption action")  # fmt: skip  # noqa: E501
def test_a_leftover_disruption_taint_is_removed(tmp_path: Path) -> None:
    sim = Sim(tmp_path, [pool(), deployment("web", 1, "1")]).run(UP)
    (node,) = [n.metadata.name or "" for n in sim.nodes()]
    found = sim.world.cluster.get(Node, node)
    taint = Taint(key="karpenter.sh/disrupted", effect="NoSchedule")
    spec = found.spec.model_copy(update={"taints": [*found.spec.taints, taint]})
    sim.world.cluster.update(found.model_copy(update={"spec": spec}))
    claim = sim.claim_of(node)
    marked = Condition(type="DisruptionReason", status="True", reason="Drifted", message="")
    status = claim.status.model_copy(update={"conditions": [*claim.status.conditions, marked]})
    sim.world.cluster.update(claim.model_copy(update={"status": status}))
    sim.world.disruption.dirty = True
    sim.run(UP + 20)
    assert not _tainted(sim, node)
    assert not any(c.type == "DisruptionReason" for c in sim.claim_of(node).status.conditions)


@mirrors(SUITE_FILE, "Disruption Taints / should add and remove taints from NodeClaims that fail to disrupt")  # fmt: skip  # noqa: E501
def test_a_failed_command_takes_its_taint_and_mark_back(tmp_path: Path) -> None:
    fault = {"at": "4m", "fault": {"insufficientCapacity": {"for": "2h"}}}
    sim = Sim(tmp_path, [pool(), deployment("web", 1, "3")], [fault, drift_at("5m")])
    sim.run(DRIFT - 1)
    (node,) = [n.metadata.name or "" for n in sim.nodes()]
    sim.run(DRIFT + 1)
    assert [e["t"] for e in sim.events("Tainted")][:1] == [DRIFT]
    assert sim.events("DisruptionFailed")
    assert not _tainted(sim, node)
    assert not any(c.type == "DisruptionReason" for c in sim.claim_of(node).status.conditions)


@mirrors(SUITE_FILE, "Simulate Scheduling / should allow multiple replace operations to happen successively")  # fmt: skip  # noqa: E501
def test_replacements_follow_one_another(tmp_path: Path) -> None:
    one = {"consolidateAfter": "Never", "budgets": [{"nodes": "1"}]}
    sim = Sim(tmp_path, [pool(disruption=one), deployment("web", 4, "3", spread=True)],
              [drift_at("5m")]).run(3600)  # fmt: skip
    commands = sim.commands("drift")
    assert len(commands) == 4
    assert len({n for c in commands for n in c["candidates"]}) == 4
    starts = [c["t"] for c in commands]
    assert starts == sorted(starts)
    assert len(set(starts)) == 4  # one at a time, each after the previous finished
    assert sim.summary()["nodePools"]["default"]["maxConcurrentDisruptions"] == 1
    assert sim.summary()["podsLost"] == 0


@mirrors(SUITE_FILE, "Simulate Scheduling / should ensure that we do not duplicate capacity for disrupted nodes with provisioning")  # fmt: skip  # noqa: E501
def test_the_provisioner_does_not_launch_for_pods_a_replacement_will_take(tmp_path: Path) -> None:
    sim = Sim(tmp_path, [pool(), deployment("web", 1, "3")], [drift_at("5m")]).run(1200)
    (command,) = sim.commands("drift")
    created = [e for e in sim.events("CreatedNodeClaim") if e["t"] >= DRIFT]
    assert [e["object"] for e in created] == [f"nodeclaim/{command['replacements'][0]}"]
    assert len(sim.claims()) == 1


@mirrors(SUITE_FILE, "Simulate Scheduling / should allow pods on deleting nodes to reschedule to uninitialized nodes")  # fmt: skip  # noqa: E501
def test_pods_of_disrupted_nodes_count_on_replacements_still_booting(tmp_path: Path) -> None:
    budget = {"consolidateAfter": "Never", "budgets": [{"nodes": "100%"}]}
    sim = Sim(tmp_path, [pool(disruption=budget), deployment("web", 3, "3", spread=True)],
              [drift_at("5m")]).run(DRIFT + 1)  # fmt: skip
    commands = sim.commands("drift")
    assert len(commands) == 3  # each decided while the earlier replacements were still booting
    assert all(len(c["replacements"]) == 1 for c in commands)
    sim.run(1800)
    assert len(sim.claims()) == 3
    assert sim.summary()["pendingPods"] == 0
