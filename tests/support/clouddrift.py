"""The cloud's part of drift for tests: the port's ``is_drifted`` as every adapter answers it
(:func:`agent.cloud.drift.provider_drift`), over an instance described as a test says."""

from __future__ import annotations

from collections.abc import Iterable

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclaim import NodeClaim
from agent.cloud.drift import LaunchedInstance, provider_drift
from agent.cloud.port import DriftReason
from agent.lifecycle.drift import IsDrifted


def cloud_describing(
    subnet: str | None = None,
    groups: Iterable[str] | None = None,
    reservation: str | None = None,
) -> IsDrifted:
    """``is_drifted`` of a cloud whose instances run in ``subnet`` with ``groups`` and
    ``reservation`` (None: the cloud cannot tell)."""
    instance = LaunchedInstance(subnet, None if groups is None else tuple(groups), reservation)

    def is_drifted(claim: NodeClaim, nodeclass: EC2NodeClass) -> DriftReason | None:
        return provider_drift(claim, nodeclass, lambda _: instance)

    return is_drifted


UNDESCRIBED = cloud_describing()
"""A cloud that cannot describe its instances: only the image check can find its drift."""
