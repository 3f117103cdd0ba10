"""Resolving an EC2NodeClass's ``amiSelectorTerms`` into ``status.amis``, over any image source.

The rules are Karpenter's documentation of ``amiSelectorTerms``; the simulated and the AWS
adapters differ only in where images and parameters come from (an :class:`ImageSource`):

* **alias** ``family@version`` (the only term when present): the EKS-optimized images of that
  family for the cluster's Kubernetes version, one per architecture and variant, found through
  the SSM parameters AWS publishes (:mod:`agent.cloud.amialias`; ``@latest`` reads the
  ``recommended`` / ``latest`` parameter, a version reads that release's parameter, Bottlerocket
  with or without the leading ``v``). Alias images carry their variant's requirements
  (:mod:`agent.cloud.amirules`). AL2 aliases fail from Kubernetes 1.33, Windows Server 2025
  aliases before 1.35, as Karpenter's do.
* **id**: that image. **ssmParameter**: the image the parameter names (a missing parameter, or
  one whose value is not an AMI id, selects nothing).
* **name** (``*`` and ``?`` wildcards), **owner** and **tags** (AND-ed within a term): ``owner``
  is ``self``, ``amazon`` or an account id; a name without an owner looks in ``self`` and
  ``amazon`` only; tags alone look in every owner. A tag value ``*`` means the key exists.
* Terms are OR-ed. Images found by these terms only require their architecture. Among images
  with the same requirements the non-deprecated one wins, then the newest (deprecated images are
  used only when nothing else covers their requirements).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from typing import Protocol

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclass_status import ResolvedAMI
from agent.cloud.amialias import FLAVORS, alias_variants, ssm_path
from agent.cloud.amirules import (
    WINDOWS_BUILDS,
    Arch,
    ImageMatch,
    image_requirements,
    newest_per_requirements,
)
from common.selectors import ALIAS_TO_AMI_FAMILY, AMISelectorTerm


class AMIResolutionError(ValueError):
    """The selector terms resolve to no image; the message says why (for the Ready condition)."""


@dataclass(frozen=True, slots=True)
class Image:
    """One machine image as a source describes it (``created`` is timezone-aware)."""

    id: str
    name: str
    owner: str
    arch: Arch
    created: datetime
    deprecated: bool = False
    tags: Mapping[str, str] = field(default_factory=dict, hash=False)


class ImageSource(Protocol):
    """Where images and SSM parameters come from (the simulated catalog, or EC2 and SSM)."""

    @property
    def account_id(self) -> str:
        """The account ``self`` means."""
        ...

    def parameter(self, name: str) -> str | None:
        """The value of an SSM parameter (None when it does not exist)."""
        ...

    def images(self, ids: Sequence[str]) -> list[Image]:
        """The images with these ids that exist (unknown ids are left out)."""
        ...

    def find(
        self, *, name: str | None, owners: Sequence[str], tags: Mapping[str, str]
    ) -> list[Image]:
        """Images whose name matches ``name`` (wildcards) and whose tags match ``tags``, owned by
        one of ``owners`` (``self``, ``amazon`` or account ids; empty: any owner)."""
        ...


@dataclass(frozen=True, slots=True)
class Selected:
    """An image a term selected, and why (for ``driftwave agent amis``)."""

    image: Image
    reason: str


def resolve(
    source: ImageSource, nodeclass: EC2NodeClass, kubernetes_version: str
) -> list[ResolvedAMI]:
    """The node class's ``status.amis`` for a cluster at ``kubernetes_version`` (e.g. ``"1.30"``).

    Raises :class:`AMIResolutionError` when nothing resolves."""
    return newest_per_requirements(matches(source, nodeclass, kubernetes_version))


def matches(
    source: ImageSource, nodeclass: EC2NodeClass, kubernetes_version: str
) -> list[ImageMatch]:
    """Every image the terms select, with its requirements; raises AMIResolutionError."""
    terms = nodeclass.spec.ami_selector_terms
    alias = next((term.alias for term in terms if term.alias), None)
    if alias is not None:
        found = [m for _, m in alias_matches(source, alias, kubernetes_version)]
        if not found:
            raise AMIResolutionError(
                f"failed to discover any AMIs for alias {alias} on Kubernetes {kubernetes_version}"
            )
        return found
    found = [
        ImageMatch(s.image.id, s.image.name, s.image.created, s.image.deprecated,
                   tuple(image_requirements(s.image.arch)))
        for s in term_images(source, terms)
    ]  # fmt: skip
    if not found:
        raise AMIResolutionError("amiSelectorTerms did not match any AMIs")
    return found


def alias_matches(
    source: ImageSource, alias: str, kubernetes_version: str
) -> Iterator[tuple[str, ImageMatch]]:
    """(SSM path, match) for each image line of the alias; raises for unsupported versions."""
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
        ami_id = source.parameter(path) if path is not None else None
        if ami_id is None or ami_id in seen:
            continue
        images = source.images([ami_id])
        if not images:
            continue
        seen.add(ami_id)
        image = images[0]
        for served in alias_variants(family, arch, variant):
            requirements = image_requirements(image.arch, served, WINDOWS_BUILDS.get(family))
            match = ImageMatch(
                image.id, image.name, image.created, image.deprecated, tuple(requirements)
            )
            yield path or "", match


def term_images(source: ImageSource, terms: Sequence[AMISelectorTerm]) -> list[Selected]:
    """The images the non-alias terms select (OR across terms), each with the term's reason."""
    found: dict[str, Selected] = {}
    for index, term in enumerate(terms):
        where = f"amiSelectorTerms[{index}]"
        if term.id is not None:
            for image in source.images([term.id]):
                found.setdefault(image.id, Selected(image, f"{where}.id"))
            continue
        if term.ssm_parameter is not None:
            ami_id = source.parameter(term.ssm_parameter)
            if ami_id is not None and ami_id.startswith("ami-"):
                for image in source.images([ami_id]):
                    reason = f"{where}.ssmParameter {term.ssm_parameter}"
                    found.setdefault(image.id, Selected(image, reason))
            continue
        owners = [term.owner] if term.owner else (["self", "amazon"] if term.name else [])
        for image in source.find(name=term.name, owners=owners, tags=term.tags or {}):
            found.setdefault(image.id, Selected(image, _described(where, term)))
    return list(found.values())


def owned(image: Image, owners: Sequence[str], account_id: str) -> bool:
    """Whether ``image`` belongs to one of ``owners`` (empty: any)."""
    if not owners:
        return True
    return any(image.owner == (account_id if owner == "self" else owner) for owner in owners)


def selected(image: Image, name: str | None, tags: Mapping[str, str]) -> bool:
    """Whether ``image`` matches a name pattern and tag patterns (as EC2 filters match)."""
    if name is not None and not glob(name).fullmatch(image.name):
        return False
    for key, pattern in tags.items():
        value = image.tags.get(key)
        if value is None or not glob(pattern).fullmatch(value):
            return False
    return True


@cache
def glob(pattern: str) -> re.Pattern[str]:
    """An EC2 filter pattern (``*`` any run of characters, ``?`` one character) as a regex."""
    return re.compile("".join({"*": ".*", "?": "."}.get(ch, re.escape(ch)) for ch in pattern))


def _described(where: str, term: AMISelectorTerm) -> str:
    parts = []
    if term.name is not None:
        parts.append(f"name {term.name}")
    if term.owner is not None:
        parts.append(f"owner {term.owner}")
    if term.tags:
        parts.append("tags " + ",".join(f"{k}={v}" for k, v in sorted(term.tags.items())))
    return f"{where} " + " ".join(parts)
