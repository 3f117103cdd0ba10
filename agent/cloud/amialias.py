"""Karpenter's AMI aliases: the EKS-optimized image lines of each family and their SSM paths.

An alias ``family@version`` selects, for the cluster's Kubernetes version, one image per
architecture and variant of the family (:data:`FLAVORS`), each read from the SSM parameter AWS
publishes for that line (:func:`ssm_path`): the ``recommended`` / ``latest`` parameter for
``@latest``, the release's own parameter for a pinned version. Shared by the simulated and the
AWS adapters, so both resolve aliases through the same paths.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from agent.cloud.amirules import Arch, Variant

_X86: Arch = "amd64"
_ARM: Arch = "arm64"
FLAVORS: Mapping[str, tuple[tuple[Arch, Variant], ...]] = MappingProxyType(
    {
        "AL2023": ((_X86, "standard"), (_X86, "nvidia"), (_X86, "neuron"), (_ARM, "standard"),
                   (_ARM, "nvidia")),
        "AL2": ((_X86, "standard"), (_ARM, "standard"), (_X86, "nvidia")),
        "Bottlerocket": ((_X86, "standard"), (_ARM, "standard"), (_X86, "nvidia"),
                         (_ARM, "nvidia")),
        "Windows2019": ((_X86, "standard"),),
        "Windows2022": ((_X86, "standard"),),
        "Windows2025": ((_X86, "standard"),),
    }
)  # fmt: skip
"""The images (arch, variant) of one release of each EKS family."""


def alias_variants(family: str, arch: Arch, variant: Variant) -> tuple[Variant, ...]:
    """The variants an EKS image serves: AL2's GPU image and Bottlerocket's x86_64 image also
    serve neuron (accelerator) types."""
    if family == "AL2" and variant == "nvidia":
        return ("nvidia", "neuron")
    if family == "Bottlerocket" and arch == _X86 and variant == "standard":
        return ("standard", "neuron")
    return (variant,)


def supports(family: str, kubernetes_version: str) -> bool:
    """Whether EKS publishes ``family`` images for ``kubernetes_version``."""
    minor = int(kubernetes_version.split(".")[1])
    if family == "AL2":
        return minor < 33
    if family == "Windows2025":
        return minor >= 35
    return True


def arch_name(arch: Arch) -> str:
    """The architecture as EC2 and the image names spell it."""
    return "x86_64" if arch == _X86 else "arm64"


def ssm_path(
    family: str, kubernetes_version: str, arch: Arch, variant: Variant, version: str | None
) -> str | None:
    """The SSM parameter AWS publishes for an EKS image line: the newest release when
    ``version`` is None, else that release (None: Windows publishes no pinned parameters)."""
    k8s, a = kubernetes_version, arch_name(arch)
    if family == "AL2023":
        leaf = version and f"amazon-eks-node-al2023-{a}-{variant}-{k8s}-{version}"
        return f"/aws/service/eks/optimized-ami/{k8s}/amazon-linux-2023/{a}/{variant}/" + (
            f"{leaf or 'recommended'}/image_id"
        )
    if family == "AL2":
        suffix = {"standard": "" if arch == _X86 else "-arm64", "nvidia": "-gpu"}[variant]
        leaf = version and f"amazon-eks{suffix}-node-{k8s}-{version}"
        return f"/aws/service/eks/optimized-ami/{k8s}/amazon-linux-2{suffix}/" + (
            f"{leaf or 'recommended'}/image_id"
        )
    if family == "Bottlerocket":
        nvidia = "-nvidia" if variant == "nvidia" else ""
        leaf = version.removeprefix("v") if version else "latest"
        return f"/aws/service/bottlerocket/aws-k8s-{k8s}{nvidia}/{a}/{leaf}/image_id"
    if family.startswith("Windows") and version is None:
        year = family.removeprefix("Windows")
        return f"/aws/service/ami-windows-latest/Windows_Server-{year}-English-Core-EKS_Optimized-{k8s}/image_id"  # noqa: E501
    return None
