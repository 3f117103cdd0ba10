"""Karpenter's NodePool hash controller (``pkg/controllers/nodepool/hash/suite_test.go``): which
template changes change the NodePool's hash, and how NodeClaims of an older hash version are
re-stamped (a drifted one keeps its hash)."""

from __future__ import annotations

from agent.api.nodepool import NodePool
from agent.hashing.stamps import NODEPOOL_HASH, NODEPOOL_HASH_VERSION, nodepool_hash
from common.kubemodel import parse_manifest
from tests.conformance.hashkit import (
    STATIC_DEPARTURE,
    Manifest,
    annotations_of,
    claim,
    nodeclass,
    pool,
    reconciled,
)
from tests.conformance.karpenter import departs, mirrors

SUITE = "core-nodepool-hash"
SOURCE = "pkg/controllers/nodepool/hash/suite_test.go"
NAME = "Static Drift Hash"


def _hash(manifest: Manifest) -> str:
    return nodepool_hash(parse_manifest(NodePool, manifest))


@mirrors(SOURCE, f"{NAME} / should update the drift hash when NodePool static field is updated")
@departs(STATIC_DEPARTURE)
def test_static_template_fields_change_the_hash() -> None:
    before = pool(labels={"keyLabel": "valueLabel"})
    after = pool(labels={"keyLabeltest": "valueLabeltest"})
    after["spec"]["template"]["metadata"]["annotations"] = {
        "keyAnnotation2": "valueAnnotation2", "keyAnnotation": "valueAnnotation",
    }  # fmt: skip
    assert _hash(before) != _hash(after)


@mirrors(
    SOURCE, f"{NAME} / should not update the drift hash when NodePool behavior field is updated"
)
def test_behaviour_fields_leave_the_hash_alone() -> None:
    before = pool(labels={"keyLabel": "valueLabel"})
    after = pool(
        labels={"keyLabel": "valueLabel"},
        limits={"cpu": "16"},
        disruption={"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s"},
        weight=80,
    )
    after["spec"]["template"]["spec"]["requirements"] = [
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["test"]},
        {"key": "topology.kubernetes.io/zone", "operator": "Gt", "values": ["1"]},
        {"key": "topology.kubernetes.io/zone", "operator": "Lt", "values": ["1"]},
    ]
    assert _hash(before) == _hash(after)


@mirrors(
    SOURCE,
    f"{NAME} / should update nodepool hash version when the nodepool hash version is out of "
    "sync with the controller hash version",
)
@departs(STATIC_DEPARTURE)
def test_a_nodepool_of_another_hash_version_hashes_under_the_current_one() -> None:
    stamped = pool(labels={"keyLabel": "valueLabel"})
    stamped["metadata"]["annotations"] = {NODEPOOL_HASH: "abceduefed",
                                          NODEPOOL_HASH_VERSION: "test"}  # fmt: skip
    assert _hash(stamped) == _hash(pool(labels={"keyLabel": "valueLabel"}))
    assert _hash(stamped) != "abceduefed"


@mirrors(
    SOURCE,
    f"{NAME} / should update nodepool hash versions on all nodeclaims when the hash versions "
    "don't match the controller hash version",
)
def test_claims_of_another_version_are_restamped_with_the_current_hash() -> None:
    old = {NODEPOOL_HASH: "123456", NODEPOOL_HASH_VERSION: "test"}
    the_pool = pool(labels={"keyLabel": "valueLabel"})
    cluster = reconciled([the_pool, nodeclass(), claim("one", dict(old)), claim("two", dict(old))])
    for name in ("one", "two"):
        annotations = annotations_of(cluster, name)
        assert annotations[NODEPOOL_HASH] == _hash(the_pool)
        assert annotations[NODEPOOL_HASH_VERSION] == "v3"


@mirrors(
    SOURCE,
    f"{NAME} / should not update nodepool hash on all nodeclaims when the hash versions match "
    "the controller hash version",
)
def test_claims_of_the_current_version_keep_their_hash() -> None:
    current = {NODEPOOL_HASH: "1234564654", NODEPOOL_HASH_VERSION: "v3"}
    cluster = reconciled([pool(), nodeclass(), claim("one", current)])
    assert annotations_of(cluster, "one")[NODEPOOL_HASH] == "1234564654"


@mirrors(SOURCE, f"{NAME} / should not update nodepool hash on the nodeclaim if it's drifted")
def test_a_drifted_claim_keeps_its_hash_and_takes_the_version() -> None:
    old = {NODEPOOL_HASH: "123456", NODEPOOL_HASH_VERSION: "test"}
    cluster = reconciled([pool(), nodeclass(), claim("one", old, drifted=True)])
    annotations = annotations_of(cluster, "one")
    assert annotations[NODEPOOL_HASH] == "123456"
    assert annotations[NODEPOOL_HASH_VERSION] == "v3"
