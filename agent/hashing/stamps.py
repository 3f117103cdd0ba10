"""Static-drift hashes: what a NodePool's template and an EC2NodeClass's spec looked like when a
NodeClaim was launched, hashed exactly as Karpenter hashes them.

As Karpenter does, each NodeClaim is stamped at creation with the hash of its NodePool's
``spec.template`` and of its EC2NodeClass's spec, each beside the hash's version. A NodeClaim
whose hash differs from its NodePool's (or EC2NodeClass's) *under the same version* has drifted
(``NodePoolDrifted`` / ``NodeClassDrift``). When the versions differ the hash is not compared:
the hash controller re-stamps the version, and the hash too unless the NodeClaim already has a
``Drifted`` condition (a NodeClaim Karpenter found drifted stays drifted, as under Karpenter).

The values and versions are Karpenter's (``karpenter.sh/nodepool-hash`` version ``v3``,
``karpenter.k8s.aws/ec2nodeclass-hash`` version ``v5``, as in the release the agent follows):
the object is defaulted as the API server stores it (:mod:`agent.api.defaulting`) and hashed as
the Go value Karpenter decodes it into (:mod:`agent.hashing.gohash`,
:mod:`agent.hashing.hashtypes`), so nodes Karpenter launched keep their drift decisions when
the agent takes a cluster over, and ``driftwave agent hash`` prints what Karpenter would stamp.

* NodePool: ``spec.template`` (labels, annotations, taints, startupTaints, nodeClassRef,
  expireAfter, terminationGracePeriod) without ``requirements`` (those drift through requirement
  compatibility instead); nothing outside the template (budgets, limits, weight) is hashed.
* EC2NodeClass: the spec without the selector terms (AMIs, subnets and security groups drift
  through what they resolve to), ``ipPrefixCount`` and the written ``amiFamily``; beside it the
  AMI family as resolved (``amiFamily``, else the alias's family: writing out the family an alias
  implies is not drift) and the cluster's CA bundle (what Karpenter's setting
  ``CLUSTER_CA_BUNDLE`` or its own connection to the API server gives, base64).

What Karpenter's hash makes of a value follows from Go: taints and other lists are sets
(re-ordering is not drift), durations are lengths (``60m`` is ``1h``), an unset field and its
zero value hash alike, but a list or map written out empty (``labels: {}``) is not unset and
changes the hash.
"""

from __future__ import annotations

import base64
from typing import Any

from agent.api.conditions import condition
from agent.api.defaulting import stored
from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.hashing.gohash import Str, go_hash, go_hash_all
from agent.hashing.hashtypes import EC2NODECLASS_SPEC, NODECLAIM_TEMPLATE
from agent.scheduling.requirements import Requirements

NODEPOOL_HASH = "karpenter.sh/nodepool-hash"
NODEPOOL_HASH_VERSION = "karpenter.sh/nodepool-hash-version"
NODECLASS_HASH = "karpenter.k8s.aws/ec2nodeclass-hash"
NODECLASS_HASH_VERSION = "karpenter.k8s.aws/ec2nodeclass-hash-version"
NODEPOOL_VERSION = "v3"
NODECLASS_VERSION = "v5"


def ca_bundle_problem(value: str) -> str | None:
    """Why ``value`` is not a CA bundle as Karpenter's setting takes it, or None."""
    if not value:
        return "is empty (rule: leave it out when there is no CA bundle)"
    try:
        base64.b64decode(value, validate=True)
    except ValueError:
        return (
            "is not base64 (rule: the CA certificates, PEM, base64-encoded, as Karpenter's "
            "CLUSTER_CA_BUNDLE)"
        )
    return None


def nodepool_manifest_hash(manifest: dict[str, Any]) -> str:
    """Karpenter's hash of a NodePool given as its manifest (defaulted here as stored)."""
    template = stored("NodePool", manifest).get("spec", {}).get("template")
    return str(go_hash(template, NODECLAIM_TEMPLATE))


def nodeclass_manifest_hash(
    manifest: dict[str, Any], resolved_family: str, ca_bundle: str | None = None
) -> str:
    """Karpenter's hash of an EC2NodeClass given as its manifest, its resolved AMI family and
    the cluster's CA bundle (None: unset, as where Karpenter is given none)."""
    spec = stored("EC2NodeClass", manifest).get("spec")
    return str(
        go_hash_all([(spec, EC2NODECLASS_SPEC), (resolved_family, Str()), (ca_bundle, Str())])
    )


def nodepool_hash(pool: NodePool) -> str:
    """Karpenter's hash of the NodePool's template."""
    return nodepool_manifest_hash(pool.to_manifest())


def nodeclass_hash(nodeclass: EC2NodeClass, ca_bundle: str | None = None) -> str:
    """Karpenter's hash of the EC2NodeClass (see the module doc)."""
    return nodeclass_manifest_hash(
        nodeclass.to_manifest(), nodeclass.spec.resolved_ami_family, ca_bundle
    )


