"""Taking a cluster over from Karpenter keeps Karpenter's drift decisions.

NodeClaims are stamped as Karpenter stamps them (its own hashes of the NodePool and EC2NodeClass
they were launched from, from the oracle, with a cluster CA bundle), then driftwave's drift
controller runs over them against the NodePool and EC2NodeClass as they are now. Its verdict
must be Karpenter's for the same claim (the oracle's drift controller), and a claim Karpenter
had already marked drifted stays drifted, also across a change of hash version.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings

from agent.api.conditions import condition
from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.clock import VirtualClock
from agent.hashing.stamps import (
    NODECLASS_HASH,
    NODECLASS_HASH_VERSION,
    NODEPOOL_HASH,
    NODEPOOL_HASH_VERSION,
    SpecMemo,
)
from agent.kube.simulated.cluster import SimulatedCluster
from agent.lifecycle.drift import DriftController
from common.kubemodel import parse_manifest
from tests.differential.objects import (
    Manifest,
    nodeclass_fields,
    nodeclass_from,
    pair_of,
    pool_from,
    template_fields,
)
from tests.differential.test_drift import AMIS, GROUPS, INSTANCE_ID, SUBNETS, claim_of
from tests.support.clouddrift import cloud_describing
from tests.support.oracle import KarpenterOracle

CA_BUNDLE = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg=="
STATUS: Manifest = {"amis": [AMIS[0], AMIS[3]], "subnets": SUBNETS, "securityGroups": GROUPS}
SUBNET, SECURITY_GROUPS = "subnet-1", ["sg-1", "sg-2"]
INSTANCE = {"id": INSTANCE_ID, "subnetID": SUBNET, "securityGroupIDs": SECURITY_GROUPS}


def karpenter_stamped(
    oracle: KarpenterOracle, claim: Manifest, pool: Manifest, nodeclass: Manifest
) -> Manifest:
    """``claim`` with the hash annotations Karpenter stamps when launching it."""
    pool_hash = oracle.ask("nodepool-hash", nodePool=pool)
    class_hash = oracle.ask("ec2nodeclass-hash", ec2NodeClass=nodeclass, caBundle=CA_BUNDLE)
    stamped = copy.deepcopy(claim)
    stamped["metadata"]["annotations"] = {
        NODEPOOL_HASH: pool_hash["hash"],
        NODEPOOL_HASH_VERSION: pool_hash["hashVersion"],
        NODECLASS_HASH: class_hash["hash"],
        NODECLASS_HASH_VERSION: class_hash["hashVersion"],
    }
    return stamped


def driftwave_verdict(claim: Manifest, pool: Manifest, nodeclass: Manifest) -> str | None:
    """The Drifted reason driftwave's drift controller leaves on ``claim`` (None: not drifted)."""
    clock = VirtualClock()
    cluster = SimulatedCluster(clock)
    for model, manifest in ((NodePool, pool), (EC2NodeClass, nodeclass), (NodeClaim, claim)):
        cluster.create(parse_manifest(model, manifest))
    controller = DriftController(
        cluster,
        clock,
        lambda *_: None,
        cloud_describing(SUBNET, SECURITY_GROUPS),
        hashes=SpecMemo(CA_BUNDLE),
    )
    controller.reconcile()
    name = claim["metadata"]["name"]
    found = condition(cluster.get(NodeClaim, name), "Drifted")
    return found.reason if found is not None and found.status == "True" else None


def karpenter_verdict(
    oracle: KarpenterOracle,
    claim: Manifest,
    launched_from: tuple[Manifest, Manifest],
    now_with: tuple[Manifest, Manifest],
) -> str | None:
    answer = oracle.ask(
        "drift",
        nodeClaim=claim,
        nodePool=now_with[0],
        ec2NodeClass=now_with[1],
        launchedWith={"nodePool": launched_from[0], "ec2NodeClass": launched_from[1]},
        instance=INSTANCE,
        caBundle=CA_BUNDLE,
    )
    return answer["reason"] or None


