"""Identifiers of rollouts, waves and steps.

A step's id is also the id the cluster's agent knows the wave by, so it must be a DNS label
(lower-case alphanumerics and ``-``, at most 63 characters): ``ROLLOUT-wSEQ-CLUSTER``, with a
long cluster name shortened and made unique by a hash.
"""

from __future__ import annotations

import hashlib
import secrets
import string

_ALPHABET = string.ascii_lowercase + string.digits
MAX_ID = 63


def rollout_id() -> str:
    """A fresh rollout id such as ``ro-k2p9xq4m``."""
    return "ro-" + "".join(secrets.choice(_ALPHABET) for _ in range(8))


def wave_id(rollout: str, seq: int) -> str:
    """The id of the ``seq``-th wave (from 0) of a rollout."""
    return f"{rollout}-w{seq + 1}"


def step_id(rollout: str, seq: int, cluster: str) -> str:
    """The id of a cluster's step in a wave: a DNS label, unique per (rollout, wave, cluster)."""
    base = f"{wave_id(rollout, seq)}-"
    name = cluster.lower()
    if len(base) + len(name) > MAX_ID:
        digest = hashlib.sha256(cluster.encode()).hexdigest()[:8]
        keep = MAX_ID - len(base) - len(digest) - 1
        name = f"{name[:keep].rstrip('-')}-{digest}"
    return base + name
