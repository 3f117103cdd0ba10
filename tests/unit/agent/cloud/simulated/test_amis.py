"""The simulated AMI catalog: names, release cadence, seeds, publishing, SSM parameters."""

from __future__ import annotations

import itertools
import re
from datetime import UTC, datetime, timedelta

import pytest

from agent.cloud.simulated import AMI, AMICatalog
from agent.cloud.simulated.amis import NEWEST_RELEASE

AUG7 = datetime(2024, 8, 7, tzinfo=UTC)


def _names(catalog: AMICatalog, family: str) -> set[str]:
    return {ami.name for ami in catalog if ami.family == family}


def test_release_names_follow_each_family_scheme() -> None:
    catalog = AMICatalog.eks_optimized(["1.30"], releases=1, newest=AUG7)
    assert _names(catalog, "AL2023") == {
        "amazon-eks-node-al2023-x86_64-standard-1.30-v20240807",
        "amazon-eks-node-al2023-x86_64-nvidia-1.30-v20240807",
        "amazon-eks-node-al2023-x86_64-neuron-1.30-v20240807",
        "amazon-eks-node-al2023-arm64-standard-1.30-v20240807",
        "amazon-eks-node-al2023-arm64-nvidia-1.30-v20240807",
    }
    assert _names(catalog, "AL2") == {
        "amazon-eks-node-1.30-v20240807",
        "amazon-eks-arm64-node-1.30-v20240807",
        "amazon-eks-gpu-node-1.30-v20240807",
    }
    bottlerocket = sorted(_names(catalog, "Bottlerocket"))
    assert [re.sub(r"-[0-9a-f]{8}$", "-<commit>", name) for name in bottlerocket] == [
        "bottlerocket-aws-k8s-1.30-arm64-v1.20.0-<commit>",
        "bottlerocket-aws-k8s-1.30-nvidia-arm64-v1.20.0-<commit>",
        "bottlerocket-aws-k8s-1.30-nvidia-x86_64-v1.20.0-<commit>",
        "bottlerocket-aws-k8s-1.30-x86_64-v1.20.0-<commit>",
    ]
    assert len({name[-8:] for name in bottlerocket}) == 1  # one commit per release
    assert _names(catalog, "Windows2022") == {
        "Windows_Server-2022-English-Core-EKS_Optimized-1.30-2024.08.07"
    }
    assert {a.arch for a in catalog if a.family.startswith("Windows")} == {"amd64"}
    assert all(re.fullmatch(r"ami-[0-9a-f]{17}", ami.id) for ami in catalog)
    assert {a.owner for a in catalog} == {"amazon"}


def test_releases_come_on_a_fixed_cadence_ending_at_the_newest_release() -> None:
    catalog = AMICatalog.eks_optimized(["1.30"], releases=6)
    al2023 = catalog.releases("AL2023", "1.30")
    assert al2023[-1] == f"v{NEWEST_RELEASE:%Y%m%d}"
    dates = [datetime.strptime(v, "v%Y%m%d").replace(tzinfo=UTC) for v in al2023]
    assert [b - a for a, b in itertools.pairwise(dates)] == [timedelta(days=14)] * 5
    assert catalog.releases("Bottlerocket", "1.30") == [
        "v1.20.0", "v1.20.1", "v1.20.2", "v1.20.3", "v1.21.0", "v1.21.1"
    ]  # fmt: skip
    windows = catalog.releases("Windows2019", "1.30")
    assert windows[-1] == f"{NEWEST_RELEASE:%Y.%m.%d}"
    assert windows[0] == f"{NEWEST_RELEASE - timedelta(days=5 * 28):%Y.%m.%d}"


def test_families_follow_the_kubernetes_versions_eks_supports() -> None:
    catalog = AMICatalog.eks_optimized(["1.32", "1.33", "1.35"], releases=1)
    assert {a.kubernetes_version for a in catalog if a.family == "AL2"} == {"1.32"}
    assert {a.kubernetes_version for a in catalog if a.family == "Windows2025"} == {"1.35"}
    assert {a.kubernetes_version for a in catalog if a.family == "AL2023"} == {
        "1.32",
        "1.33",
        "1.35",
    }


