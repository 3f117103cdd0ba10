"""The fleet's ``secretsmanager:`` credentials: the token read from moto's Secrets Manager through
the member account's role (STS AssumeRole with ExternalId), the role's credentials cached until
five minutes before they expire, values kept five minutes, and a refused AssumeRole reported
as a credentials error naming the cluster."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import boto3
import pytest

from agent.clock import VirtualClock
from agent.cloud.aws.secrets import SecretReader
from agent.cloud.aws.session import AWSClients, AWSConfig
from fleet.credentials import AccountAccess, CredentialsError, TokenResolver
from tests.support.awsproxy import AWSProxy, xml_error

REGION = "eu-west-1"
ROLE = AccountAccess("arn:aws:iam::123456789012:role/driftwave-fleet", "fleet-7f3a")


@dataclass
class Env:
    proxy: AWSProxy
    clock: VirtualClock
    resolve: TokenResolver
    arn: str


@pytest.fixture
def env(moto_proxy: tuple[str, AWSProxy]) -> Env:
    url, proxy = moto_proxy
    secrets = boto3.client("secretsmanager", region_name=REGION, endpoint_url=url)
    arn = secrets.create_secret(Name="driftwave/prod-1", SecretString="s3cret-token\n")["ARN"]
    clock = VirtualClock(datetime.now(UTC))
    base = AWSClients(AWSConfig(region="us-east-1", endpoint_url=proxy.url))
    return Env(proxy, clock, TokenResolver(SecretReader(base, clock)), arn)


def calls(proxy: AWSProxy) -> Counter[str]:
    return Counter(r.action for r in proxy.requests)


def test_the_token_is_read_as_the_accounts_role(env: Env) -> None:
    token = env.resolve(f"secretsmanager:{env.arn}", "prod-1", ROLE)
    assert token == "s3cret-token"
    assume = next(r for r in env.proxy.requests if r.action == "AssumeRole").form()
    assert assume["RoleArn"] == [ROLE.role_arn]
    assert assume["ExternalId"] == ["fleet-7f3a"]
    secret = next(r for r in env.proxy.requests if r.action == "GetSecretValue")
    assert "AKIA" not in secret.headers.get("Authorization", "") or "eu-west-1" in str(
        secret.headers
    )

    env.resolve(f"secretsmanager:{env.arn}", "prod-1", ROLE)
    assert calls(env.proxy)["AssumeRole"] == 1
    assert calls(env.proxy)["GetSecretValue"] == 1, "kept five minutes"
    env.clock.advance(timedelta(minutes=6))
    env.resolve(f"secretsmanager:{env.arn}", "prod-1", ROLE)
    assert calls(env.proxy)["GetSecretValue"] == 2
    assert calls(env.proxy)["AssumeRole"] == 1, "the role's credentials last an hour"
    env.clock.advance(timedelta(minutes=50))
    env.resolve(f"secretsmanager:{env.arn}", "prod-1", ROLE)
    assert calls(env.proxy)["AssumeRole"] == 2, "assumed again five minutes before expiry"


def test_a_refused_role_or_a_missing_secret_is_a_credentials_error(env: Env) -> None:
    env.proxy.intercept(
        lambda r: r.action == "AssumeRole",
        lambda _: xml_error(403, "AccessDenied", "not authorized to perform sts:AssumeRole"),
    )
    with pytest.raises(CredentialsError, match=r"cluster prod-1: .*AccessDenied"):
        env.resolve(f"secretsmanager:{env.arn}", "prod-1", ROLE)
    missing = env.arn.replace("driftwave/prod-1", "driftwave/none")
    with pytest.raises(CredentialsError, match="ResourceNotFoundException"):
        env.resolve(f"secretsmanager:{missing}", "prod-1", None)
    with pytest.raises(CredentialsError, match="not a Secrets Manager ARN"):
        env.resolve("secretsmanager:driftwave/prod-1", "prod-1", None)
