"""EC2NodeClass v1beta1 → v1: amiSelectorTerms required (an alias from amiFamily), Ubuntu
refused with guidance, the old IMDS hop-limit default kept explicit, the managed-by tag dropped."""

from __future__ import annotations

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from agent.api.migration.context import DocContext

ALIASES = {
    "AL2": "al2",
    "AL2023": "al2023",
    "Bottlerocket": "bottlerocket",
    "Windows2019": "windows2019",
    "Windows2022": "windows2022",
}
OLD_HOP_LIMIT = 2


def migrate_nodeclass(ctx: DocContext) -> None:
    """Migrate one v1beta1 EC2NodeClass in place."""
    ctx.data["apiVersion"] = "karpenter.k8s.aws/v1"
    ctx.change("apiVersion", "karpenter.k8s.aws/v1beta1 → karpenter.k8s.aws/v1")
    spec = ctx.data.get("spec")
    if not isinstance(spec, CommentedMap):
        ctx.report("spec", "an EC2NodeClass needs a spec")
        return
    _ami_selection(ctx, spec)
    _metadata_options(ctx, spec)
    tags = spec.get("tags")
    if isinstance(tags, CommentedMap) and "karpenter.sh/managed-by" in tags:
        del tags["karpenter.sh/managed-by"]
        ctx.change(
            "spec.tags.karpenter.sh/managed-by",
            "removed: v1 tags instances with eks:eks-cluster-name itself",
        )


def _ami_selection(ctx: DocContext, spec: CommentedMap) -> None:
    family = spec.get("amiFamily")
    terms = spec.get("amiSelectorTerms")
    if family == "Ubuntu":
        ctx.report(
            "spec.amiFamily",
            "Ubuntu is no longer an AMI family in v1. Pin your Ubuntu AMI in amiSelectorTerms "
            "(id, name or tags) and either set amiFamily: AL2 (same UserData format; add a "
            "/dev/sda1 root volume in blockDeviceMappings, as Ubuntu's root device differs) or "
            "amiFamily: Custom and maintain the UserData yourself",
        )
        return
    if terms:
        return
    alias_family = ALIASES.get(str(family))
    if alias_family is None:
        what = f"amiFamily {family} has no alias" if family else "amiFamily is missing"
        ctx.report(
            "spec.amiSelectorTerms",
            f"{what}: amiSelectorTerms are required in v1; add terms that select your AMIs by "
            "id, name or tags (and set amiFamily, which v1beta1 required too)",
        )
        return
    keys = list(spec.keys())
    position = keys.index("amiFamily") + 1 if "amiFamily" in keys else 0
    term = CommentedMap([("alias", f"{alias_family}@latest")])
    spec.insert(position, "amiSelectorTerms", CommentedSeq([term]))
    ctx.change(
        "spec.amiSelectorTerms",
        f"set to [alias: {alias_family}@latest], the same AMIs the v1beta1 amiFamily selected "
        "(pin a version for production)",
    )


def _metadata_options(ctx: DocContext, spec: CommentedMap) -> None:
    options = spec.get("metadataOptions")
    why = (
        f"kept at the v1beta1 default {OLD_HOP_LIMIT}: v1 defaults to 1, which cuts pods without "
        "hostNetwork (e.g. the AWS Load Balancer Controller) off from IMDS; lower it once no pod "
        "needs IMDS"
    )
    if isinstance(options, CommentedMap):
        if "httpPutResponseHopLimit" not in options:
            options["httpPutResponseHopLimit"] = OLD_HOP_LIMIT
            ctx.change("spec.metadataOptions.httpPutResponseHopLimit", why)
        return
    options = CommentedMap(
        [
            ("httpEndpoint", "enabled"),
            ("httpProtocolIPv6", "disabled"),
            ("httpPutResponseHopLimit", OLD_HOP_LIMIT),
            ("httpTokens", "required"),
        ]
    )
    keys = list(spec.keys())
    anchor = next((k for k in ("role", "instanceProfile") if k in keys), None)
    position = keys.index(anchor) + 1 if anchor else len(keys)
    spec.insert(position, "metadataOptions", options)
    ctx.change(
        "spec.metadataOptions", f"v1beta1 defaults written out; httpPutResponseHopLimit {why}"
    )
