"""Resolving amiSelectorTerms against the simulated AMI catalog, term kind by term kind."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agent.api.nodeclass_status import ResolvedAMI
from agent.cloud.simulated import AMI, AMICatalog, AMIResolutionError, ids, resolve_amis

from ..helpers import nodeclass

OTHER_ACCOUNT = "999988887777"
SELF = "111122223333"
T0 = datetime(2025, 6, 1, tzinfo=UTC)


def _resolve(amis: AMICatalog, *terms: dict[str, Any], k8s: str = "1.30") -> list[ResolvedAMI]:
    family = None if any("alias" in term for term in terms) else "AL2023"
    return resolve_amis(amis, nodeclass(*terms, ami_family=family), k8s)


def _names(resolved: list[ResolvedAMI]) -> set[str]:
    return {ami.name or "" for ami in resolved}


def _reqs(ami: ResolvedAMI) -> set[tuple[str, str, tuple[str, ...]]]:
    return {(r.key, r.operator, tuple(r.values or ())) for r in ami.requirements}


def _custom(
    catalog: AMICatalog,
    name: str,
    *,
    arch: str = "amd64",
    days: int = 0,
    owner: str = SELF,
    tags: dict[str, str] | None = None,
    deprecated: bool = False,
) -> AMI:
    ami_id = ids.ami_id("tests", f"{name}:{arch}:{days}")
    return catalog.add(
        AMI(
            ami_id,
            name,
            "Custom",
            "1",
            "1.30",
            arch,  # type: ignore[arg-type]
            created=T0 + timedelta(days=days),
            owner=owner,
            tags=tags or {},
            deprecated=deprecated,
        )
    )


def test_an_alias_gives_one_image_per_arch_and_variant_with_their_requirements(
    amis: AMICatalog,
) -> None:
    resolved = _resolve(amis, {"alias": "al2023@latest"})
    by_name = {ami.name: _reqs(ami) for ami in resolved}
    arch_amd = ("kubernetes.io/arch", "In", ("amd64",))
    gpu = "karpenter.k8s.aws/instance-gpu-count"
    accel = "karpenter.k8s.aws/instance-accelerator-count"
    assert by_name == {
        "amazon-eks-node-al2023-x86_64-standard-1.30-v20251216": {
            arch_amd, (gpu, "DoesNotExist", ()), (accel, "DoesNotExist", ())
        },
        "amazon-eks-node-al2023-x86_64-nvidia-1.30-v20251216": {arch_amd, (gpu, "Exists", ())},
        "amazon-eks-node-al2023-x86_64-neuron-1.30-v20251216": {arch_amd, (accel, "Exists", ())},
        "amazon-eks-node-al2023-arm64-standard-1.30-v20251216": {
            ("kubernetes.io/arch", "In", ("arm64",)), (gpu, "DoesNotExist", ()),
            (accel, "DoesNotExist", ()),
        },
        "amazon-eks-node-al2023-arm64-nvidia-1.30-v20251216": {
            ("kubernetes.io/arch", "In", ("arm64",)), (gpu, "Exists", ())
        },
    }  # fmt: skip


def test_one_image_serving_several_variants_is_listed_once_per_variant(amis: AMICatalog) -> None:
    al2 = _resolve(amis, {"alias": "al2@latest"})
    gpu_entries = [a for a in al2 if (a.name or "").startswith("amazon-eks-gpu-node-1.30-")]
    assert len(gpu_entries) == 2
    assert len({a.id for a in gpu_entries}) == 1
    assert {r.key for a in gpu_entries for r in a.requirements if r.operator == "Exists"} == {
        "karpenter.k8s.aws/instance-gpu-count",
        "karpenter.k8s.aws/instance-accelerator-count",
    }
    bottlerocket = _resolve(amis, {"alias": "bottlerocket@latest"})
    assert len(bottlerocket) == 5  # x86_64 serves standard and neuron, plus arm64 and two nvidia


def test_pinned_alias_stays_and_latest_follows_a_publish(amis: AMICatalog) -> None:
    pinned = _resolve(amis, {"alias": "al2023@v20251202"})
    latest = _resolve(amis, {"alias": "al2023@latest"})
    assert all(name.endswith("-1.30-v20251202") for name in _names(pinned))
    assert all(name.endswith("-1.30-v20251216") for name in _names(latest))
    amis.publish("AL2023", created=datetime(2026, 1, 6, tzinfo=UTC))
    assert _resolve(amis, {"alias": "al2023@v20251202"}) == pinned
    assert all(
        name.endswith("-1.30-v20260106")
        for name in _names(_resolve(amis, {"alias": "al2023@latest"}))
    )


def test_a_kubernetes_upgrade_moves_a_versioned_alias_to_that_versions_images(
    amis: AMICatalog,
) -> None:
    on_130 = _resolve(amis, {"alias": "al2023@v20251202"}, k8s="1.30")
    on_131 = _resolve(amis, {"alias": "al2023@v20251202"}, k8s="1.31")
    assert {a.id for a in on_130}.isdisjoint({a.id for a in on_131})
    assert {n.replace("-1.30-", "-1.31-") for n in _names(on_130)} == _names(on_131)


def test_bottlerocket_pins_with_or_without_the_v(amis: AMICatalog) -> None:
    with_v = _resolve(amis, {"alias": "bottlerocket@v1.20.3"})
    assert all("-v1.20.3-" in name for name in _names(with_v))
    assert _resolve(amis, {"alias": "bottlerocket@1.20.3"}) == with_v


def test_windows_aliases_carry_the_os_and_build(amis: AMICatalog) -> None:
    (windows,) = _resolve(amis, {"alias": "windows2022@latest"})
    assert _reqs(windows) == {
        ("kubernetes.io/arch", "In", ("amd64",)),
        ("kubernetes.io/os", "In", ("windows",)),
        ("node.kubernetes.io/windows-build", "In", ("10.0.20348",)),
    }


@pytest.mark.parametrize(
    ("alias", "k8s", "message"),
    [
        ("al2@latest", "1.33", "AL2 aliases are no longer supported"),
        ("windows2025@latest", "1.34", "requires EKS 1.35"),
        ("al2023@v20200101", "1.30", "failed to discover any AMIs for alias al2023@v20200101"),
        ("al2023@latest", "1.29", "failed to discover"),
    ],
)
def test_aliases_that_resolve_nothing_say_why(
    amis: AMICatalog, alias: str, k8s: str, message: str
) -> None:
    with pytest.raises(AMIResolutionError, match=message):
        _resolve(amis, {"alias": alias}, k8s=k8s)


def test_id_terms_select_those_images_with_only_their_arch(amis: AMICatalog) -> None:
    target = next(a for a in amis if a.name == "amazon-eks-node-al2023-arm64-nvidia-1.31-v20251118")
    (resolved,) = _resolve(amis, {"id": target.id})
    assert resolved.id == target.id
    assert _reqs(resolved) == {("kubernetes.io/arch", "In", ("arm64",))}
    with pytest.raises(AMIResolutionError, match="did not match"):
        _resolve(amis, {"id": "ami-0000000000000000a"})


def test_name_wildcards_look_in_self_and_amazon_unless_an_owner_is_given() -> None:
    catalog = AMICatalog()
    mine = _custom(catalog, "team-node-v1")
    theirs = _custom(catalog, "team-node-v2", owner=OTHER_ACCOUNT, days=1)
    assert _names(_resolve(catalog, {"name": "team-node-*"})) == {mine.name}
    assert _names(_resolve(catalog, {"name": "team-node-v?", "owner": OTHER_ACCOUNT})) == {
        theirs.name
    }
    assert _names(_resolve(catalog, {"name": "*", "owner": "self"})) == {mine.name}
    eks = AMICatalog.eks_optimized(["1.30"], releases=1)
    assert (
        len(_resolve(eks, {"name": "amazon-eks-node-al2023-*-standard-1.30-*", "owner": "amazon"}))
        == 2
    )


def test_tags_match_values_and_a_star_means_the_key_exists() -> None:
    catalog = AMICatalog()
    tagged = _custom(catalog, "a", tags={"team": "payments", "karpenter.sh/discovery": "prod"})
    other = _custom(catalog, "b", arch="arm64", owner=OTHER_ACCOUNT, tags={"team": "search"})
    _custom(catalog, "c", arch="arm64", days=-1)
    assert _names(_resolve(catalog, {"tags": {"karpenter.sh/discovery": "*"}})) == {tagged.name}
    assert _names(_resolve(catalog, {"tags": {"team": "search"}})) == {other.name}
    assert _names(_resolve(catalog, {"tags": {"team": "*"}})) == {tagged.name, other.name}
    assert _names(
        _resolve(catalog, {"tags": {"team": "pay*", "karpenter.sh/discovery": "prod"}})
    ) == {tagged.name}
    with pytest.raises(AMIResolutionError):
        _resolve(catalog, {"tags": {"team": "payments", "karpenter.sh/discovery": "dev"}})


def test_the_newest_image_per_arch_wins_and_is_listed_first() -> None:
    catalog = AMICatalog()
    _custom(catalog, "node-amd-old", days=0)
    amd_new = _custom(catalog, "node-amd-new", days=10)
    arm_new = _custom(catalog, "node-arm", arch="arm64", days=5)
    _custom(catalog, "node-arm-older", arch="arm64", days=1)
    resolved = _resolve(catalog, {"name": "node-*"})
    assert [a.id for a in resolved] == [amd_new.id, arm_new.id]


def test_deprecated_images_lose_to_non_deprecated_ones_but_are_a_last_resort() -> None:
    catalog = AMICatalog()
    kept = _custom(catalog, "node-1", days=0)
    _custom(catalog, "node-2", days=30, deprecated=True)
    only = _custom(catalog, "node-arm", arch="arm64", days=3, deprecated=True)
    resolved = {a.id: a for a in _resolve(catalog, {"name": "node-*"})}
    assert set(resolved) == {kept.id, only.id}
    assert resolved[kept.id].deprecated is None
    assert resolved[only.id].deprecated is True


def test_ssm_parameters_resolve_through_the_catalog(amis: AMICatalog) -> None:
    custom = _custom(amis, "golden-image", arch="arm64")
    amis.put_parameter("/golden/latest", custom.id)
    amis.put_parameter("/broken", "not-an-ami")
    assert [a.id for a in _resolve(amis, {"ssmParameter": "/golden/latest"})] == [custom.id]
    public = (
        "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/nvidia/recommended/image_id"
    )
    (resolved,) = _resolve(amis, {"ssmParameter": public})
    assert resolved.name == "amazon-eks-node-al2023-x86_64-nvidia-1.31-v20251216"
    with pytest.raises(AMIResolutionError):
        _resolve(amis, {"ssmParameter": "/missing"}, {"ssmParameter": "/broken"})


def test_terms_are_ored(amis: AMICatalog) -> None:
    custom = _custom(amis, "golden-image", arch="arm64", days=400)
    eks = next(a for a in amis if a.name == "amazon-eks-node-al2023-x86_64-standard-1.30-v20251216")
    resolved = _resolve(amis, {"id": eks.id}, {"name": "golden-*"})
    assert {a.id for a in resolved} == {eks.id, custom.id}
