"""``driftwave agent walkthrough``: the seed walkthrough on the embedded default, no servers.

It migrates the v1beta1 manifests of the seed walkthroughs (packaged with the agent) to v1,
validates the result, and shows for each NodePool what it may launch from the real EC2 catalog,
cheapest offering first (:mod:`agent.sim.walkthrough`), then previews and plays seed 002's
upgrade on a simulated cluster.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from rich.console import Console
from rich.table import Table

from agent.api.kinds import agent_kinds
from agent.api.lint import lint
from agent.api.migration import migrate_text
from agent.api.nodepool import NodePool
from agent.catalog import Catalog, InstanceType, Offering
from agent.sim.plan import plan
from agent.sim.simulate import simulate
from agent.sim.walkthrough import launchable, seed_files
from common.documents import check_document, load_documents

SHOWN = 5


def run_walkthrough(console: Console) -> int:
    """Run the walkthrough, printing to ``console``; the exit code (0 when all went well)."""
    console.rule("driftwave demo: the seed walkthrough (agent stage)")
    catalog = Catalog.packaged()
    console.print(
        f"EC2 catalog: {len(catalog)} instance types, zones {', '.join(catalog.zones)}, "
        "us-east-1 on-demand prices and the seeded spot-price model"
    )
    failures = 0
    kinds = agent_kinds()
    for name, text in seed_files():
        result = migrate_text(text, name)
        console.print(
            f"\n[bold]{name}[/]: migrated v1beta1 → v1 with {len(result.changes)} change(s)"
        )
        for change in result.changes:
            console.print(
                f"  • {change.kind}/{change.name} {change.path}: {change.message}", markup=False
            )
        pools: list[NodePool] = []
        for doc in load_documents(result.text, name) if result.ok else []:
            obj, findings = check_document(doc, kinds, (lint,))
            for finding in findings:
                console.print(f"  ! {finding}", style="yellow", markup=False)
            failures += sum(1 for f in findings if f.severity == "error")
            if isinstance(obj, NodePool):
                pools.append(obj)
        for finding in result.findings:
            console.print(f"  ✗ {finding}", style="red", markup=False)
        failures += 0 if result.ok else 1
        for pool in pools:
            console.print(_pool_table(pool, launchable(pool, catalog)))
    failures += _drift_upgrade(console)
    console.rule("done" if failures == 0 else f"{failures} problem(s)")
    return 0 if failures == 0 else 1


def _pool_table(pool: NodePool, options: list[tuple[InstanceType, Offering]]) -> Table:
    table = Table(
        title=f"NodePool {pool.name}: {len(options)} instance types allowed; cheapest {SHOWN}",
        title_justify="left",
    )
    for column in ("instance type", "vCPU", "memory GiB", "arch", "zone", "capacity", "USD/h"):
        table.add_column(
            column, justify="right" if column in ("vCPU", "memory GiB", "USD/h") else "left"
        )
    for instance_type, offering in options[:SHOWN]:
        table.add_row(
            instance_type.name,
            str(instance_type.vcpus),
            f"{instance_type.memory_bytes / 2**30:g}",
            instance_type.arch,
            offering.zone,
            offering.capacity_type,
            f"{offering.price:.4f}",
        )
    return table


def _drift_upgrade(console: Console) -> int:
    """Seed 002's upgrade on the simulated cluster: the preview, then the rollout."""
    scenario = Path(str(resources.files("agent").joinpath("examples", "scenarios")))
    scenario = scenario / "seed-002-pdb-upgrade.yaml"
    console.rule("seed 002: control plane 1.27 → 1.28 under a PodDisruptionBudget")
    preview = plan(scenario)
    for row in preview["drifted"]:
        console.print(
            f"preview: {row['node']} drifted ({row['reason']}): {row['image']} → "
            f"{row['targetImage']}, {row['action']}",
            markup=False,
        )
    result = simulate(scenario)
    shown = {"Drifted", "DisruptionStarted", "Evicted", "EvictionBlocked", "Terminated"}
    for event in result["timeline"]:
        if event["type"] in shown:
            console.print(
                f"{event['t']:>7.1f}s {event['type']:<17} {event['object']}", markup=False
            )
    summary = result["summary"]
    console.print(
        f"pods lost: {summary['podsLost']}, PDB violations: {summary['pdbViolations']}, "
        "nodes now: "
        + ", ".join(
            f"{n} on {image}" for image, n in summary["nodesPerImage"][-1]["nodes"].items()
        ),
        markup=False,
    )
    return 0 if summary["podsLost"] == 0 and summary["pdbViolations"] == 0 else 1
