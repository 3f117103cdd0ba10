"""The simulated mode of ``driftwave agent serve``: one or several simulated clusters in this
process, each on a virtual clock run faster than real time (:mod:`agent.sim.live`).

Its options are refused for a real cluster (:data:`SIMULATION_ONLY`); the command
(:mod:`driftwave.cli.agent_serve`) puts them in its signature in this order."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

Name = Annotated[str, typer.Option(help="The simulated cluster's name.")]
Nodes = Annotated[int, typer.Option(help="About how many nodes the cluster runs.")]
Seed = Annotated[int, typer.Option(help="Seed for names, ids and prices.")]
Speed = Annotated[
    float, typer.Option(help="Simulated seconds per real second (60: a minute a second).")
]
KubernetesVersion = Annotated[str, typer.Option(help="The control plane's Kubernetes version.")]
AmiRelease = Annotated[
    str, typer.Option(help="The AL2023 release the EC2NodeClass starts pinned to.")
]
FaultyRelease = Annotated[
    list[str] | None,
    typer.Option(help="An AL2023 release whose nodes never become Ready (repeat for several)."),
]
Config = Annotated[
    Path | None,
    typer.Option(
        help="A YAML/JSON list of agents to run in this process: {name, port, nodes, seed, "
        "kubernetesVersion, amiRelease, faultyReleases, tokenHash, speed}; it replaces "
        "--name, --port, --nodes, --seed, --kubernetes-version, --ami-release and "
        "--faulty-release (--speed applies to entries without one).",
        dir_okay=False,
    ),
]

SIMULATION_ONLY = (
    "name",
    "nodes",
    "seed",
    "speed",
    "kubernetes_version",
    "ami_release",
    "faulty_release",
    "config",
)
"""The options only a simulation takes (a usage error with --kubeconfig or --in-cluster)."""


def prepare_simulation() -> None:
    """Get the process ready for simulated clusters of thousands of objects (the collector's
    settings, :func:`agent.sim.heap.tune_for_large_simulations`)."""
    from agent.sim.heap import tune_for_large_simulations

    tune_for_large_simulations()
