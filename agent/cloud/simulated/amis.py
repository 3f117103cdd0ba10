"""The simulated AMI catalog: generated EKS-optimized releases, custom images, SSM parameters.

:meth:`AMICatalog.eks_optimized` generates the images AWS publishes for EKS, per family,
Kubernetes version, architecture and variant, with their real naming schemes:

* **AL2023**: ``amazon-eks-node-al2023-x86_64-standard-1.30-v20240807``; images for x86_64
  standard, nvidia and neuron, arm64 standard and nvidia.
* **AL2**: ``amazon-eks-node-1.30-v20240807``, ``amazon-eks-arm64-node-1.30-v20240807`` and
  the GPU image ``amazon-eks-gpu-node-1.30-v20240807`` (which serves nvidia and neuron types).
* **Bottlerocket**: ``bottlerocket-aws-k8s-1.30-x86_64-v1.20.3-<8 hex>`` (which also serves
  neuron types), the arm64 image, and ``bottlerocket-aws-k8s-1.30-nvidia-<arch>-...`` for both
  architectures; the 8 hex digits are the release's commit, shared by its images.
* **Windows2019 / 2022 / 2025**: ``Windows_Server-2022-English-Core-EKS_Optimized-1.30-2025.12.16``,
  x86_64 only.

Releases come on a fixed cadence ending at :data:`NEWEST_RELEASE` (two weeks before the virtual
clock's epoch): every 14 days for AL2 / AL2023 (versioned ``vYYYYMMDD``), every 21 days for
Bottlerocket (``v1.<minor>.<patch>``, starting at ``v1.20.0``, a minor release every fourth),
every 28 days for Windows (``YYYY.MM.DD``; Windows aliases only take ``@latest``). A release
covers every Kubernetes version its family supports: AL2 stops at 1.32 (EKS has no AL2 images
from 1.33), Windows Server 2025 starts at 1.35. AMI ids (from the image name) and Bottlerocket's
commit (from the release) are BLAKE2b digests with the seed, so a seed always gives the same
catalog.

The catalog also keeps the SSM parameters that point at these images, as AWS publishes them (a
``recommended`` / ``latest`` parameter per image line that :meth:`AMICatalog.publish` moves to
the newest release, and a pinned parameter per release); aliases resolve through them, and
``ssmParameter`` selector terms read them (:meth:`AMICatalog.put_parameter` adds custom ones).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import Literal

from agent.cloud.amialias import _X86, FLAVORS, arch_name, ssm_path, supports
from agent.cloud.amirules import Arch, Variant
from agent.cloud.simulated import ids
from agent.cloud.simulated.ids import digest

AMIFamily = Literal[
    "AL2", "AL2023", "Bottlerocket", "Windows2019", "Windows2022", "Windows2025", "Custom"
]
EKS_FAMILIES: tuple[AMIFamily, ...] = (
    "AL2023", "AL2", "Bottlerocket", "Windows2019", "Windows2022", "Windows2025"
)  # fmt: skip
DEFAULT_ACCOUNT_ID = "111122223333"
"""The account the simulated agent runs in (the owner ``self`` means)."""
DEFAULT_AMI_SEED = 1
DEFAULT_KUBERNETES_VERSIONS: tuple[str, ...] = ("1.30", "1.31", "1.32", "1.33", "1.34")
DEFAULT_RELEASES = 6
"""How many releases per family :meth:`AMICatalog.eks_optimized` generates by default."""
NEWEST_RELEASE = datetime(2025, 12, 16, tzinfo=UTC)
CADENCE: Mapping[str, timedelta] = MappingProxyType(
    {
        "AL2023": timedelta(days=14),
        "AL2": timedelta(days=14),
        "Bottlerocket": timedelta(days=21),
        "Windows2019": timedelta(days=28),
        "Windows2022": timedelta(days=28),
        "Windows2025": timedelta(days=28),
    }
)


@dataclass(frozen=True, slots=True)
class AMI:
    """One machine image. ``owner`` is ``amazon`` or an account id; ``created`` is aware."""

    id: str
    name: str
    family: AMIFamily
    version: str
    kubernetes_version: str
    arch: Arch
    variant: Variant = "standard"
    created: datetime = NEWEST_RELEASE
    tags: Mapping[str, str] = field(default_factory=dict, hash=False)
    owner: str = "amazon"
    deprecated: bool = False
    faulty: bool = False
    """A faulty image boots, but its node never becomes Ready (a bad release)."""

    def __post_init__(self) -> None:
        if self.created.tzinfo is None:
            raise ValueError(f"AMI {self.id}: created must be timezone-aware")
        if not self.id.startswith("ami-"):
            raise ValueError(f"AMI id {self.id!r} must start with 'ami-'")


def image_name(
    family: str, kubernetes_version: str, version: str, arch: Arch, variant: Variant, commit: str
) -> str:
    """The name AWS gives an EKS-optimized image (``commit``: Bottlerocket's 8-hex suffix)."""
    k8s, a = kubernetes_version, arch_name(arch)
    if family == "AL2023":
        return f"amazon-eks-node-al2023-{a}-{variant}-{k8s}-{version}"
    if family == "AL2":
        kind = {"standard": "" if arch == _X86 else "-arm64", "nvidia": "-gpu"}[variant]
        return f"amazon-eks{kind}-node-{k8s}-{version}"
    if family == "Bottlerocket":
        nvidia = "-nvidia" if variant == "nvidia" else ""
        return f"bottlerocket-aws-k8s-{k8s}{nvidia}-{a}-{version}-{commit}"
    year = family.removeprefix("Windows")
    return f"Windows_Server-{year}-English-Core-EKS_Optimized-{k8s}-{version}"


class AMICatalog:
    """The images a simulated account can see, and the SSM parameters pointing at them."""

    def __init__(
        self,
        amis: Sequence[AMI] = (),
        *,
        account_id: str = DEFAULT_ACCOUNT_ID,
        seed: int | str = DEFAULT_AMI_SEED,
        kubernetes_versions: Sequence[str] = DEFAULT_KUBERNETES_VERSIONS,
    ) -> None:
        self.account_id = account_id
        self.seed = seed
        self.kubernetes_versions = tuple(kubernetes_versions)
        self._amis: dict[str, AMI] = {}
        self._parameters: dict[str, str] = {}
        for ami in amis:
            self.add(ami)

    @classmethod
    def eks_optimized(
        cls,
        kubernetes_versions: Sequence[str] = DEFAULT_KUBERNETES_VERSIONS,
        releases: int = DEFAULT_RELEASES,
        *,
        families: Sequence[AMIFamily] = EKS_FAMILIES,
        newest: datetime = NEWEST_RELEASE,
        seed: int | str = DEFAULT_AMI_SEED,
        account_id: str = DEFAULT_ACCOUNT_ID,
    ) -> AMICatalog:
        """A catalog of ``releases`` EKS-optimized releases of each family (module docstring)."""
        catalog = cls(account_id=account_id, seed=seed, kubernetes_versions=kubernetes_versions)
        for family in families:
            for index in range(releases):
                catalog.publish(family, created=newest - CADENCE[family] * (releases - 1 - index))
        return catalog

    # Reading

    def __iter__(self) -> Iterator[AMI]:
        return iter(self._amis.values())

    def __len__(self) -> int:
        return len(self._amis)

    def __contains__(self, ami_id: object) -> bool:
        return ami_id in self._amis

    def get(self, ami_id: str) -> AMI:
        """The image ``ami_id``; KeyError when the catalog has no such image."""
        try:
            return self._amis[ami_id]
        except KeyError:
            raise KeyError(f"no AMI {ami_id!r} in the catalog") from None

    def releases(self, family: AMIFamily, kubernetes_version: str) -> list[str]:
        """The release versions of ``family`` for a Kubernetes version, oldest first."""
        dated = {
            (a.created, a.version)
            for a in self
            if a.family == family and a.kubernetes_version == kubernetes_version
        }
        return [version for _, version in sorted(dated)]

    def parameter(self, name: str) -> str | None:
        """The value of SSM parameter ``name`` (an AMI id), or None when it does not exist."""
        return self._parameters.get(name)

    # Changing

    def add(self, ami: AMI) -> AMI:
        """Add an image (a custom one, or a release); an Amazon-owned EKS image also gets its SSM
        parameters, and its line's latest parameter moves to it when it is the newest."""
        if ami.id in self._amis:
            raise ValueError(f"the catalog already has an AMI {ami.id}")
        self._amis[ami.id] = ami
        if ami.owner == "amazon" and ami.family != "Custom":
            k8s, arch, variant = ami.kubernetes_version, ami.arch, ami.variant
            pinned = ssm_path(ami.family, k8s, arch, variant, ami.version)
            if pinned is not None:
                self._parameters[pinned] = ami.id
            latest = ssm_path(ami.family, k8s, arch, variant, None)
            current = self._amis.get(self._parameters.get(latest or "", ""))
            if latest is not None and (
                current is None or (current.created, current.name) < (ami.created, ami.name)
            ):
                self._parameters[latest] = ami.id
        return ami

    def put_parameter(self, name: str, value: str) -> None:
        """Create or overwrite SSM parameter ``name`` (for ``ssmParameter`` selector terms)."""
        self._parameters[name] = value

    def publish(
        self,
        family: AMIFamily,
        *,
        created: datetime,
        version: str | None = None,
        kubernetes_versions: Sequence[str] | None = None,
        faulty: bool = False,
    ) -> list[AMI]:
        """Publish a new EKS-optimized release of ``family`` (a scenario event); return its images.

        The version follows the family's scheme unless given (dated families use ``created``;
        Bottlerocket takes the next patch). ``faulty`` marks every image of the release faulty.
        Aliases at ``@latest`` move to this release when it is the newest.
        """
        if family == "Custom":
            raise ValueError("only EKS-optimized families are published; add() custom images")
        if version is None:
            version = self._next_version(family, created)
        commit = digest(self.seed, "commit", family, version)[:8]
        images: list[AMI] = []
        for k8s in kubernetes_versions or self.kubernetes_versions:
            if not supports(family, k8s):
                continue
            for arch, variant in FLAVORS[family]:
                name = image_name(family, k8s, version, arch, variant, commit)
                ami_id = ids.ami_id(self.seed, name)
                images.append(
                    AMI(ami_id, name, family, version, k8s, arch, variant, created, faulty=faulty)
                )
        taken = [ami.name for ami in images if ami.id in self._amis]
        if taken:
            raise ValueError(f"release {version} of {family} is already published ({taken[0]})")
        return [self.add(ami) for ami in images]

    def _next_version(self, family: AMIFamily, created: datetime) -> str:
        if family in ("AL2", "AL2023"):
            return f"v{created:%Y%m%d}"
        if family == "Bottlerocket":
            index = len({a.version for a in self if a.family == family})
            return f"v1.{20 + index // 4}.{index % 4}"
        return f"{created:%Y.%m.%d}"

    def deprecate(self, *ami_ids: str) -> None:
        """Mark images deprecated (EC2 deprecates images; Karpenter then avoids them)."""
        for ami_id in ami_ids:
            self._amis[ami_id] = dataclasses.replace(self.get(ami_id), deprecated=True)

    def set_faulty(self, ami_id: str, faulty: bool = True) -> None:
        """Mark an image faulty (its nodes never become Ready) or healthy again."""
        self._amis[ami_id] = dataclasses.replace(self.get(ami_id), faulty=faulty)
