"""Resolving an EC2NodeClass's ``amiSelectorTerms`` against the simulated AMI catalog.

The result is what Karpenter writes to ``status.amis``: one :class:`ResolvedAMI` per requirement
set, newest first. The rules follow Karpenter's documentation of ``amiSelectorTerms``:

* **alias** ``family@version`` (the only term when present): the EKS-optimized images of that
  family for the cluster's Kubernetes version, one per architecture and variant, found through
  the SSM parameters AWS publishes (``@latest`` reads the ``recommended`` / ``latest``
  parameter, which :meth:`~AMICatalog.publish` moves to each new release; a version reads that
  release's parameter, Bottlerocket with or without the leading ``v``). Alias images carry their
  variant's requirements (:mod:`agent.cloud.amirules`). AL2 aliases fail from Kubernetes 1.33,
  Windows Server 2025 aliases before 1.35, as Karpenter's do.
* **id**: that image. **ssmParameter**: the image the parameter names (a missing parameter, or
  one whose value is not an AMI id, selects nothing).
* **name** (``*`` and ``?`` wildcards), **owner** and **tags** (AND-ed within a term): ``owner``
  is ``self`` (the catalog's account), ``amazon`` or an account id; a name without an owner
  looks in ``self`` and ``amazon`` only; tags alone look in every owner. A tag value ``*``
  means the key exists (other values may use wildcards too, as EC2 filters do).
* Terms are OR-ed. Images found by these terms only require their architecture. Among images
  with the same requirements the non-deprecated one wins, then the newest (deprecated images are
  used only when nothing else covers their requirements).

Not modelled: image states other than available, deprecation times (an image is deprecated or
not), owner aliases other than ``self`` / ``amazon``, launch permissions, the AMI cache's
one-hour refresh (resolution is instantaneous), and SSM parameter ARNs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from functools import cache

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclass_status import ResolvedAMI
from agent.api.selectors import ALIAS_TO_AMI_FAMILY, AMISelectorTerm
from agent.cloud.amirules import (
    WINDOWS_BUILDS,
    ImageMatch,
    image_requirements,
    newest_per_requirements,
)
from agent.cloud.simulated.amis import AMI, FLAVORS, AMICatalog, alias_variants, ssm_path


class AMIResolutionError(ValueError):
    """The selector terms resolve to no image; the message says why (for the Ready condition)."""


def resolve_amis(
    catalog: AMICatalog, nodeclass: EC2NodeClass, kubernetes_version: str
) -> list[ResolvedAMI]:
    """The node class's ``status.amis`` for a cluster at ``kubernetes_version`` (e.g. ``"1.30"``).

    Raises :class:`AMIResolutionError` when nothing resolves.
    """
    terms = nodeclass.spec.ami_selector_terms
    alias = next((term.alias for term in terms if term.alias), None)
    if alias is not None:
        matches = list(_alias_matches(catalog, alias, kubernetes_version))
        if not matches:
            raise AMIResolutionError(
                f"failed to discover any AMIs for alias {alias} on Kubernetes {kubernetes_version}"
            )
    else:
        matches = [
            ImageMatch(
                ami.id, ami.name, ami.created, ami.deprecated, tuple(image_requirements(ami.arch))
            )
            for ami in _term_images(catalog, terms)
        ]
        if not matches:
            raise AMIResolutionError("amiSelectorTerms did not match any AMIs")
    return newest_per_requirements(matches)


def _alias_matches(
    catalog: AMICatalog, alias: str, kubernetes_version: str
) -> Iterator[ImageMatch]:
    name, _, version = alias.partition("@")
    family = ALIAS_TO_AMI_FAMILY[name]
    minor = int(kubernetes_version.split(".")[1])
    if family == "AL2" and minor >= 33:
        raise AMIResolutionError("AL2 aliases are no longer supported on EKS 1.33+")
    if family == "Windows2025" and minor < 35:
        raise AMIResolutionError(
            f"Windows Server 2025 requires EKS 1.35 or higher, not {kubernetes_version}"
        )
    pinned = None if version == "latest" else version
    seen: set[str] = set()
    for arch, variant in FLAVORS[family]:
        path = ssm_path(family, kubernetes_version, arch, variant, pinned)
        ami_id = catalog.parameter(path) if path is not None else None
        if ami_id is None or ami_id not in catalog or ami_id in seen:
            continue
        seen.add(ami_id)
        ami = catalog.get(ami_id)
        for served in alias_variants(family, ami.arch, ami.variant):
            requirements = image_requirements(ami.arch, served, WINDOWS_BUILDS.get(family))
            yield ImageMatch(ami.id, ami.name, ami.created, ami.deprecated, tuple(requirements))


def _term_images(catalog: AMICatalog, terms: list[AMISelectorTerm]) -> list[AMI]:
    found: dict[str, AMI] = {}
    for term in terms:
        if term.id is not None or term.ssm_parameter is not None:
            ami_id = term.id if term.id is not None else catalog.parameter(term.ssm_parameter or "")
            if ami_id is not None and ami_id in catalog:
                found[ami_id] = catalog.get(ami_id)
            continue
        owners = [term.owner] if term.owner else (["self", "amazon"] if term.name else [])
        for ami in catalog:
            if _owned(ami, owners, catalog.account_id) and _selected(ami, term):
                found[ami.id] = ami
    return list(found.values())


def _owned(ami: AMI, owners: list[str], account_id: str) -> bool:
    if not owners:
        return True
    return any(ami.owner == (account_id if owner == "self" else owner) for owner in owners)


def _selected(ami: AMI, term: AMISelectorTerm) -> bool:
    if term.name is not None and not _glob(term.name).fullmatch(ami.name):
        return False
    return _tags_match(ami.tags, term.tags or {})


def _tags_match(tags: Mapping[str, str], wanted: Mapping[str, str]) -> bool:
    for key, pattern in wanted.items():
        value = tags.get(key)
        if value is None or not _glob(pattern).fullmatch(value):
            return False
    return True


@cache
def _glob(pattern: str) -> re.Pattern[str]:
    """An EC2 filter pattern (``*`` any run of characters, ``?`` one character) as a regex."""
    return re.compile("".join({"*": ".*", "?": "."}.get(ch, re.escape(ch)) for ch in pattern))
