"""A fleet for the dashboard's browser tests: four rings whose promotion order (canary, dev,
staging, prod) is neither alphabetical nor the order the clusters were first stored in, rollouts
that ended in every way that matters (two halted, one succeeded) and one live, and a Fleet
change (a maintenance window added, later removed) for the Fleet's audit trail.

Everything runs on :class:`~tests.support.fleetsim.FleetHarness`'s virtual clock; the clock is
set a little before the real time first (the history takes about 14 minutes of it), so what a
browser shows as "2m10s ago" reads sensibly.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from common.kubemodel import parse_manifest
from fleet.domain.fleet import Fleet
from fleet.domain.release import Release
from fleet.gateway import InProcessAgentGateway
from fleet.service.commands.fleets import apply_fleet
from fleet.service.commands.rollouts import start_rollout
from fleet.service.contact.probes import ContactProber
from fleet.service.ports import ProbeMessage
from tests.support.fleetsim import FleetHarness, fleet_manifest

PROMOTION = ["canary", "dev", "staging", "prod"]
CLUSTERS = {"canary": ["can-1"], "dev": ["dev-1"], "staging": ["stg-1"], "prod": ["prod-1"]}
STORED = dict(sorted(CLUSTERS.items()))
"""The rings alphabetically: the order the clusters are first stored in."""
FAULTY = ("v20251104", "v20251118", "v20251007")
"""Releases whose nodes never become ready in the simulated clusters."""
LEAD = timedelta(minutes=20)
"""How far before the real time the fleet's clock starts."""
WINDOW = {"schedule": "0 22 * * *", "duration": "2h", "timeZone": "Europe/Berlin"}
"""The maintenance window stg-1 has, then loses."""


def fleet_doc(*, window: bool) -> dict[str, Any]:
    """The Fleet in promotion order, with stg-1's maintenance window when ``window``."""
    manifest = fleet_manifest({ring: CLUSTERS[ring] for ring in PROMOTION})
    if window:
        for cluster in manifest["spec"]["clusters"]:
            if cluster["name"] == "stg-1":
                cluster["maintenanceWindows"] = [dict(WINDOW)]
    return manifest


def four_rings(tmp: Path) -> FleetHarness:
    """The harness: clusters stored in alphabetical ring order, then the Fleet applied in
    promotion order; the clock set :data:`LEAD` before the real time."""
    harness = FleetHarness(tmp, STORED, nodes=4, faulty=FAULTY)
    harness.now = datetime.now(UTC).replace(microsecond=0) - LEAD
    apply_fleet(harness.ctx, parse_manifest(Fleet, fleet_doc(window=False)), "admin")
    return harness


def add_window(harness: FleetHarness) -> None:
    """Apply the Fleet again with stg-1's maintenance window (as admin)."""
    manifest = parse_manifest(Fleet, fleet_doc(window=True))
    apply_fleet(harness.ctx, manifest, "admin", "stg-1 only changes at night")


def release_doc(version: str, ring: str, **strategy: Any) -> dict[str, Any]:
    """A Release pinning AL2023 ``version`` on ring ``ring`` alone (``strategy``: the ring's
    settings, e.g. ``soak``, ``onFailure``)."""
    return {
        "apiVersion": "driftwave.io/v1alpha1",
        "kind": "Release",
        "metadata": {"name": f"al2023-{version}"},
        "spec": {
            "fleet": "demo",
            "target": {
                "amiSelectorTerms": [{"alias": f"al2023@{version}"}],
                "nodeClasses": {"names": ["default"]},
            },
            "strategy": {"rings": [{"name": ring, **strategy}]},
        },
    }


def start(harness: FleetHarness, version: str, ring: str, **strategy: Any) -> str:
    """Start a rollout of ``release_doc(version, ring, **strategy)`` as otto; its id."""
    release = parse_manifest(Release, release_doc(version, ring, **strategy))
    return str(start_rollout(harness.ctx, release, "otto").id)


def state(harness: FleetHarness, rid: str) -> str:
    """The rollout's state in the database."""
    with harness.ctx.reading() as uow:
        return str(uow.rollouts.get(rid).state)


def history(harness: FleetHarness) -> dict[str, str]:
    """Two halted rollouts (faulty images on canary and dev, ``onFailure: halt``) and one
    succeeded (staging), run to their end together; then one rolled back (canary again, whose
    gate fails: ``onFailure: rollback``); then one live on prod, soaking for 30 minutes.
    Their ids by name: halted1, halted2, succeeded, rolledback, live."""
    quick = {"convergenceTimeout": "10m"}
    ids = {
        "halted1": start(harness, FAULTY[0], "canary", soak="1m", onFailure="halt", gates=quick),
        "halted2": start(harness, FAULTY[1], "dev", soak="1m", onFailure="halt", gates=quick),
        "succeeded": start(harness, "v20251216", "staging", soak="1m"),
    }
    ended = {"halted1": "halted", "halted2": "halted", "succeeded": "succeeded"}
    harness.run_until(
        lambda: all(state(harness, ids[k]) == v for k, v in ended.items()),
        limit=timedelta(hours=2),
    )
    ids["rolledback"] = start(harness, FAULTY[2], "canary", soak="1m", gates=quick)
    harness.run_until(
        lambda: state(harness, ids["rolledback"]) == "rolled-back", limit=timedelta(hours=2)
    )
    ids["live"] = start(harness, "v20251021", "prod", soak="30m")
    harness.run_until(lambda: state(harness, ids["live"]) == "soaking", limit=timedelta(hours=1))
    return ids


def contact_all(harness: FleetHarness) -> None:
    """Probe every cluster's agent now, as a worker runs the scheduler's contact probes."""
    with harness.ctx.reading() as uow:
        ids = tuple(c.id for c in uow.clusters.list("demo"))
    ContactProber(harness.ctx, InProcessAgentGateway(harness.agents)).probe(ProbeMessage(ids))


_PART = re.compile(r"(\d+)\s*(d|h|m|s)")
_UNIT = {"d": 86400, "h": 3600, "m": 60, "s": 1}


def seconds_in(text: str) -> int:
    """The seconds of the first duration after "in " in ``text`` ("soak ends in 4m12s": 252)."""
    found = re.search(r"in ((?:\d+\s*[dhms])+)", text)
    if found is None:
        raise AssertionError(f"no countdown in {text!r}")
    return sum(int(n) * _UNIT[u] for n, u in _PART.findall(found.group(1)))
