"""Loopback: names and addresses of this machine only."""

from __future__ import annotations

import pytest

from common.addresses import is_loopback, is_loopback_url


@pytest.mark.parametrize(
    "host", ["localhost", "LOCALHOST", "127.0.0.1", "127.8.9.1", "::1", "[::1]"]
)
def test_loopback_hosts(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize(
    "host", ["0.0.0.0", "10.0.0.1", "::", "api.example.com", "localhost.example.com", ""]
)
def test_other_hosts(host: str) -> None:
    assert not is_loopback(host)


def test_urls() -> None:
    assert is_loopback_url("http://127.0.0.1:8080/v1")
    assert is_loopback_url("http://[::1]:9100")
    assert not is_loopback_url("http://agent.prod.example.com:9100")
    assert not is_loopback_url("not a url")
