"""Prices of offerings: on-demand from the packaged list, spot from DescribeSpotPriceHistory.

On-demand prices are the packaged us-east-1 list (the AWS Pricing API is not called; in other
regions these prices are the us-east-1 ones, which ranks types in the same order). Spot prices
are the latest ``Linux/UNIX`` price per instance type and zone, read with
``DescribeSpotPriceHistory`` from the time of the call (AWS answers with the price in effect
then) and refreshed every hour, as Karpenter refreshes them. A failed refresh keeps the last
prices; a type and zone without a spot price has no spot offering. One caller refreshes at a time
(launches run on several threads); the others wait and read what it read.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta
from typing import Any

from agent.catalog.pricing import OnDemandPrices
from agent.clock import Clock, SystemClock
from agent.cloud.aws.errors import AWSError, aws_call
from agent.cloud.aws.session import AWSClients

LOG = logging.getLogger("driftwave.agent.aws")
SPOT_REFRESH = timedelta(hours=1)
PRODUCTS = ["Linux/UNIX", "Linux/UNIX (Amazon VPC)"]


class AWSPrices:
    """See the module docstring."""

    def __init__(
        self,
        clients: AWSClients,
        clock: Clock | None = None,
        on_demand: OnDemandPrices | None = None,
    ) -> None:
        self._clients = clients
        self._clock = clock if clock is not None else SystemClock()
        self._on_demand = on_demand if on_demand is not None else OnDemandPrices.packaged()
        self._spot: dict[tuple[str, str], float] = {}
        self._refreshed: datetime | None = None
        self._lock = threading.Lock()

    def on_demand(self, instance_type: str) -> float | None:
        """The hourly on-demand price (None when the list has none)."""
        return self._on_demand.price(instance_type)

    def spot(self, instance_type: str, zone: str) -> float | None:
        """The latest hourly spot price in ``zone`` (None when AWS reports none)."""
        self._refresh_if_due()
        return self._spot.get((instance_type, zone))

    def refresh(self) -> None:
        """Read the spot prices now; raises AWSError."""
        paginator = self._clients.ec2.get_paginator("describe_spot_price_history")
        pages = aws_call(
            "reading spot prices",
            lambda **kw: list(paginator.paginate(**kw)),
            ProductDescriptions=PRODUCTS,
            StartTime=self._clock.now(),
        )
        latest: dict[tuple[str, str], tuple[Any, float]] = {}
        for page in pages:
            for entry in page.get("SpotPriceHistory", []):
                key = (str(entry["InstanceType"]), str(entry["AvailabilityZone"]))
                stamp = entry.get("Timestamp")
                held = latest.get(key)
                if held is None or (stamp is not None and held[0] is not None and stamp > held[0]):
                    latest[key] = (stamp, float(entry["SpotPrice"]))
        self._spot = {key: price for key, (_, price) in latest.items()}
        self._refreshed = self._clock.now()

    def _refresh_if_due(self) -> None:
        with self._lock:
            self._refresh_unless_fresh()

    def _refresh_unless_fresh(self) -> None:
        now = self._clock.now()
        if self._refreshed is not None and now - self._refreshed < SPOT_REFRESH:
            return
        try:
            self.refresh()
        except AWSError as exc:
            self._refreshed = now  # try again in an hour; keep the last prices meanwhile
            LOG.warning("spot prices not refreshed (keeping the last ones): %s", exc)