class SpecMemo:
    """NodePool and EC2NodeClass hashes and NodePool requirements, computed once per spec: an
    entry is kept while the object's template (or spec) is the same object. Models are copied,
    never changed in place, so a changed NodePool has a new template; the entry holds the old
    one, so its identity cannot be reused while cached."""

    def __init__(self, ca_bundle: str | None = None) -> None:
        self.ca_bundle = ca_bundle
        """The cluster's CA bundle, hashed with each EC2NodeClass (see the module doc)."""
        self._pools: dict[str, tuple[object, str]] = {}
        self._classes: dict[str, tuple[object, str]] = {}
        self._requirements: dict[str, tuple[object, Requirements]] = {}

    def requirements(self, pool: NodePool) -> Requirements:
        """The requirements of ``pool``'s template (shared: never change them)."""
        template = pool.spec.template
        hit = self._requirements.get(pool.name)
        if hit is None or hit[0] is not template:
            found = Requirements.from_node_selector_requirements(template.spec.requirements)
            hit = self._requirements[pool.name] = (template, found)
        return hit[1]

    def nodepool(self, pool: NodePool) -> str:
        """:func:`nodepool_hash` of ``pool``."""
        template = pool.spec.template
        hit = self._pools.get(pool.name)
        if hit is None or hit[0] is not template:
            hit = self._pools[pool.name] = (template, nodepool_hash(pool))
        return hit[1]

    def nodeclass(self, nodeclass: EC2NodeClass) -> str:
        """:func:`nodeclass_hash` of ``nodeclass``."""
        spec = nodeclass.spec
        name = nodeclass.metadata.name or ""
        hit = self._classes.get(name)
        if hit is None or hit[0] is not spec:
            hit = self._classes[name] = (spec, nodeclass_hash(nodeclass, self.ca_bundle))
        return hit[1]


def stamped(
    claim: NodeClaim,
    pool: NodePool | None,
    nodeclass: EC2NodeClass | None,
    hashes: SpecMemo | None = None,
) -> NodeClaim:
    """``claim`` with the hash annotations of ``pool`` and ``nodeclass`` (those given)."""
    hashes = hashes or SpecMemo()
    annotations = dict(claim.metadata.annotations)
    if pool is not None:
        annotations[NODEPOOL_HASH] = hashes.nodepool(pool)
        annotations[NODEPOOL_HASH_VERSION] = NODEPOOL_VERSION
    if nodeclass is not None:
        annotations[NODECLASS_HASH] = hashes.nodeclass(nodeclass)
        annotations[NODECLASS_HASH_VERSION] = NODECLASS_VERSION
    if annotations == claim.metadata.annotations:
        return claim
    return claim.model_copy(
        update={"metadata": claim.metadata.model_copy(update={"annotations": annotations})}
    )


def restamp_versions(
    claim: NodeClaim,
    pool: NodePool | None,
    nodeclass: EC2NodeClass | None,
    hashes: SpecMemo | None = None,
) -> NodeClaim:
    """Re-stamp the hashes whose version differs from the current one, as Karpenter's hash
    controllers do: the version always, the hash only while the NodeClaim has no ``Drifted``
    condition (a drifted NodeClaim's old hash keeps it drifted)."""
    annotations = dict(claim.metadata.annotations)
    hashes = hashes or SpecMemo()
    keep_hashes = condition(claim, "Drifted") is not None
    if pool is not None and annotations.get(NODEPOOL_HASH_VERSION) != NODEPOOL_VERSION:
        annotations[NODEPOOL_HASH_VERSION] = NODEPOOL_VERSION
        if not keep_hashes:
            annotations[NODEPOOL_HASH] = hashes.nodepool(pool)
    if nodeclass is not None and annotations.get(NODECLASS_HASH_VERSION) != NODECLASS_VERSION:
        annotations[NODECLASS_HASH_VERSION] = NODECLASS_VERSION
        if not keep_hashes:
            annotations[NODECLASS_HASH] = hashes.nodeclass(nodeclass)
    if annotations == claim.metadata.annotations:
        return claim
    return claim.model_copy(
        update={"metadata": claim.metadata.model_copy(update={"annotations": annotations})}
    )


def static_drift(
    claim: NodeClaim,
    pool: NodePool,
    nodeclass: EC2NodeClass | None,
    hashes: SpecMemo | None = None,
) -> str | None:
    """``NodePoolDrifted`` or ``NodeClassDrift`` when a same-version hash differs, else None."""
    hashes = hashes or SpecMemo()
    annotations = claim.metadata.annotations
    if (
        annotations.get(NODEPOOL_HASH_VERSION) == NODEPOOL_VERSION
        and NODEPOOL_HASH in annotations
        and annotations[NODEPOOL_HASH] != hashes.nodepool(pool)
    ):
        return "NodePoolDrifted"
    if (
        nodeclass is not None
        and annotations.get(NODECLASS_HASH_VERSION) == NODECLASS_VERSION
        and NODECLASS_HASH in annotations
        and annotations[NODECLASS_HASH] != hashes.nodeclass(nodeclass)
    ):
        return "NodeClassDrift"
    return None
