"""The real-cluster mode of ``driftwave agent serve`` (``--kubeconfig`` or ``--in-cluster``):
the agent watches a real cluster and reaches AWS, and either manages the nodes itself
(``--driver native``, as Karpenter does) or leaves them to the cluster's Karpenter and only
applies waves and reports (``--driver karpenter``).

Its options are refused for a simulation (:data:`REAL_ONLY`); the command
(:mod:`driftwave.cli.agent_serve`) puts them in its signature in this order, and
:func:`live_options` turns them, with the agent's settings, into the live agent's options."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from agent.live.options import LiveOptions
    from agent.settings import AgentSettings


class Driver(StrEnum):
    """Who manages a real cluster's nodes (``agent serve --driver``)."""

    native = "native"
    karpenter = "karpenter"


REAL = "Real cluster (--kubeconfig or --in-cluster)"

Kubeconfig = Annotated[
    Path | None,
    typer.Option(
        help="Run against the real cluster this kubeconfig reaches (instead of a simulation).",
        dir_okay=False,
        rich_help_panel=REAL,
    ),
]
Context = Annotated[
    str | None,
    typer.Option(help="The kubeconfig context (default: its current one).", rich_help_panel=REAL),
]
InCluster = Annotated[
    bool,
    typer.Option(
        "--in-cluster",
        help="Run against the cluster this pod is in (its service account).",
        rich_help_panel=REAL,
    ),
]
ClusterName = Annotated[
    str | None,
    typer.Option(
        envvar="DRIFTWAVE_CLUSTER_NAME",
        help="The EKS cluster's name (tags, user data, DescribeCluster).",
        rich_help_panel=REAL,
    ),
]
Region = Annotated[
    str | None,
    typer.Option(
        envvar="AWS_REGION", help="The AWS region (default: the profile's).", rich_help_panel=REAL
    ),
]
Profile = Annotated[
    str | None,
    typer.Option(envvar="AWS_PROFILE", help="A named AWS profile.", rich_help_panel=REAL),
]
DriverOption = Annotated[
    Driver,
    typer.Option(
        help="native: the agent manages the nodes (as Karpenter does); karpenter: the cluster "
        "runs Karpenter, and the agent only applies waves (amiSelectorTerms) and reports.",
        case_sensitive=False,
        rich_help_panel=REAL,
    ),
]
InterruptionQueue = Annotated[
    str | None,
    typer.Option(
        envvar="DRIFTWAVE_INTERRUPTION_QUEUE",
        help="The SQS queue of EC2 interruption events (spot, rebalance, state changes, "
        "scheduled changes).",
        rich_help_panel=REAL,
    ),
]
LeaderElect = Annotated[
    bool,
    typer.Option(
        help="Act only while holding the leader Lease (run two replicas).", rich_help_panel=REAL
    ),
]
LeaseNamespace = Annotated[
    str,
    typer.Option(
        envvar="POD_NAMESPACE", help="The namespace of the leader Lease.", rich_help_panel=REAL
    ),
]
ClusterCaBundle = Annotated[
    str | None,
    typer.Option(
        envvar="CLUSTER_CA_BUNDLE",
        help="The cluster's CA bundle (base64), hashed with each EC2NodeClass as Karpenter "
        "hashes it; give the value Karpenter ran with when taking a cluster over. Default: "
        "the CA the agent's own connection trusts, as Karpenter does.",
        rich_help_panel=REAL,
    ),
]

REAL_ONLY = (
    "context",
    "cluster_name",
    "profile",
    "driver",
    "interruption_queue",
    "leader_elect",
    "lease_namespace",
    "cluster_ca_bundle",
)
"""The options only a real cluster takes (a usage error without --kubeconfig or --in-cluster)."""


def live_options(
    settings: AgentSettings,
    *,
    kubeconfig: Path | None,
    context: str | None,
    in_cluster: bool,
    driver: Driver,
    leader_elect: bool,
    host: str,
    port: int,
) -> LiveOptions:
    """The live agent's options (--kubeconfig or --in-cluster): the command's, and the settings
    read from the command line or the environment."""
    from agent.live.options import LiveOptions

    if not settings.cluster_name:
        raise typer.BadParameter(
            "the EKS cluster's name is required for a real cluster (or set DRIFTWAVE_CLUSTER_NAME)",
            param_hint="--cluster-name",
        )
    return LiveOptions(
        cluster_name=settings.cluster_name,
        kubeconfig=kubeconfig,
        context=context,
        in_cluster=in_cluster,
        region=settings.region,
        profile=settings.profile,
        driver=driver.value,
        interruption_queue=settings.interruption_queue,
        leader_elect=leader_elect,
        lease_namespace=settings.lease_namespace,
        cluster_ca_bundle=settings.cluster_ca_bundle,
        pod_name=settings.pod_name,
        host=host,
        port=port,
    )