def test_the_seed_fixes_the_ids() -> None:
    one = {a.name: a.id for a in AMICatalog.eks_optimized(releases=2, seed=3)}
    assert one == {a.name: a.id for a in AMICatalog.eks_optimized(releases=2, seed=3)}
    other = {a.name: a.id for a in AMICatalog.eks_optimized(releases=2, seed=4)}
    assert set(one.values()).isdisjoint(other.values())
    assert {n for n in one if not n.startswith("bottlerocket")} == {
        n for n in other if not n.startswith("bottlerocket")
    }


def test_publish_adds_a_release_and_moves_the_latest_parameters(amis: AMICatalog) -> None:
    latest = (
        "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/standard/recommended/image_id"
    )
    before = amis.parameter(latest)
    created = datetime(2026, 1, 5, tzinfo=UTC)
    images = amis.publish("AL2023", created=created)
    assert {a.version for a in images} == {"v20260105"}
    assert {a.kubernetes_version for a in images} == {"1.30", "1.31", "1.32", "1.33", "1.34"}
    assert len(images) == 5 * 5
    new = next(
        a for a in images if a.name == "amazon-eks-node-al2023-x86_64-standard-1.30-v20260105"
    )
    assert amis.parameter(latest) == new.id != before
    pinned = (
        "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/standard/"
        "amazon-eks-node-al2023-x86_64-standard-1.30-v20260105/image_id"
    )
    assert amis.parameter(pinned) == new.id
    with pytest.raises(ValueError, match="already published"):
        amis.publish("AL2023", created=created)
    older = amis.publish("AL2023", created=datetime(2025, 1, 1, tzinfo=UTC))
    assert amis.parameter(latest) == new.id
    assert older[0].version == "v20250101"


def test_publish_continues_the_bottlerocket_versions_and_can_mark_a_release_faulty(
    amis: AMICatalog,
) -> None:
    images = amis.publish("Bottlerocket", created=datetime(2026, 1, 6, tzinfo=UTC), faulty=True)
    assert {a.version for a in images} == {"v1.21.2"}
    assert all(a.faulty for a in images)
    assert amis.parameter("/aws/service/bottlerocket/aws-k8s-1.31/arm64/latest/image_id") in {
        a.id for a in images
    }
    assert amis.parameter("/aws/service/bottlerocket/aws-k8s-1.31/arm64/1.21.2/image_id") in {
        a.id for a in images
    }
    with pytest.raises(ValueError, match="custom"):
        amis.publish("Custom", created=datetime(2026, 1, 6, tzinfo=UTC))


def test_custom_images_deprecation_and_faults() -> None:
    catalog = AMICatalog()
    ami = catalog.add(
        AMI(
            "ami-0123456789abcdef0",
            "my-ami-1",
            "Custom",
            "1",
            "1.30",
            "amd64",
            owner="111122223333",
        )
    )
    assert catalog.get(ami.id) == ami
    assert ami.id in catalog
    assert len(catalog) == 1
    catalog.deprecate(ami.id)
    assert catalog.get(ami.id).deprecated
    catalog.set_faulty(ami.id)
    assert catalog.get(ami.id).faulty
    catalog.set_faulty(ami.id, False)
    assert not catalog.get(ami.id).faulty
    with pytest.raises(ValueError, match="already has"):
        catalog.add(ami)
    with pytest.raises(KeyError, match="ami-missing"):
        catalog.get("ami-missing")
    with pytest.raises(ValueError, match="timezone-aware"):
        AMI("ami-1", "x", "Custom", "1", "1.30", "amd64", created=datetime(2025, 1, 1))
    with pytest.raises(ValueError, match="start with"):
        AMI("img-1", "x", "Custom", "1", "1.30", "amd64")
    catalog.put_parameter("/my/ami", ami.id)
    assert catalog.parameter("/my/ami") == ami.id
    assert catalog.parameter("/nothing") is None
