"""Static-drift hashes: what a NodePool's template and an EC2NodeClass's spec looked like when a
NodeClaim was launched.

As Karpenter does, the NodePool and EC2NodeClass carry an annotation with the hash of the fields
that drift when changed, plus the hash's version; each NodeClaim is stamped with both at creation.
A NodeClaim whose hash differs from its NodePool's (or EC2NodeClass's) *under the same version*
has drifted (``NodePoolDrifted`` / ``NodeClassDrift``). When the versions differ the hash is not
compared: the hash controller re-stamps the NodeClaim with the current hash instead, so changing
how hashes are computed never drifts a fleet (each such change bumps the version).

Hashed fields, following Karpenter v1 (the differential tests check that two objects hash alike
here exactly when they hash alike in Karpenter):

* NodePool: ``spec.template`` (labels, annotations, taints, startupTaints, nodeClassRef,
  expireAfter, terminationGracePeriod) *without* ``requirements`` (those drift through
  requirement compatibility instead) and without anything outside the template (budgets,
  consolidation, limits, weight);
* EC2NodeClass: ``spec`` without the selector terms (AMIs, subnets and security groups drift
  through what they resolve to, not through how they are written) and without
  ``ipPrefixCount``; the AMI family is hashed as resolved (``amiFamily``, else the alias's
  family), so writing out the family an alias implies is not drift and changing the alias's
  family is.

Lists are hashed as sets, durations by their length (``60m`` is ``1h``), and unset or empty
lists and maps are skipped, so re-ordering taints or writing a default explicitly is not drift;
an empty string is a value (a label ``team: ""`` is a label). The digest is driftwave's own
(SHA-256 of canonical JSON, as a decimal number); its version strings are driftwave's too, so
nodes launched by Karpenter itself are re-stamped, never drifted, when driftwave takes over a
cluster.
"""

from __future__ import annotations

import hashlib
import json
import re
from fractions import Fraction
from typing import Any

from agent.api.durations import parse_duration
from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.scheduling.requirements import Requirements

NODEPOOL_HASH = "karpenter.sh/nodepool-hash"
NODEPOOL_HASH_VERSION = "karpenter.sh/nodepool-hash-version"
NODECLASS_HASH = "karpenter.k8s.aws/ec2nodeclass-hash"
NODECLASS_HASH_VERSION = "karpenter.k8s.aws/ec2nodeclass-hash-version"
NODEPOOL_VERSION = "dw2"
NODECLASS_VERSION = "dw2"
_NODECLASS_IGNORED = frozenset(
    {
        "amiSelectorTerms",
        "subnetSelectorTerms",
        "securityGroupSelectorTerms",
        "capacityReservationSelectorTerms",
        "ipPrefixCount",
        "amiFamily",
    }
)
_GO_DURATION_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|\u00b5s|ms|s|m|h)")
_GO_UNIT_NS = {
    "ns": 1,
    "us": 10**3,
    "\u00b5s": 10**3,
    "ms": 10**6,
    "s": 10**9,
    "m": 60 * 10**9,
    "h": 3600 * 10**9,
}


def _canonical(value: Any) -> Any:
    """Drop unset values and empty lists and maps, sort dict keys, hash lists as sets (sorted
    canonical members)."""
    if isinstance(value, dict):
        out = {k: _canonical(v) for k, v in value.items()}
        return {k: out[k] for k in sorted(out) if out[k] not in (None, {}, [])}
    if isinstance(value, list):
        members = [_canonical(v) for v in value]
        return sorted(members, key=lambda m: json.dumps(m, sort_keys=True))
    return value


def digest(value: Any) -> str:
    """The decimal hash of ``value``'s canonical form (64 bits of SHA-256)."""
    text = json.dumps(_canonical(value), sort_keys=True, separators=(",", ":"))
    return str(int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big"))


def _seconds(duration: str) -> str:
    """A NodePool duration by its length (``Never`` stays ``Never``)."""
    length = parse_duration(duration)
    return "Never" if length is None else str(int(length.total_seconds()))


def _nanoseconds(duration: str) -> str:
    """A Go duration (``1m30s``, ``1.5m``) by its length in nanoseconds."""
    sign = -1 if duration.startswith("-") else 1
    total = sum(
        Fraction(number or "0") * _GO_UNIT_NS[unit]
        for number, unit in _GO_DURATION_PART.findall(duration.lstrip("+-"))
    )
    return str(sign * int(total))


def nodepool_hash(pool: NodePool) -> str:
    """The hash of the NodePool's drift-relevant template fields."""
    template = pool.spec.template.to_full_manifest()
    spec = dict(template.get("spec", {}))
    spec.pop("requirements", None)
    for field in ("expireAfter", "terminationGracePeriod"):
        if isinstance(spec.get(field), str):
            spec[field] = _seconds(spec[field])
    return digest({"metadata": template.get("metadata", {}), "spec": spec})


def nodeclass_hash(nodeclass: EC2NodeClass) -> str:
    """The hash of the EC2NodeClass's spec without its selector terms and ``ipPrefixCount``,
    with the AMI family as resolved."""
    spec = nodeclass.spec.to_full_manifest()
    hashed = {k: v for k, v in spec.items() if k not in _NODECLASS_IGNORED}
    hashed["amiFamily"] = nodeclass.spec.resolved_ami_family
    kubelet = hashed.get("kubelet")
    if isinstance(kubelet, dict) and isinstance(kubelet.get("evictionSoftGracePeriod"), dict):
        grace = {k: _nanoseconds(v) for k, v in kubelet["evictionSoftGracePeriod"].items()}
        hashed["kubelet"] = {**kubelet, "evictionSoftGracePeriod": grace}
    return digest(hashed)


class SpecMemo:
    """NodePool and EC2NodeClass hashes and NodePool requirements, computed once per spec: an
    entry is kept while the object's template (or spec) is the same object. Models are copied,
    never changed in place, so a changed NodePool has a new template; the entry holds the old
    one, so its identity cannot be reused while cached."""

    def __init__(self) -> None:
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
            hit = self._classes[name] = (spec, nodeclass_hash(nodeclass))
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
    """Re-stamp only the hashes whose version differs from the current one (see module doc)."""
    annotations = claim.metadata.annotations
    fresh_pool = pool if annotations.get(NODEPOOL_HASH_VERSION) != NODEPOOL_VERSION else None
    fresh_class = (
        nodeclass if annotations.get(NODECLASS_HASH_VERSION) != NODECLASS_VERSION else None
    )
    if fresh_pool is None and fresh_class is None:
        return claim
    return stamped(claim, fresh_pool, fresh_class, hashes)


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
