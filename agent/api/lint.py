"""Warnings for valid manifests that carry a known risk (they never fail validation).

- an ``@latest`` AMI alias: every new AMI release rolls into the cluster untested (Karpenter's
  "Managing AMIs" guide recommends pinning a version in production);
- a NodePool without its own disruption budgets (only the default ``nodes: 10%`` applies);
- ``expireAfter: Never``: nodes are never recycled, so they never pick up patches by expiry;
- a budget schedule that Karpenter accepts but cannot parse, which blocks all disruption;
- a budget ``timeZone``: driftwave's addition, which Karpenter lacks (a manifest applied to a
  Karpenter cluster loses it and the schedule runs in UTC);
- a selector term with empty ``tags`` (``tags: {}``) and nothing else: Karpenter admits it, and
  it then matches every subnet, security group, AMI or capacity reservation the account has;
- the removed v1beta1 annotations ``karpenter.sh/do-not-evict`` / ``do-not-consolidate``.
"""

from __future__ import annotations

from collections.abc import Iterator

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.labels import REMOVED_ANNOTATIONS
from agent.api.nodepool import NodePool
from common.durations import NEVER, budget_schedule_problem
from common.kubemodel import KubeModel

LintWarning = tuple[str, str]
_PINNED_EXAMPLES = {"al2": "v20240807", "al2023": "v20240807", "bottlerocket": "v1.20.3"}


def lint(obj: KubeModel) -> Iterator[LintWarning]:
    """The warnings for one valid object, as (field path, message) pairs."""
    if isinstance(obj, NodePool):
        yield from _nodepool(obj)
    elif isinstance(obj, EC2NodeClass):
        yield from _nodeclass(obj)
    yield from _removed_annotations(obj)


def _nodepool(pool: NodePool) -> Iterator[LintWarning]:
    spec = pool.spec
    ref = spec.template.spec.node_class_ref
    if (ref.group, ref.kind) != ("karpenter.k8s.aws", "EC2NodeClass"):
        yield (
            "spec.template.spec.nodeClassRef",
            f"{ref.group}/{ref.kind} is not an EC2NodeClass (group karpenter.k8s.aws): the "
            "agent launches EKS nodes from EC2NodeClasses only",
        )
    if spec.disruption.budgets == []:
        yield (
            "spec.disruption.budgets",
            "budgets is an empty list: with no budget Karpenter puts no limit on how many nodes "
            "it disrupts at once; remove the field (10% default) or set budgets",
        )
    elif "budgets" not in spec.disruption.model_fields_set:
        yield (
            "spec.disruption.budgets",
            "no disruption budget set: the default (nodes: 10%) lets drift replace a tenth of "
            "the pool at once at any hour; set budgets (with a schedule) to pace replacements",
        )
    if spec.template.spec.expire_after == NEVER:
        yield (
            "spec.template.spec.expireAfter",
            "expireAfter is Never: nodes are never recycled by age, so a node that misses a "
            "drift replacement keeps its old image indefinitely",
        )
    for index, budget in enumerate(spec.disruption.budgets):
        if budget.time_zone is not None:
            yield (
                f"spec.disruption.budgets[{index}].timeZone",
                "timeZone is driftwave's addition: Karpenter has no such field, so this "
                "NodePool applied to a Karpenter cluster loses it and the schedule runs in UTC",
            )
        if budget.schedule is not None:
            problem = budget_schedule_problem(budget.schedule)
            if problem:
                yield (
                    f"spec.disruption.budgets[{index}].schedule",
                    f"{problem}; Karpenter accepts it but then treats the budget as allowing "
                    "no disruption at all",
                )


SELECTOR_FIELDS = (
    "amiSelectorTerms",
    "subnetSelectorTerms",
    "securityGroupSelectorTerms",
    "capacityReservationSelectorTerms",
)


def _selects_everything(term: dict[str, object]) -> bool:
    return term.get("tags") == {} and set(term) == {"tags"}


def _nodeclass(nodeclass: EC2NodeClass) -> Iterator[LintWarning]:
    spec = nodeclass.spec.to_manifest()
    for field in SELECTOR_FIELDS:
        for index, term in enumerate(spec.get(field) or []):
            if _selects_everything(term):
                yield (
                    f"spec.{field}[{index}].tags",
                    "tags is empty: Karpenter admits this term and it then matches every "
                    "resource of its kind in the account and region; name the tags to match",
                )
    for index, term in enumerate(nodeclass.spec.ami_selector_terms):
        family = term.alias_family
        if term.alias and term.alias.endswith("@latest") and family:
            example = _PINNED_EXAMPLES.get(family)
            pin = f"pin a version (e.g. {family}@{example})" if example else "pin a version"
            yield (
                f"spec.amiSelectorTerms[{index}].alias",
                f"{term.alias} follows every new AMI release into this cluster untested; {pin} "
                "in production and roll new versions out in stages (a driftwave Release through "
                "rings: docs/concepts.md)",
            )


def _removed_annotations(obj: KubeModel) -> Iterator[LintWarning]:
    for path, values in _annotation_maps(obj):
        for key in REMOVED_ANNOTATIONS:
            if key in values:
                yield (
                    f"{path}.{key}",
                    f"{key} was removed in Karpenter v1 and is ignored; use "
                    "karpenter.sh/do-not-disrupt (`driftwave migrate` rewrites it)",
                )


def _annotation_maps(obj: KubeModel) -> Iterator[tuple[str, dict[str, str]]]:
    metadata = getattr(obj, "metadata", None)
    annotations = getattr(metadata, "annotations", None)
    if isinstance(annotations, dict):
        yield "metadata.annotations", annotations
    spec = getattr(obj, "spec", None)
    template = getattr(spec, "template", None)
    template_meta = getattr(template, "metadata", None)
    template_annotations = getattr(template_meta, "annotations", None)
    if isinstance(template_annotations, dict):
        yield "spec.template.metadata.annotations", template_annotations
