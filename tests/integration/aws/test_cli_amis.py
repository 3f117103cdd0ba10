"""``driftwave agent amis`` as a user runs it: a process with AWS_ENDPOINT_URL pointing at moto's
server (seeded in this process), its output, JSON and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest

from tests.support.awsseed import add_image, publish_parameter
from tests.support.motoserver import moto_server

REGION = "us-east-1"
NOW = datetime.now(UTC)
PATH = "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard"
NODECLASS = """
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: prod-1}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: prod-1}}]
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: custom}
spec:
  role: KarpenterNodeRole
  amiFamily: AL2023
  amiSelectorTerms: [{name: "team-*", owner: self}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: prod-1}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: prod-1}}]
"""


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": REGION,
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with moto_server() as url:
        yield {**env, "AWS_ENDPOINT_URL": url}


def amis(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "driftwave", "agent", "amis", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_prints_what_each_node_class_selects_and_why(aws: dict[str, str], tmp_path: Path) -> None:
    latest = add_image(REGION, "amazon-eks-node-al2023-x86_64-standard-1.31-v20251216", created=NOW)
    publish_parameter(REGION, f"{PATH}/recommended/image_id", latest)
    old = add_image(REGION, "team-a", amazon=False, created=NOW - timedelta(days=9))
    new = add_image(REGION, "team-b", amazon=False, created=NOW - timedelta(days=1))
    boto3.client("eks", region_name=REGION, endpoint_url=aws["AWS_ENDPOINT_URL"]).create_cluster(
        name="prod-1",
        version="1.31",
        roleArn="arn:aws:iam::123456789012:role/eks",
        resourcesVpcConfig={"subnetIds": []},
    )
    manifest = tmp_path / "nodeclass.yaml"
    manifest.write_text(NODECLASS)

    shown = amis(aws, str(manifest), "--cluster-name", "prod-1")
    assert shown.returncode == 0, shown.stderr
    assert "Kubernetes 1.31" in shown.stdout, "the version comes from EKS DescribeCluster"
    assert f"* {latest}" in shown.stdout
    assert f"{PATH}/recommended/image_id" in shown.stdout

    result = amis(aws, str(manifest), "--kubernetes-version", "1.31", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    custom = next(nc for nc in data["nodeClasses"] if nc["name"] == "custom")
    chosen = {i["id"]: i["chosen"] for i in custom["images"]}
    assert chosen == {new: True, old: False}
    passed = next(i for i in custom["images"] if i["id"] == old)
    assert "a newer image covers the same requirements" in passed["why"]
    assert "amiSelectorTerms[0] name team-* owner self" in passed["why"]


def test_errors_name_the_field_or_the_missing_input(aws: dict[str, str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(NODECLASS.replace("al2023@latest", "ubuntu@latest"))
    refused = amis(aws, str(bad), "--kubernetes-version", "1.31")
    assert refused.returncode == 1
    assert "spec.amiSelectorTerms[0].alias" in refused.stderr

    good = tmp_path / "good.yaml"
    good.write_text(NODECLASS)
    no_version = amis({k: v for k, v in aws.items() if k != "DRIFTWAVE_CLUSTER_NAME"}, str(good))
    assert no_version.returncode == 1
    assert "--kubernetes-version" in no_version.stderr

    nothing = amis(aws, str(good), "--kubernetes-version", "1.31")
    assert nothing.returncode == 1, "a node class that selects nothing fails the command"
    assert "failed to discover any AMIs for alias al2023@latest" in nothing.stdout
