"""A drift replacement lands in the NodePool it was planned in.

A drifted node's pods may be planned onto a node of another NodePool than the node's own (the
member clusters' ``batch`` nodes hold pods that fit ``general`` just as well). The replacement
NodeClaim must be that NodePool's: its name, its ``karpenter.sh/nodepool`` label and its
requirements all of one pool. Before, the queue named it after the candidate's pool while its
requirements were the other pool's, so it drifted at once (RequirementsDrifted) and was
replaced again, for ever."""

from __future__ import annotations

from agent.api.nodeclaim import NodeClaim
from agent.service.service import AgentService
from agent.sim.member import member_world
from agent.sim.realtime import RealTimeSimulation

NODEPOOL = "karpenter.sh/nodepool"


def _pool_of_requirements(claim: NodeClaim) -> str | None:
    for requirement in claim.spec.requirements:
        if requirement.key == NODEPOOL and requirement.values:
            return requirement.values[0]
    return None


def test_an_upgrade_replaces_each_node_once_and_every_claim_is_of_one_pool() -> None:
    world = member_world("canary-1", nodes=200, seed=1, ami_release="v20251202")
    service = AgentService(world, name="canary-1")
    sim = RealTimeSimulation(world, 600.0, lock=service.lock, on_step=service.refresh)
    sim.step(600)
    before = len(world.cluster.list(NodeClaim))
    service.apply_wave("w1", {"target": {"amiSelectorTerms": [{"alias": "al2023@v20251216"}]}})
    for _ in range(120):
        sim.step(30)
        progress = service.wave("w1").progress
        if progress.on_target == progress.nodes and not progress.disrupting:
            break
    sim.step(1800)  # half an hour more: a claim of mixed pools would drift and be replaced
    progress = service.wave("w1").progress
    assert progress.drifted == 0, progress
    assert progress.on_target == progress.nodes, progress
    mixed = [
        (c.name, c.metadata.labels.get(NODEPOOL), _pool_of_requirements(c))
        for c in world.cluster.list(NodeClaim)
        if _pool_of_requirements(c) not in (None, c.metadata.labels.get(NODEPOOL))
    ]
    assert mixed == []
    assert progress.nodes_replaced <= before, progress  # each node once, no churn
