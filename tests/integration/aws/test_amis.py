"""AMI resolution through EC2 DescribeImages and SSM GetParameter, against moto's server:
aliases (latest and pinned) through the SSM paths AWS publishes, ids, names with wildcards and
owners, tags, ssmParameter terms, newest non-deprecated wins, the 24-hour alias cache and its
invalidation when the image is deprecated (deprecation added by the proxy: moto lacks it)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from agent.api.ec2nodeclass import EC2NodeClass
from agent.clock import VirtualClock
from agent.cloud.amiresolve import AMIResolutionError
from agent.cloud.aws.amis import AWSImages
from agent.cloud.aws.session import AWSClients, AWSConfig
from common.kubemodel import parse_manifest
from tests.support.awsproxy import AWSProxy
from tests.support.awsseed import add_image, deprecate, publish_parameter

REGION = "us-east-1"
NOW = datetime(2026, 1, 10, tzinfo=UTC)
AL2023 = "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023"


@dataclass
class Env:
    proxy: AWSProxy
    clock: VirtualClock
    images: AWSImages


@pytest.fixture
def env(moto_proxy: tuple[str, AWSProxy]) -> Env:
    _url, proxy = moto_proxy
    clock = VirtualClock(NOW)
    clients = AWSClients(AWSConfig(region=REGION, endpoint_url=proxy.url))
    return Env(proxy, clock, AWSImages(clients, clock))


def nodeclass(*terms: dict[str, object]) -> EC2NodeClass:
    family = {} if any("alias" in t for t in terms) else {"amiFamily": "AL2023"}
    return parse_manifest(
        EC2NodeClass,
        {
            "apiVersion": "karpenter.k8s.aws/v1",
            "kind": "EC2NodeClass",
            "metadata": {"name": "default"},
            "spec": {
                "role": "KarpenterNodeRole",
                **family,
                "amiSelectorTerms": list(terms),
                "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "c"}}],
                "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "c"}}],
            },
        },
    )


def al2023_release(version: str, created: datetime) -> dict[str, str]:
    """Publish one AL2023 release for 1.31 (x86_64 and arm64 standard); ids by arch."""
    ids = {}
    for arch in ("x86_64", "arm64"):
        name = f"amazon-eks-node-al2023-{arch}-standard-1.31-{version}"
        ids[arch] = add_image(REGION, name, arch=arch, created=created)
        publish_parameter(REGION, f"{AL2023}/{arch}/standard/{name}/image_id", ids[arch])
        publish_parameter(REGION, f"{AL2023}/{arch}/standard/recommended/image_id", ids[arch])
    return ids


def test_alias_latest_and_pinned(env: Env) -> None:
    old = al2023_release("v20251202", NOW - timedelta(days=30))
    new = al2023_release("v20251216", NOW - timedelta(days=14))
    latest = env.images.resolve(nodeclass({"alias": "al2023@latest"}), "1.31")
    assert sorted(a.id for a in latest) == sorted(new.values())
    arches = {
        a.id: r.values for a in latest for r in a.requirements if r.key == "kubernetes.io/arch"
    }
    assert arches == {new["x86_64"]: ["amd64"], new["arm64"]: ["arm64"]}
    pinned = env.images.resolve(nodeclass({"alias": "al2023@v20251202"}), "1.31")
    assert sorted(a.id for a in pinned) == sorted(old.values())
    gets = [
        r
        for r in env.proxy.requests
        if r.path == "/" and "AmazonSSM.GetParameter" in str(r.headers)
    ]
    assert gets, "aliases are read through SSM GetParameter"
    with pytest.raises(AMIResolutionError, match="al2023@v20990101"):
        env.images.resolve(nodeclass({"alias": "al2023@v20990101"}), "1.31")


def test_bottlerocket_alias_reads_its_own_paths(env: Env) -> None:
    image = add_image(REGION, "bottlerocket-aws-k8s-1.31-x86_64-v1.26.1-943d9a41", created=NOW)
    publish_parameter(
        REGION, "/aws/service/bottlerocket/aws-k8s-1.31/x86_64/1.26.1/image_id", image
    )
    publish_parameter(
        REGION, "/aws/service/bottlerocket/aws-k8s-1.31/x86_64/latest/image_id", image
    )
    for alias in ("bottlerocket@latest", "bottlerocket@v1.26.1", "bottlerocket@1.26.1"):
        assert [a.id for a in env.images.resolve(nodeclass({"alias": alias}), "1.31")] == [
            image,
            image,
        ]
        # the x86_64 Bottlerocket image serves standard and neuron instance types


def test_id_name_owner_tags_and_ssm_parameter_terms(env: Env) -> None:
    mine_old = add_image(
        REGION,
        "team-base-2025-11",
        amazon=False,
        created=NOW - timedelta(days=40),
        tags={"team": "web"},
    )
    mine_new = add_image(
        REGION,
        "team-base-2025-12",
        amazon=False,
        created=NOW - timedelta(days=9),
        tags={"team": "web", "tier": "gold"},
    )
    amazons = add_image(REGION, "team-base-2025-13", amazon=True, created=NOW)
    other = add_image(REGION, "unrelated", amazon=False, created=NOW)

    by_id = env.images.resolve(nodeclass({"id": other}), "1.31")
    assert [a.id for a in by_id] == [other]
    by_name = env.images.resolve(nodeclass({"name": "team-base-*"}), "1.31")
    assert [a.id for a in by_name] == [amazons], "self and amazon by default; the newest wins"
    by_owner = env.images.resolve(nodeclass({"name": "team-base-*", "owner": "self"}), "1.31")
    assert [a.id for a in by_owner] == [mine_new]
    by_tag = env.images.resolve(nodeclass({"tags": {"tier": "*"}}), "1.31")
    assert [a.id for a in by_tag] == [mine_new]
    by_tag_value = env.images.resolve(nodeclass({"tags": {"team": "web"}}), "1.31")
    assert [a.id for a in by_tag_value] == [mine_new]
    assert mine_old != mine_new

    env.images._clients.ssm.put_parameter(Name="/team/base", Value=mine_old, Type="String")
    by_param = env.images.resolve(nodeclass({"ssmParameter": "/team/base"}), "1.31")
    assert [a.id for a in by_param] == [mine_old]
    with pytest.raises(AMIResolutionError, match="did not match"):
        env.images.resolve(nodeclass({"ssmParameter": "/team/missing"}), "1.31")
    with pytest.raises(AMIResolutionError, match="did not match"):
        env.images.resolve(nodeclass({"id": "ami-0000000000000000f"}), "1.31")


def test_newest_non_deprecated_wins(env: Env) -> None:
    older = add_image(REGION, "base-a", amazon=False, created=NOW - timedelta(days=20))
    newer = add_image(REGION, "base-b", amazon=False, created=NOW - timedelta(days=2))
    deprecate(env.proxy, {newer: NOW - timedelta(hours=1)})
    chosen = env.images.resolve(nodeclass({"name": "base-*"}), "1.31")
    assert [(a.id, a.deprecated) for a in chosen] == [(older, None)]
    alone = env.images.resolve(nodeclass({"id": newer}), "1.31")
    assert [(a.id, a.deprecated) for a in alone] == [(newer, True)], (
        "used when nothing else covers it"
    )


def test_alias_cache_lasts_a_day_and_ends_when_the_image_is_deprecated(env: Env) -> None:
    first = al2023_release("v20251202", NOW - timedelta(days=30))
    term = nodeclass({"alias": "al2023@latest"})
    assert sorted(a.id for a in env.images.resolve(term, "1.31")) == sorted(first.values())
    second = al2023_release("v20251216", NOW - timedelta(days=1))
    cached = env.images.resolve(term, "1.31")
    assert sorted(a.id for a in cached) == sorted(first.values()), "the alias is cached"
    env.clock.advance(timedelta(hours=25))
    refreshed = env.images.resolve(term, "1.31")
    assert sorted(a.id for a in refreshed) == sorted(second.values()), "read again after 24 h"

    third = al2023_release("v20251230", NOW)
    env.clock.advance(timedelta(hours=1))
    deprecate(env.proxy, {second["x86_64"]: NOW, second["arm64"]: NOW})
    env.images.resolve(term, "1.31")  # sees the deprecation
    moved = env.images.resolve(term, "1.31")
    assert sorted(a.id for a in moved) == sorted(third.values()), "a deprecation ends the cache"


def test_self_is_the_callers_account(env: Env) -> None:
    assert env.images.account_id == "123456789012"
    assert [r.action for r in env.proxy.requests].count("GetCallerIdentity") == 1
    assert env.images.account_id == "123456789012"
    assert [r.action for r in env.proxy.requests].count("GetCallerIdentity") == 1, "read once"
