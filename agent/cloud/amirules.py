"""AMI rules every cloud adapter shares: the requirements an image places on instance types, and
which of several matching images wins.

These follow the Karpenter AWS provider's documented behaviour:

* an image discovered through ``amiSelectorTerms`` (id, name, tags, SSM parameter) only
  requires its architecture (``kubernetes.io/arch In [arm64]``): Karpenter cannot tell what else
  a custom image supports;
* an image an ``alias`` resolved to also carries the requirements of its variant: ``standard``
  images need a type without GPUs or accelerators (``karpenter.k8s.aws/instance-gpu-count`` and
  ``karpenter.k8s.aws/instance-accelerator-count`` DoesNotExist), ``nvidia`` images a type with
  GPUs (gpu-count Exists), ``neuron`` images one with accelerators (accelerator-count Exists).
  One image may serve several variants (the AL2 GPU image serves nvidia and neuron types) and is
  then listed once per variant. Windows images require ``kubernetes.io/os In [windows]`` and
  their ``node.kubernetes.io/windows-build``;
* among images with the same requirements, a non-deprecated image beats a deprecated one, then
  the newest creation date wins, then the greater name. The result is listed newest first (ties
  by id), and a launch uses the first listed image compatible with the instance type.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Literal

from agent.api.nodeclass_status import AMIRequirement, ResolvedAMI
from agent.api.requirements import Requirement, requirement_allows

Arch = Literal["amd64", "arm64"]
Variant = Literal["standard", "nvidia", "neuron"]

ARCH_LABEL = "kubernetes.io/arch"
OS_LABEL = "kubernetes.io/os"
WINDOWS_BUILD_LABEL = "node.kubernetes.io/windows-build"
GPU_COUNT_LABEL = "karpenter.k8s.aws/instance-gpu-count"
ACCELERATOR_COUNT_LABEL = "karpenter.k8s.aws/instance-accelerator-count"

WINDOWS_BUILDS: Mapping[str, str] = {
    "Windows2019": "10.0.17763",
    "Windows2022": "10.0.20348",
    "Windows2025": "10.0.26100",
}
"""``node.kubernetes.io/windows-build`` of each Windows AMI family."""

_IMAGE_LABELS = frozenset({OS_LABEL, WINDOWS_BUILD_LABEL})
"""Labels a node takes from its image rather than from its instance type."""


def variant_requirements(variant: Variant) -> list[AMIRequirement]:
    """The requirements an alias image of ``variant`` places on instance types."""
    if variant == "nvidia":
        return [AMIRequirement(key=GPU_COUNT_LABEL, operator="Exists")]
    if variant == "neuron":
        return [AMIRequirement(key=ACCELERATOR_COUNT_LABEL, operator="Exists")]
    return [
        AMIRequirement(key=ACCELERATOR_COUNT_LABEL, operator="DoesNotExist"),
        AMIRequirement(key=GPU_COUNT_LABEL, operator="DoesNotExist"),
    ]


def image_requirements(
    arch: Arch, variant: Variant | None = None, windows_build: str | None = None
) -> list[AMIRequirement]:
    """Requirements of one image: its arch, plus its variant's and Windows' when known (alias)."""
    requirements = [AMIRequirement(key=ARCH_LABEL, operator="In", values=[arch])]
    if windows_build is not None:
        requirements += [
            AMIRequirement(key=OS_LABEL, operator="In", values=["windows"]),
            AMIRequirement(key=WINDOWS_BUILD_LABEL, operator="In", values=[windows_build]),
        ]
    elif variant is not None:
        requirements += variant_requirements(variant)
    return sorted(requirements, key=lambda requirement: requirement.key)


@dataclass(frozen=True, slots=True)
class ImageMatch:
    """An image a selector matched, with one set of requirements it places on instance types."""

    id: str
    name: str
    created: datetime
    deprecated: bool
    requirements: tuple[AMIRequirement, ...]

    def requirements_key(self) -> frozenset[tuple[str, str, tuple[str, ...]]]:
        """The requirement set as a hashable value (order of requirements and values ignored)."""
        return frozenset(
            (r.key, r.operator, tuple(sorted(r.values or []))) for r in self.requirements
        )


def _rank(match: ImageMatch) -> tuple[bool, datetime, str]:
    return (not match.deprecated, match.created, match.name)


def newest_per_requirements(matches: Iterable[ImageMatch]) -> list[ResolvedAMI]:
    """One image per requirement set (the best by the rules above), newest first, as status.amis."""
    best: dict[frozenset[tuple[str, str, tuple[str, ...]]], ImageMatch] = {}
    for match in matches:
        key = match.requirements_key()
        current = best.get(key)
        if current is None or _rank(match) > _rank(current):
            best[key] = match
    chosen = sorted(best.values(), key=lambda m: (-m.created.timestamp(), m.id, m.name))
    return [
        ResolvedAMI(
            id=m.id,
            name=m.name,
            deprecated=True if m.deprecated else None,
            requirements=list(m.requirements),
        )
        for m in chosen
    ]


def node_labels_for_image(labels: Mapping[str, str], ami: ResolvedAMI) -> dict[str, str]:
    """The instance type's labels as a node launched from ``ami`` carries them.

    The catalog's types are labelled ``kubernetes.io/os: linux``; a Windows image sets the
    node's OS and Windows build from its own requirements.
    """
    return {**labels, **_image_labels(ami)}


def _image_labels(ami: ResolvedAMI) -> dict[str, str]:
    """The node labels ``ami`` sets itself (its single-valued ``In`` OS requirements)."""
    out: dict[str, str] = {}
    for requirement in ami.requirements:
        values = requirement.values or []
        if requirement.key in _IMAGE_LABELS and requirement.operator == "In" and len(values) == 1:
            out[requirement.key] = values[0]
    return out


def image_fits(labels: Mapping[str, str], ami: ResolvedAMI) -> bool:
    """Whether ``ami`` can run on an instance type with ``labels`` (every requirement allows it)."""
    own = _image_labels(ami)
    return all(
        requirement_allows(
            _as_requirement(requirement), own.get(requirement.key, labels.get(requirement.key))
        )
        for requirement in ami.requirements
    )


def first_fitting_image(
    labels: Mapping[str, str], amis: Sequence[ResolvedAMI]
) -> ResolvedAMI | None:
    """The first of ``amis`` (status.amis order: newest first) that fits the instance type."""
    for ami in amis:
        if image_fits(labels, ami):
            return ami
    return None


def _as_requirement(requirement: AMIRequirement) -> Requirement:
    values = None if requirement.values is None else tuple(requirement.values)
    return _requirement(requirement.key, requirement.operator, values)


@cache
def _requirement(key: str, operator: str, values: tuple[str, ...] | None) -> Requirement:
    data = {"key": key, "operator": operator, "values": None if values is None else list(values)}
    return Requirement.model_validate(data, by_alias=True)
