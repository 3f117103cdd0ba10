"""Fixtures of the AWS adapter's tests: moto's server on loopback and a proxy in front of it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.awsproxy import AWSProxy, aws_proxy
from tests.support.motoserver import moto_server


@pytest.fixture
def moto_proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, AWSProxy]]:
    """moto's URL and a started proxy in front of it, with test credentials in the environment."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with moto_server() as url, aws_proxy(url) as proxy:
        yield url, proxy
