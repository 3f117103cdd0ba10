"""Per-kind v1beta1 → v1 edits, applied in place on round-trip YAML documents.

Order matters: NodePools are migrated first so that the ``kubelet`` blocks they give up can be
placed on the EC2NodeClasses they reference (and conflicts between NodePools sharing one class
reported with both names).
"""

from __future__ import annotations

from typing import Any

from ruamel.yaml.comments import CommentedMap

from agent.api.migration.annotations import migrate_workload
from agent.api.migration.comments import insert_key
from agent.api.migration.context import DocContext
from agent.api.migration.nodeclass import migrate_nodeclass
from agent.api.migration.nodepool import KubeletMove, migrate_nodepool

OLD_NODEPOOL = ("karpenter.sh/v1beta1", "NodePool")
OLD_NODECLASS = ("karpenter.k8s.aws/v1beta1", "EC2NodeClass")
NODECLASS_VERSIONS = ("karpenter.k8s.aws/v1beta1", "karpenter.k8s.aws/v1")


def _key(ctx: DocContext) -> tuple[str, str]:
    return str(ctx.data.get("apiVersion", "")), ctx.kind


def migrate_documents(contexts: list[DocContext]) -> None:
    """Migrate every document; kubelet blocks move from NodePools to their EC2NodeClasses."""
    moves: list[KubeletMove] = []
    for ctx in contexts:
        if _key(ctx) == OLD_NODEPOOL:
            move = migrate_nodepool(ctx)
            if move is not None:
                moves.append(move)
        elif _key(ctx) == ("karpenter.sh/v1beta1", "NodeClaim"):
            ctx.report(
                "apiVersion",
                "NodeClaims are created by Karpenter, not written by hand; remove this document "
                "(Karpenter v1 converts live NodeClaims itself)",
            )
    classes = {
        ctx.name: ctx
        for ctx in contexts
        if ctx.kind == "EC2NodeClass" and str(ctx.data.get("apiVersion")) in NODECLASS_VERSIONS
    }
    _place_kubelets(moves, classes)
    for ctx in contexts:
        if _key(ctx) == OLD_NODECLASS:
            migrate_nodeclass(ctx)
        elif ctx.kind not in ("NodePool", "EC2NodeClass", "NodeClaim"):
            migrate_workload(ctx)
        else:
            migrate_workload(ctx, template_only=True)


def _place_kubelets(moves: list[KubeletMove], classes: dict[str, DocContext]) -> None:
    by_class: dict[str, list[KubeletMove]] = {}
    for move in moves:
        by_class.setdefault(move.nodeclass, []).append(move)
    for name, group in by_class.items():
        with_kubelet = [m for m in group if m.kubelet is not None]
        if not with_kubelet:
            continue
        first = with_kubelet[0]
        conflict = next((m for m in group if _plain(m.kubelet) != _plain(first.kubelet)), None)
        target = classes.get(name)
        if conflict is not None:
            theirs = "no kubelet settings" if conflict.kubelet is None else "other kubelet settings"
            for move in (first, conflict):
                move.ctx.report(
                    "spec.template.spec.kubelet",
                    f"NodePools {first.ctx.name} and {conflict.ctx.name} share EC2NodeClass "
                    f"{name}, but {conflict.ctx.name} has {theirs}; v1 keeps kubelet on the "
                    "EC2NodeClass, where it applies to every NodePool using it, so give each "
                    "NodePool its own EC2NodeClass first",
                )
            continue
        if target is None:
            first.ctx.report(
                "spec.template.spec.kubelet",
                f"kubelet must move to EC2NodeClass {name}, which is not in this file; put the "
                "EC2NodeClass in the same file and migrate them together",
            )
            continue
        spec = target.data.get("spec")
        existing = spec.get("kubelet") if isinstance(spec, dict) else None
        if existing is not None and _plain(existing) != _plain(first.kubelet):
            first.ctx.report(
                "spec.template.spec.kubelet",
                f"EC2NodeClass {name} already has different kubelet settings; reconcile them by "
                "hand",
            )
            continue
        if isinstance(spec, CommentedMap) and existing is None:
            insert_key(spec, 0, "kubelet", first.kubelet)
            pools = ", ".join(m.ctx.name for m in group)
            target.change("spec.kubelet", f"kubelet moved here from NodePool {pools}")
            target.report(
                "spec.kubelet",
                f"the kubelet settings of NodePool {pools} now apply to every NodePool using "
                f"EC2NodeClass {name}; check NodePools in other files that use it",
                "warning",
            )


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