@settings(max_examples=60, deadline=None)
@given(pools=pair_of(template_fields()), classes=pair_of(nodeclass_fields()))
def test_claims_karpenter_stamped_drift_exactly_as_karpenter_says(
    karpenter_oracle: KarpenterOracle,
    pools: tuple[dict[str, Any], dict[str, Any]],
    classes: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    old_pool, new_pool = (pool_from(fields) for fields in pools)
    for pool in (old_pool, new_pool):
        pool["spec"]["template"]["spec"]["nodeClassRef"]["name"] = "default"
    old_class = nodeclass_from(classes[0], copy.deepcopy(STATUS))
    new_class = nodeclass_from(classes[1], copy.deepcopy(STATUS))
    claim = claim_of("m5.large", "on-demand", "ami-amd64")
    theirs = karpenter_verdict(
        karpenter_oracle, claim, (old_pool, old_class), (new_pool, new_class)
    )
    taken_over = karpenter_stamped(karpenter_oracle, claim, old_pool, old_class)
    assert driftwave_verdict(taken_over, new_pool, new_class) == theirs


def _drifted(claim: Manifest, reason: str) -> Manifest:
    marked = copy.deepcopy(claim)
    marked["status"]["conditions"].append(
        {"type": "Drifted", "status": "True", "reason": reason, "message": reason,
         "lastTransitionTime": "2026-01-01T00:00:00Z"}
    )  # fmt: skip
    return marked


def test_a_claim_karpenter_marked_drifted_stays_drifted(
    karpenter_oracle: KarpenterOracle,
) -> None:
    launched = pool_from(_fields(labels={"team": "a"}))
    now = pool_from(_fields(labels={"team": "b"}))
    nodeclass = nodeclass_from(_class_fields(), copy.deepcopy(STATUS))
    claim = _drifted(
        karpenter_stamped(karpenter_oracle, claim_of("m5.large", "spot", "ami-amd64"),
                          launched, nodeclass),
        "NodePoolDrifted",
    )  # fmt: skip
    assert driftwave_verdict(claim, now, nodeclass) == "NodePoolDrifted"


def test_an_older_hash_version_keeps_a_drifted_claim_drifted_and_restamps_the_others(
    karpenter_oracle: KarpenterOracle,
) -> None:
    """As Karpenter's hash controller: a claim of another hash version gets the current version;
    its hash is re-stamped only while it has no Drifted condition."""
    pool = pool_from(_fields(labels={"team": "a"}))
    nodeclass = nodeclass_from(_class_fields(), copy.deepcopy(STATUS))
    claim = karpenter_stamped(
        karpenter_oracle, claim_of("m5.large", "spot", "ami-amd64"), pool, nodeclass
    )
    claim["metadata"]["annotations"][NODEPOOL_HASH] = "1"
    claim["metadata"]["annotations"][NODEPOOL_HASH_VERSION] = "v2"
    assert driftwave_verdict(claim, pool, nodeclass) is None
    assert driftwave_verdict(_drifted(claim, "NodePoolDrifted"), pool, nodeclass) == (
        "NodePoolDrifted"
    )


def _fields(**changes: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "labels": None, "annotations": None, "taints": None, "startupTaints": None,
        "nodeClass": "default", "expireAfter": None, "terminationGracePeriod": None,
        "requirements": [], "weight": None, "budget": "10%",
    }  # fmt: skip
    return {**fields, **changes}


def _class_fields() -> dict[str, Any]:
    return {
        "ami": ([{"alias": "al2023@latest"}], None), "role": "KarpenterNodeRole",
        "subnetTerms": [{"tags": {"a": "b"}}], "tags": None, "userData": None,
        "detailedMonitoring": None, "ipPrefixCount": None, "kubelet": None, "volumeSize": None,
    }  # fmt: skip
