"""The default simulated fleet member (agent.sim.member): its shape, its faults, its limits."""

from __future__ import annotations

from collections import Counter

import pytest

from agent.api.conditions import is_true
from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.kube import Pod
from agent.api.nodeclaim import NodeClaim
from agent.sim.member import MemberError, member_world, replicas


def test_a_member_runs_about_the_nodes_asked_every_pod_placed() -> None:
    world = member_world("m", nodes=30)
    claims = world.cluster.list(NodeClaim)
    pools = Counter(c.metadata.labels["karpenter.sh/nodepool"] for c in claims)
    assert pools == {"general": 21, "batch": 9}
    assert all(is_true(c, "Initialized") for c in claims)
    assert all(p.spec.node_name for p in world.cluster.list(Pod))
    (nodeclass,) = world.cluster.list(EC2NodeClass)
    assert [t.alias for t in nodeclass.spec.ami_selector_terms] == ["al2023@v20251202"]
    images = {world.amis.get(c.status.image_id or "") for c in claims}
    assert {(i.family, i.version, i.kubernetes_version) for i in images} == {
        ("AL2023", "v20251202", "1.30")
    }


def test_replicas_scale_with_the_nodes() -> None:
    assert replicas(200) == {"web": 840, "api": 560, "batch": 600}
    assert sum(replicas(7).values()) == 70


def test_settings_pick_the_version_release_and_faulty_releases() -> None:
    world = member_world(
        "m", nodes=1, kubernetes_version="1.31", ami_release="v20251118",
        faulty_releases=("v20251216", "v20251202"),
    )  # fmt: skip
    (claim,) = world.cluster.list(NodeClaim)
    image = world.amis.get(claim.status.image_id or "")
    assert (image.version, image.kubernetes_version, image.faulty) == ("v20251118", "1.31", False)
    faulty = {(a.version, a.faulty) for a in world.amis if a.family == "AL2023"}
    assert ("v20251216", True) in faulty
    assert ("v20251216", False) not in faulty
    assert ("v20251118", False) in faulty


def test_an_empty_member_has_no_nodes() -> None:
    assert member_world("empty", nodes=0).cluster.list(NodeClaim) == []


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        ({"ami_release": "v20240101"}, "amiRelease: 'v20240101' is not an AL2023 release"),
        ({"faulty_releases": ("latest",)}, "faultyReleases[0]: 'latest'"),
        ({"faulty_releases": ("v20251202",)}, "amiRelease: v20251202 is also faulty"),
        ({"kubernetes_version": "1.99"}, "kubernetesVersion: '1.99' is not simulated"),
        ({"nodes": -1}, "nodes: -1 is out of range"),
    ],
)
def test_bad_settings_name_the_setting(settings: dict[str, object], words: str) -> None:
    with pytest.raises(MemberError) as caught:
        member_world("m", **settings)  # type: ignore[arg-type]
    assert words in str(caught.value)


def test_a_bad_name_is_refused() -> None:
    with pytest.raises(MemberError, match="name: 'Bad_Name' must be a DNS subdomain"):
        member_world("Bad_Name")
