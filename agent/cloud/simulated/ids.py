"""Deterministic identifiers of the simulated cloud: BLAKE2b digests of a seed and a name.

Never Python's salted ``hash()``: the same seed gives the same ids on every machine and run.
"""

from __future__ import annotations

import hashlib


def digest(*parts: object) -> str:
    """32 hex digits identifying ``parts`` (joined with ``:``)."""
    text = ":".join(str(part) for part in parts)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def instance_id(seed: int | str, count: int) -> str:
    """The id of the ``count``-th instance launched: ``i-`` and 17 hex digits."""
    return "i-" + digest(seed, "instance", count)[:17]


def private_ip(seed: int | str, count: int, attempt: int = 0) -> str:
    """A private IP in 10.0.0.0/16 for the ``count``-th instance (``attempt`` re-draws)."""
    raw = bytes.fromhex(digest(seed, "ip", count, attempt))
    return f"10.0.{raw[0]}.{1 + raw[1] % 254}"


def ami_id(seed: int | str, name: str) -> str:
    """The id of the image called ``name``: ``ami-`` and 17 hex digits."""
    return "ami-" + digest(seed, name)[:17]
