"""The seed walkthrough's material (``driftwave agent walkthrough``): the packaged v1beta1 seed
examples, and what a NodePool may launch from the EC2 catalog, cheapest offering first.

Requirements are matched label by label against the catalog; pod scheduling and bin-packing are
not part of the walkthrough. The command line prints it (``driftwave.cli.walkthrough``).
"""

from __future__ import annotations

from importlib import resources

from agent.api.nodepool import NodePool
from agent.api.requirements import requirement_allows
from agent.catalog import Catalog, InstanceType, Offering

OFFERING_KEYS = frozenset({"topology.kubernetes.io/zone", "karpenter.sh/capacity-type"})


def seed_files() -> list[tuple[str, str]]:
    """(name, text) of every packaged v1beta1 seed example, in name order."""
    folder = resources.files("agent").joinpath("examples", "v1beta1")
    files = sorted((p for p in folder.iterdir() if p.name.endswith(".yaml")), key=str)
    return [(f"examples/v1beta1/{p.name}", p.read_text(encoding="utf-8")) for p in files]


def launchable(pool: NodePool, catalog: Catalog) -> list[tuple[InstanceType, Offering]]:
    """Every (instance type, cheapest allowed offering) the pool's requirements admit, by price."""
    requirements = pool.spec.template.spec.requirements
    type_reqs = [r for r in requirements if r.key not in OFFERING_KEYS]
    offer_reqs = [r for r in requirements if r.key in OFFERING_KEYS]
    found: list[tuple[InstanceType, Offering]] = []
    for instance_type in catalog:
        if not all(requirement_allows(r, instance_type.labels.get(r.key)) for r in type_reqs):
            continue
        offerings = [
            o
            for o in catalog.available_offerings(instance_type)
            if all(
                requirement_allows(
                    r, o.zone if r.key == "topology.kubernetes.io/zone" else o.capacity_type
                )
                for r in offer_reqs
            )
        ]
        if offerings:
            found.append((instance_type, min(offerings, key=lambda o: o.price)))
    return sorted(found, key=lambda pair: (pair[1].price, pair[0].name))
