"""The agent's IAM policy and the fleet's cross-account role (CloudFormation): every action the
agent's code calls is allowed, nothing else is, and every mutating action is scoped by a
condition or a resource ARN, as Karpenter's controller policy is."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[3]
IAM = ROOT / "deploy" / "iam"
CALLED = {
    # EC2: images, network, instance types, prices, launch, describe, terminate
    "ec2:DescribeImages", "ec2:DescribeSubnets", "ec2:DescribeSecurityGroups",
    "ec2:DescribeInstanceTypes", "ec2:DescribeInstanceTypeOfferings",
    "ec2:DescribeSpotPriceHistory", "ec2:DescribeAvailabilityZones", "ec2:DescribeInstances",
    "ec2:DescribeLaunchTemplates", "ec2:CreateLaunchTemplate", "ec2:DeleteLaunchTemplate",
    "ec2:CreateFleet", "ec2:RunInstances", "ec2:CreateTags", "ec2:TerminateInstances",
    "iam:PassRole", "ssm:GetParameter",
    "eks:DescribeCluster", "eks:UpdateClusterVersion", "eks:DescribeUpdate",
    "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueUrl",
}  # fmt: skip
READ_ONLY = re.compile(r"^[a-z0-9]+:(Describe|Get|List|Receive)")


def statements(path: Path, resource: str) -> list[dict[str, Any]]:
    template = yaml.safe_load(path.read_text())
    properties = template["Resources"][resource]["Properties"]
    document = properties.get("PolicyDocument") or properties["Policies"][0]["PolicyDocument"]
    found: list[dict[str, Any]] = document["Statement"]
    return found


def actions(statement: dict[str, Any]) -> list[str]:
    value = statement["Action"]
    return [value] if isinstance(value, str) else list(value)


def test_the_agent_policy_allows_exactly_what_the_agent_calls() -> None:
    policy = statements(IAM / "agent-iam.yaml", "AgentPolicy")
    allowed = {a for s in policy if s["Effect"] == "Allow" for a in actions(s)}
    assert allowed == CALLED
    for statement in policy:
        mutating = [a for a in actions(statement) if not READ_ONLY.match(a)]
        if mutating:
            scoped = "Condition" in statement or statement["Resource"] != "*"
            assert scoped, f"{statement.get('Sid')}: {mutating} on every resource"
    terminate = next(s for s in policy if "ec2:TerminateInstances" in actions(s))
    assert "aws:ResourceTag/eks:eks-cluster-name" in terminate["Condition"]["StringEquals"]


def test_the_interruption_rules_feed_the_queue() -> None:
    template = yaml.safe_load((IAM / "agent-iam.yaml").read_text())
    rules = [r for r in template["Resources"].values() if r["Type"] == "AWS::Events::Rule"]
    kinds = {k for r in rules for k in r["Properties"]["EventPattern"]["detail-type"]}
    assert kinds == {
        "EC2 Spot Instance Interruption Warning",
        "EC2 Instance Rebalance Recommendation",
        "AWS Health Event",
        "EC2 Instance State-change Notification",
    }


def test_the_fleet_role_needs_the_external_id_and_reads_only_tokens() -> None:
    template = yaml.safe_load((IAM / "fleet-cross-account-role.yaml").read_text())
    role = template["Resources"]["FleetRole"]["Properties"]
    trust = role["AssumeRolePolicyDocument"]["Statement"][0]
    assert trust["Condition"]["StringEquals"]["sts:ExternalId"] == {"Ref": "ExternalId"}
    policy = statements(IAM / "fleet-cross-account-role.yaml", "FleetRole")
    assert [a for s in policy for a in actions(s)] == ["secretsmanager:GetSecretValue"]
