"""Workload and node edits: the removed ``do-not-evict`` / ``do-not-consolidate`` annotations
become ``karpenter.sh/do-not-disrupt``, and tolerations of the old disruption taint follow the
taint's new key ``karpenter.sh/disrupted``."""

from __future__ import annotations

from collections.abc import Iterator

from ruamel.yaml.comments import CommentedMap

from agent.api.labels import DO_NOT_DISRUPT_ANNOTATION as NEW_ANNOTATION
from agent.api.labels import REMOVED_ANNOTATIONS as OLD_ANNOTATIONS
from agent.api.migration.context import DocContext

OLD_TAINT = "karpenter.sh/disruption"
NEW_TAINT = "karpenter.sh/disrupted"


def _get(mapping: object, *path: str) -> object:
    for key in path:
        if not isinstance(mapping, CommentedMap):
            return None
        mapping = mapping.get(key)
    return mapping


def _metadata_blocks(data: CommentedMap, template_only: bool) -> Iterator[tuple[str, object]]:
    if not template_only:
        yield "metadata", _get(data, "metadata")
    yield "spec.template.metadata", _get(data, "spec", "template", "metadata")
    yield (
        "spec.jobTemplate.spec.template.metadata",
        _get(data, "spec", "jobTemplate", "spec", "template", "metadata"),
    )


def _pod_specs(data: CommentedMap) -> Iterator[tuple[str, object]]:
    if data.get("kind") == "Pod":
        yield "spec", data.get("spec")
    yield "spec.template.spec", _get(data, "spec", "template", "spec")
    yield (
        "spec.jobTemplate.spec.template.spec",
        _get(data, "spec", "jobTemplate", "spec", "template", "spec"),
    )


def migrate_workload(ctx: DocContext, template_only: bool = False) -> None:
    """Rewrite removed annotations and old-taint tolerations wherever they stand."""
    for path, meta in _metadata_blocks(ctx.data, template_only):
        annotations = _get(meta, "annotations")
        if isinstance(annotations, CommentedMap):
            _annotations(ctx, f"{path}.annotations", annotations)
    if template_only:
        return
    for path, spec in _pod_specs(ctx.data):
        tolerations = _get(spec, "tolerations")
        if isinstance(tolerations, list):
            _tolerations(ctx, f"{path}.tolerations", tolerations)


def _annotations(ctx: DocContext, path: str, annotations: CommentedMap) -> None:
    for key in OLD_ANNOTATIONS:
        if key not in annotations:
            continue
        value = str(annotations[key]).lower()
        position = list(annotations.keys()).index(key)
        del annotations[key]
        if value == "true" and NEW_ANNOTATION not in annotations:
            annotations.insert(position, NEW_ANNOTATION, "true")
            ctx.change(f"{path}.{key}", f'replaced by {NEW_ANNOTATION}: "true"')
        else:
            ctx.change(f"{path}.{key}", "removed (Karpenter v1 ignores it)")


def _tolerations(ctx: DocContext, path: str, tolerations: list[object]) -> None:
    for index, toleration in enumerate(tolerations):
        if isinstance(toleration, CommentedMap) and toleration.get("key") == OLD_TAINT:
            toleration["key"] = NEW_TAINT
            toleration.pop("value", None)
            toleration["operator"] = "Exists"
            ctx.change(
                f"{path}[{index}]",
                f"tolerates {NEW_TAINT} (the v1 name of the disruption taint, which has no "
                "value); Karpenter advises against tolerating it at all",
            )
