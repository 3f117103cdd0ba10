"""Warnings for valid Fleet and Release manifests whose settings carry a known risk (they never
fail validation):

- a Fleet ring without clusters (every release skips it) (an agent reached over plain http off
  this machine's loopback is no warning but an error: :class:`fleet.domain.fleet.AgentRef`);
- a Release whose first production-like ring (``prod``, ``production``, ``prd``, ``live``, alone
  or as a ``-``-separated part of the name) does not require approval, a ``soak: 0s`` (problems
  have no time to show before the next wave), a failure budget above 0 on the first ring (the
  canary should stop at the first failure), or an ``@latest`` AMI alias (the pin follows every
  new AMI, so the release does not say what it rolls out).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from common.kubemodel import KubeModel
from fleet.domain.fields import duration_of
from fleet.domain.fleet import Fleet
from fleet.domain.release import Release

LintWarning = tuple[str, str]
_PROD_LIKE = re.compile(r"(^|-)(prod|production|prd|live)(-|$)")


def is_prod_like(ring: str) -> bool:
    """Whether a ring's name says it is production (``prod``, ``prod-eu``, ``us-production``)."""
    return bool(_PROD_LIKE.search(ring))


def fleet_lint(obj: KubeModel) -> Iterator[LintWarning]:
    """The warnings for one valid Fleet or Release, as (field path, message) pairs."""
    if isinstance(obj, Fleet):
        yield from _fleet(obj)
    elif isinstance(obj, Release):
        yield from _release(obj)


def _fleet(fleet: Fleet) -> Iterator[LintWarning]:
    spec = fleet.spec
    used = {c.ring for c in spec.clusters}
    for index, ring in enumerate(spec.rings):
        if ring not in used:
            yield f"spec.rings[{index}]", f"ring {ring!r} has no clusters: every release skips it"


def _release(release: Release) -> Iterator[LintWarning]:
    rings = release.spec.strategy.rings
    prod = next((i for i, r in enumerate(rings) if is_prod_like(r.name)), None)
    if prod is not None and not rings[prod].require_approval:
        yield (
            f"spec.strategy.rings[{prod}].requireApproval",
            f"ring {rings[prod].name!r} looks like production but does not require approval: "
            "the release reaches it as soon as the earlier rings pass their gates",
        )
    for index, ring in enumerate(rings):
        if duration_of(ring.soak).total_seconds() == 0:
            yield (
                f"spec.strategy.rings[{index}].soak",
                "soak is 0s: a problem has no time to show before the next wave starts",
            )
    first = rings[0]
    if first.failure_budget not in (0, "0%"):
        yield (
            "spec.strategy.rings[0].failureBudget",
            f"failureBudget {first.failure_budget} on the first ring ({first.name!r}): a "
            "failure there is the signal the rings exist for; consider 0",
        )
    for index, term in enumerate(release.spec.target.ami_selector_terms or []):
        if term.alias and term.alias.endswith("@latest"):
            yield (
                f"spec.target.amiSelectorTerms[{index}].alias",
                f"{term.alias} follows every new AMI: the release does not pin what it rolls "
                "out; pin a version such as al2023@v20251216",
            )
