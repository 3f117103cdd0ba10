"""Bearer tokens: hashing, the hash format, and the check."""

from __future__ import annotations

import hashlib

import pytest

from common.auth import AuthConfigError, BearerCheck, check_hashes, hash_token


def test_a_token_hash_is_sha256_hex_of_the_stripped_token() -> None:
    expected = "sha256:" + hashlib.sha256(b"s3cret").hexdigest()
    assert hash_token("s3cret\n") == expected
    with pytest.raises(AuthConfigError, match="empty"):
        hash_token("  \n")


def test_only_sha256_hashes_are_accepted() -> None:
    good = hash_token("a")
    assert check_hashes([good]) == {good}
    for bad in ("sha256:" + "A" * 64, "sha256:abc", "sha512:" + "a" * 64, "s3cret"):
        with pytest.raises(AuthConfigError, match=r"sha256:<64 lowercase hex digits>"):
            check_hashes([bad])


@pytest.mark.parametrize(
    ("header", "accepted"),
    [
        ("Bearer one", True),
        ("bearer two", True),
        ("Bearer three", False),
        ("Bearer ", False),
        ("Basic one", False),
        ("one", False),
        ("", False),
        (None, False),
    ],
)
def test_the_check_accepts_known_tokens_only(header: str | None, accepted: bool) -> None:
    check = BearerCheck({hash_token("one"), hash_token("two")})
    assert check(header) is accepted
