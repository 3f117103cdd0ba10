"""The agent's cloud: the ``CloudProvider`` port, its typed errors, and what adapters share.

``port`` defines the contract controllers program against; ``unavailable`` is the
unavailable-offerings (ICE) cache; ``launch`` and ``amirules`` hold the launch and image choices
every adapter makes the same way. Adapters live in subpackages: ``simulated`` now, ``aws`` later
(the only place boto3 may be imported).
"""

from agent.cloud.port import (
    CloudError,
    CloudProvider,
    InstanceTypeOfferings,
    InsufficientCapacity,
    LaunchFailed,
    NodeClaimNotFound,
    NodeClassNotReady,
    OfferingKey,
)
from agent.cloud.unavailable import DEFAULT_TTL, UnavailableOfferings

__all__ = [
    "DEFAULT_TTL",
    "CloudError",
    "CloudProvider",
    "InstanceTypeOfferings",
    "InsufficientCapacity",
    "LaunchFailed",
    "NodeClaimNotFound",
    "NodeClassNotReady",
    "OfferingKey",
    "UnavailableOfferings",
]
