"""Static-drift hashes: driftwave's NodePool and EC2NodeClass hashes against Karpenter's.

The hash values and versions must be Karpenter's own, for every object a user can write: NodePools
and EC2NodeClasses are drawn over every hashed field (set, left out, written out empty), with and
without a cluster CA bundle, and each is hashed by driftwave and by Karpenter's code (the
oracle). Equal values mean equal drift decisions, and that claims Karpenter stamped keep theirs
when driftwave takes a cluster over.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodepool import NodePool
from agent.hashing.stamps import (
    NODECLASS_VERSION,
    NODEPOOL_VERSION,
    nodeclass_hash,
    nodepool_hash,
)
from common.kubemodel import parse_manifest
from tests.differential.hashobjects import any_ec2nodeclass, any_nodepool
from tests.differential.objects import Manifest, ec2nodeclass, nodepool
from tests.support.oracle import KarpenterOracle

HASHES = settings(max_examples=150, deadline=None)


def karpenter_pool(oracle: KarpenterOracle, pool: Manifest) -> tuple[str, str]:
    answer = oracle.ask("nodepool-hash", nodePool=pool)
    return str(answer["hash"]), str(answer["hashVersion"])


def karpenter_class(
    oracle: KarpenterOracle, nodeclass: Manifest, ca_bundle: str | None = None
) -> tuple[str, str]:
    answer = oracle.ask("ec2nodeclass-hash", ec2NodeClass=nodeclass, caBundle=ca_bundle)
    return str(answer["hash"]), str(answer["hashVersion"])


def ours_pool(pool: Manifest) -> tuple[str, str]:
    return nodepool_hash(parse_manifest(NodePool, pool)), NODEPOOL_VERSION


def ours_class(nodeclass: Manifest, ca_bundle: str | None = None) -> tuple[str, str]:
    return nodeclass_hash(parse_manifest(EC2NodeClass, nodeclass), ca_bundle), NODECLASS_VERSION


@HASHES
@given(pool=any_nodepool())
def test_every_nodepool_hashes_as_karpenter_hashes_it(
    karpenter_oracle: KarpenterOracle, pool: Manifest
) -> None:
    assert ours_pool(pool) == karpenter_pool(karpenter_oracle, pool), pool


@HASHES
@given(nodeclass=any_ec2nodeclass(), ca_bundle=st.sampled_from([None, "", "LS0tLS1CRUdJTg=="]))
def test_every_nodeclass_hashes_as_karpenter_hashes_it(
    karpenter_oracle: KarpenterOracle, nodeclass: Manifest, ca_bundle: str | None
) -> None:
    expected = karpenter_class(karpenter_oracle, nodeclass, ca_bundle)
    assert ours_class(nodeclass, ca_bundle) == expected, nodeclass


def test_a_status_never_changes_the_nodeclass_hash(karpenter_oracle: KarpenterOracle) -> None:
    resolved = ec2nodeclass(status={"amis": [{"id": "ami-1", "name": "a", "requirements": []}]})
    assert karpenter_class(karpenter_oracle, resolved) == karpenter_class(
        karpenter_oracle, ec2nodeclass()
    )
    assert ours_class(resolved) == ours_class(ec2nodeclass())


@pytest.mark.parametrize(
    "written",
    [nodepool(metadata={"labels": {}}), nodepool(spec={"taints": []})],
    ids=["labels", "taints"],
)
def test_an_empty_template_field_written_out_changes_the_hash_as_in_karpenter(
    karpenter_oracle: KarpenterOracle, written: Manifest
) -> None:
    """Karpenter's hash tells a list or map written out empty from one left out (so writing one
    drifts every node); driftwave's is the same hash, so it drifts them too."""
    assert karpenter_pool(karpenter_oracle, written) != karpenter_pool(karpenter_oracle, nodepool())
    assert ours_pool(written) == karpenter_pool(karpenter_oracle, written)


@pytest.mark.parametrize(
    "written", [ec2nodeclass({"tags": {}}), ec2nodeclass({"kubelet": {}})], ids=["tags", "kubelet"]
)
def test_an_empty_nodeclass_field_written_out_changes_the_hash_as_in_karpenter(
    karpenter_oracle: KarpenterOracle, written: Manifest
) -> None:
    assert karpenter_class(karpenter_oracle, written) != karpenter_class(
        karpenter_oracle, ec2nodeclass()
    )
    assert ours_class(written) == karpenter_class(karpenter_oracle, written)
