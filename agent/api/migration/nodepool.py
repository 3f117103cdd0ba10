"""NodePool v1beta1 → v1: nodeClassRef group/kind, expireAfter moved into the template,
WhenUnderutilized renamed, consolidateAfter made explicit, kubelet handed to the EC2NodeClass."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ruamel.yaml.comments import CommentedMap

from agent.api.migration.comments import insert_key, pop_key
from agent.api.migration.context import DocContext


@dataclass
class KubeletMove:
    """A NodePool's kubelet block, on its way to the EC2NodeClass it references."""

    ctx: DocContext
    nodeclass: str
    kubelet: Any
    """The kubelet block, or None when the NodePool had none (a value of its own)."""


def _insert_after(mapping: CommentedMap, after: str, key: str, value: Any) -> None:
    keys = list(mapping.keys())
    position = keys.index(after) + 1 if after in keys else len(keys)
    insert_key(mapping, position, key, value)


def migrate_nodepool(ctx: DocContext) -> KubeletMove | None:
    """Migrate one v1beta1 NodePool in place; return its kubelet block if it had one."""
    data = ctx.data
    data["apiVersion"] = "karpenter.sh/v1"
    ctx.change("apiVersion", "karpenter.sh/v1beta1 → karpenter.sh/v1")
    spec = data.get("spec")
    if not isinstance(spec, CommentedMap):
        ctx.report("spec", "a NodePool needs a spec")
        return None
    template = spec.get("template")
    tspec = template.get("spec") if isinstance(template, CommentedMap) else None
    if not isinstance(tspec, CommentedMap):
        ctx.report("spec.template.spec", "a NodePool needs spec.template.spec")
        return None
    _node_class_ref(ctx, tspec)
    _disruption(ctx, spec, tspec)
    ref = tspec.get("nodeClassRef")
    name = str(ref.get("name", "")) if isinstance(ref, CommentedMap) else ""
    if "kubelet" not in tspec:
        return KubeletMove(ctx, name, None)
    kubelet, _, _ = pop_key(tspec, "kubelet")
    ctx.change("spec.template.spec.kubelet", f"kubelet removed; it moves to EC2NodeClass {name}")
    return KubeletMove(ctx, name, kubelet)


def _node_class_ref(ctx: DocContext, tspec: CommentedMap) -> None:
    ref = tspec.get("nodeClassRef")
    if not isinstance(ref, CommentedMap):
        ctx.report("spec.template.spec.nodeClassRef", "nodeClassRef is missing")
        return
    api_version, eol = None, ""
    if "apiVersion" in ref:
        api_version, eol, _ = pop_key(ref, "apiVersion")
    group = str(api_version).split("/", 1)[0] if api_version else "karpenter.k8s.aws"
    if "group" not in ref:
        insert_key(ref, 0, "group", group, eol)
        origin = f"from apiVersion {api_version}" if api_version else "(the default class group)"
        ctx.change("spec.template.spec.nodeClassRef.group", f"set to {group} {origin}")
    if "kind" not in ref:
        _insert_after(ref, "group", "kind", "EC2NodeClass")
        ctx.change("spec.template.spec.nodeClassRef.kind", "set to EC2NodeClass (now required)")


def _disruption(ctx: DocContext, spec: CommentedMap, tspec: CommentedMap) -> None:
    disruption = spec.get("disruption")
    if not isinstance(disruption, CommentedMap):
        return
    orphans = ""
    if "expireAfter" in disruption:
        value, eol, orphans = pop_key(disruption, "expireAfter")
        insert_key(tspec, 0, "expireAfter", value, eol)
        ctx.change(
            "spec.template.spec.expireAfter",
            f"expireAfter {value} moved from spec.disruption (it is now a drift-able template "
            "field, and expiry is forceful in v1)",
        )
    if disruption.get("consolidationPolicy") == "WhenUnderutilized":
        disruption["consolidationPolicy"] = "WhenEmptyOrUnderutilized"
        ctx.change(
            "spec.disruption.consolidationPolicy", "WhenUnderutilized → WhenEmptyOrUnderutilized"
        )
    if not disruption:
        _, _, orphans = pop_key(spec, "disruption", orphans)
        ctx.change("spec.disruption", "removed: nothing left in it (v1 defaults apply)")
        return
    if "consolidateAfter" not in disruption:
        _insert_after(disruption, "consolidationPolicy", "consolidateAfter", "0s")
        ctx.change(
            "spec.disruption.consolidateAfter",
            "set to 0s, the v1beta1 behaviour (Karpenter v1.0-v1.14 require the field)",
        )
