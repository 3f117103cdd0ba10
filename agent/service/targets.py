"""Turning a wave target into EC2NodeClass changes, and resolving the images they would select.

Shared by the plan (which only looks) and ``apply_wave`` (which stores the changed classes). The
images come from the runtime's own resolution
(:meth:`~agent.service.runtime.AgentRuntime.resolve_amis`, the code its cloud launches with),
so what a plan promises is what the agent then launches.

Changing ``amiSelectorTerms`` is a change a user would make with ``kubectl apply``: the whole
EC2NodeClass is validated again with its rules. Moving a class from an alias to ids, names or
tags needs an ``amiFamily``; when the class has none, the family its alias stood for is set.

A Kubernetes-version target follows EKS: the control plane moves up one minor version at a time
and never back, and it is cluster-wide, so such a wave covers every EC2NodeClass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclass_status import ResolvedAMI
from agent.cloud.amiresolve import AMIResolutionError
from agent.service.errors import InvalidRequest
from agent.service.runtime import AgentRuntime
from common.kubemodel import ManifestInvalid, parse_manifest
from common.wire.target import NodeClassSelector, WaveTarget


@dataclass
class Resolution:
    """What a target would make of each selected class: the class as it would be stored, the
    images it would resolve to, or why it would resolve to none."""

    kubernetes_version: str
    classes: dict[str, EC2NodeClass] = field(default_factory=dict)
    images: dict[str, list[ResolvedAMI]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    def image_ids(self) -> list[str]:
        """Every image the target resolves to, without repeats, in class order."""
        seen: dict[str, None] = {}
        for amis in self.images.values():
            seen.update(dict.fromkeys(a.id for a in amis))
        return list(seen)

    def failure(self) -> str | None:
        """Why the target cannot be applied as is (a class that resolves to no image)."""
        if not self.errors:
            return None
        return "the target resolves to no image: " + "; ".join(
            f"EC2NodeClass {name}: {error}" for name, error in sorted(self.errors.items())
        )


def select_classes(
    world: AgentRuntime, selector: NodeClassSelector | None, doing: str
) -> list[str]:
    """The names of the EC2NodeClasses ``selector`` selects (every class without one)."""
    classes = world.cluster.list(EC2NodeClass)
    if selector is None:
        chosen = [c.name for c in classes]
    else:
        known = {c.name for c in classes}
        missing = [
            (f"nodeClasses.names[{i}]", f"no EC2NodeClass named {name!r} in this cluster")
            for i, name in enumerate(selector.names or [])
            if name not in known
        ]
        if missing:
            raise InvalidRequest(doing, missing)
        names = set(selector.names) if selector.names is not None else None
        labels = selector.match_labels or {}
        chosen = [
            c.name
            for c in classes
            if (names is None or c.name in names)
            and all(c.metadata.labels.get(k) == v for k, v in labels.items())
        ]
    if not chosen:
        raise InvalidRequest(doing, [("nodeClasses", "selects no EC2NodeClass of this cluster")])
    return chosen


def with_terms(
    nodeclass: EC2NodeClass, terms: list[dict[str, Any]], ami_family: str | None
) -> EC2NodeClass:
    """``nodeclass`` with new ``amiSelectorTerms`` and ``amiFamily``, validated with every rule
    of an EC2NodeClass; raises ManifestInvalid. The status is kept."""
    manifest = nodeclass.to_manifest()
    spec = dict(manifest["spec"])
    spec["amiSelectorTerms"] = terms
    spec.pop("amiFamily", None)
    if ami_family is not None:
        spec["amiFamily"] = ami_family
    manifest["spec"] = spec
    manifest.pop("status", None)
    changed = parse_manifest(EC2NodeClass, manifest)
    return changed.model_copy(update={"status": nodeclass.status})


def family_for(nodeclass: EC2NodeClass, terms: list[dict[str, Any]]) -> str | None:
    """The ``amiFamily`` a class needs with ``terms``: its own, or, leaving an alias for other
    terms without one, the family the alias stood for."""
    if nodeclass.spec.ami_family is not None or any("alias" in t for t in terms):
        return nodeclass.spec.ami_family
    return nodeclass.spec.resolved_ami_family


def check_version(current: str, target: str, doing: str) -> None:
    """EKS's rule: the control plane moves up one minor version at a time, never back."""
    have, want = int(current.split(".")[1]), int(target.split(".")[1])
    if want < have:
        problem = (
            f"cannot move the control plane back from {current} to {target} "
            "(rule: EKS upgrades only, one minor version at a time)"
        )
    elif want > have + 1:
        problem = (
            f"cannot move the control plane from {current} to {target} at once "
            f"(rule: EKS upgrades one minor version at a time: 1.{have + 1} first)"
        )
    else:
        return
    raise InvalidRequest(doing, [("target.kubernetesVersion", problem)])


def resolve_target(
    world: AgentRuntime, target: WaveTarget, names: list[str], doing: str
) -> Resolution:
    """What ``target`` would make of the classes ``names`` (see :class:`Resolution`); raises
    InvalidRequest when a changed class would break an EC2NodeClass rule, or the version rule."""
    version = target.kubernetes_version or world.kubernetes_version
    if target.kubernetes_version is not None:
        check_version(world.kubernetes_version, version, doing)
    resolution = Resolution(version)
    problems: list[tuple[str, str]] = []
    for name in names:
        nodeclass = world.cluster.get(EC2NodeClass, name)
        if target.ami_selector_terms is not None:
            terms = [t.to_manifest() for t in target.ami_selector_terms]
            try:
                nodeclass = with_terms(nodeclass, terms, family_for(nodeclass, terms))
            except ManifestInvalid as exc:
                problems.extend(
                    ("target.amiSelectorTerms", f"EC2NodeClass {name} would be invalid: {i}")
                    for i in exc.issues
                )
                continue
        resolution.classes[name] = nodeclass
        try:
            resolution.images[name] = world.resolve_amis(nodeclass, version)
        except AMIResolutionError as exc:
            resolution.errors[name] = str(exc)
    if problems:
        raise InvalidRequest(doing, problems)
    return resolution


def covers_every_class(world: AgentRuntime, names: list[str], doing: str) -> None:
    """A Kubernetes-version target moves the whole control plane: refuse a partial selection."""
    every = {c.name for c in world.cluster.list(EC2NodeClass)}
    left = sorted(every - set(names))
    if left:
        raise InvalidRequest(
            doing,
            [
                (
                    "nodeClasses",
                    "a kubernetesVersion target moves the whole control plane, so it changes "
                    f"every EC2NodeClass; the selection leaves out {', '.join(left)} "
                    "(rule: leave nodeClasses out or select every class)",
                )
            ],
        )
