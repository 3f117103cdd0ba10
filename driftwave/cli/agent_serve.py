"""``driftwave agent serve``: the agent's HTTP API over a live simulated cluster (or several),
or over a real cluster (``--kubeconfig`` or ``--in-cluster``).

The web stack (FastAPI, uvicorn) and the live agent's clients are imported inside the command,
so ``driftwave agent --help`` loads none of them."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from agent.live.options import LiveOptions
    from agent.settings import AgentSettings


class Driver(StrEnum):
    """Who manages a real cluster's nodes (``agent serve --driver``)."""

    native = "native"
    karpenter = "karpenter"


REAL = "Real cluster (--kubeconfig or --in-cluster)"
TLS = "HTTPS (required to listen off loopback)"


def agent_serve(
    ctx: typer.Context,
    port: Annotated[int, typer.Option(help="Port to listen on (0 picks a free one).")] = 9100,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    name: Annotated[str, typer.Option(help="The simulated cluster's name.")] = "fleet-member",
    nodes: Annotated[int, typer.Option(help="About how many nodes the cluster runs.")] = 200,
    seed: Annotated[int, typer.Option(help="Seed for names, ids and prices.")] = 1,
    speed: Annotated[
        float, typer.Option(help="Simulated seconds per real second (60: a minute a second).")
    ] = 60.0,
    kubernetes_version: Annotated[
        str, typer.Option(help="The control plane's Kubernetes version.")
    ] = "1.30",
    ami_release: Annotated[
        str, typer.Option(help="The AL2023 release the EC2NodeClass starts pinned to.")
    ] = "v20251202",
    faulty_release: Annotated[
        list[str] | None,
        typer.Option(help="An AL2023 release whose nodes never become Ready (repeat for several)."),
    ] = None,
    token_file: Annotated[
        Path | None,
        typer.Option(
            help="A file holding the bearer token clients must send (else $DRIFTWAVE_AGENT_TOKEN).",
            dir_okay=False,
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            help="A YAML/JSON list of agents to run in this process: {name, port, nodes, seed, "
            "kubernetesVersion, amiRelease, faultyReleases, tokenHash, speed}; it replaces "
            "--name, --port, --nodes, --seed, --kubernetes-version, --ami-release and "
            "--faulty-release (--speed applies to entries without one).",
            dir_okay=False,
        ),
    ] = None,
    trace_file: Annotated[
        Path | None,
        typer.Option(help="Append a JSON line per span to this file.", dir_okay=False),
    ] = None,
    otlp_endpoint: Annotated[
        str | None,
        typer.Option(help="Send spans to this OTLP/HTTP collector (e.g. http://127.0.0.1:4318)."),
    ] = None,
    tls_cert_file: Annotated[
        Path | None,
        typer.Option(
            envvar="DRIFTWAVE_AGENT_TLS_CERT_FILE",
            help="Serve HTTPS with this PEM certificate chain (reloaded when the file changes).",
            dir_okay=False,
            rich_help_panel=TLS,
        ),
    ] = None,
    tls_key_file: Annotated[
        Path | None,
        typer.Option(
            envvar="DRIFTWAVE_AGENT_TLS_KEY_FILE",
            help="The certificate's PEM private key (reloaded with it).",
            dir_okay=False,
            rich_help_panel=TLS,
        ),
    ] = None,
    client_ca_file: Annotated[
        Path | None,
        typer.Option(
            envvar="DRIFTWAVE_AGENT_CLIENT_CA_FILE",
            help="Mutual TLS: require a client certificate signed by a CA of this PEM bundle.",
            dir_okay=False,
            rich_help_panel=TLS,
        ),
    ] = None,
    kubeconfig: Annotated[
        Path | None,
        typer.Option(
            help="Run against the real cluster this kubeconfig reaches (instead of a simulation).",
            dir_okay=False,
            rich_help_panel=REAL,
        ),
    ] = None,
    context: Annotated[
        str | None,
        typer.Option(
            help="The kubeconfig context (default: its current one).", rich_help_panel=REAL
        ),
    ] = None,
    in_cluster: Annotated[
        bool,
        typer.Option(
            "--in-cluster",
            help="Run against the cluster this pod is in (its service account).",
            rich_help_panel=REAL,
        ),
    ] = False,
    cluster_name: Annotated[
        str | None,
        typer.Option(
            envvar="DRIFTWAVE_CLUSTER_NAME",
            help="The EKS cluster's name (tags, user data, DescribeCluster).",
            rich_help_panel=REAL,
        ),
    ] = None,
    region: Annotated[
        str | None,
        typer.Option(
            envvar="AWS_REGION",
            help="The AWS region (default: the profile's).",
            rich_help_panel=REAL,
        ),
    ] = None,
    profile: Annotated[
        str | None,
        typer.Option(envvar="AWS_PROFILE", help="A named AWS profile.", rich_help_panel=REAL),
    ] = None,
    driver: Annotated[
        Driver,
        typer.Option(
            help="native: the agent manages the nodes (as Karpenter does); karpenter: the cluster "
            "runs Karpenter, and the agent only applies waves (amiSelectorTerms) and reports.",
            case_sensitive=False,
            rich_help_panel=REAL,
        ),
    ] = Driver.native,
    interruption_queue: Annotated[
        str | None,
        typer.Option(
            envvar="DRIFTWAVE_INTERRUPTION_QUEUE",
            help="The SQS queue of EC2 interruption events (spot, rebalance, state changes, "
            "scheduled changes).",
            rich_help_panel=REAL,
        ),
    ] = None,
    leader_elect: Annotated[
        bool,
        typer.Option(
            help="Act only while holding the leader Lease (run two replicas).",
            rich_help_panel=REAL,
        ),
    ] = True,
    lease_namespace: Annotated[
        str,
        typer.Option(
            envvar="POD_NAMESPACE",
            help="The namespace of the leader Lease.",
            rich_help_panel=REAL,
        ),
    ] = "kube-system",
    cluster_ca_bundle: Annotated[
        str | None,
        typer.Option(
            envvar="CLUSTER_CA_BUNDLE",
            help="The cluster's CA bundle (base64), hashed with each EC2NodeClass as Karpenter "
            "hashes it; give the value Karpenter ran with when taking a cluster over. Default: "
            "the CA the agent's own connection trusts, as Karpenter does.",
            rich_help_panel=REAL,
        ),
    ] = None,
) -> None:
    """Serve the agent's HTTP API over a live simulated cluster (or several), or over a
    real cluster with --kubeconfig PATH or --in-cluster.

    Each agent runs a simulated EKS cluster (one EC2NodeClass pinned to an
    AL2023 release, NodePools with Drifted budgets, Deployments with PDBs)
    whose clock runs --speed times faster than real time. Routes:
    GET /healthz, GET /v1/status, POST /v1/plan, PUT and GET /v1/waves/ID,
    POST /v1/waves/ID/rollback; the OpenAPI schema is at /openapi.json.
    Every /v1 request needs "Authorization: Bearer TOKEN"; the agent
    refuses to start without a token. Plain HTTP is served on loopback
    only: to listen on another address (--host 0.0.0.0) give
    --tls-cert-file and --tls-key-file (and --client-ca-file for mutual
    TLS). A line per agent says where it listens; Ctrl-C or SIGTERM
    stops. Exit code 1 on invalid options.

    Example: one agent, its status, then a wave to the newest release:

    echo s3cret > token

    driftwave agent serve --nodes 50 --token-file token

    curl -H "Authorization: Bearer s3cret" 127.0.0.1:9100/v1/status

    curl -X PUT -H "Authorization: Bearer s3cret" -d '{"target":
    {"amiSelectorTerms": [{"alias": "al2023@v20251216"}]}}'
    127.0.0.1:9100/v1/waves/wave-1

    Several agents in one process: --config agents.yaml, a list of entries
    such as {name: canary-1, port: 9101, nodes: 30, amiRelease: v20251202}.

    A real cluster: the agent watches it through the kubeconfig (or the pod's
    service account), reaches AWS with the usual chain (environment, profile,
    IRSA, Pod Identity; AWS_ENDPOINT_URL is honoured), and replaces drifted
    nodes itself (--driver native) or leaves that to Karpenter (--driver
    karpenter). /readyz answers 200 only on the replica holding the Lease:

    driftwave agent serve --kubeconfig ~/.kube/config --cluster-name prod-1
    --region us-east-1 --token-file token --no-leader-elect
    """
    # Imported here: the other commands need not load the web stack (FastAPI, uvicorn).
    from agent.server.serve import ServeError, ServeOptions, serve
    from agent.sim.heap import tune_for_large_simulations

    real = kubeconfig is not None or in_cluster
    _check_mode(ctx, real)
    settings = _settings(
        ctx,
        cluster_name=cluster_name,
        region=region,
        profile=profile,
        interruption_queue=interruption_queue,
        lease_namespace=lease_namespace,
        cluster_ca_bundle=cluster_ca_bundle,
        tls_cert_file=tls_cert_file,
        tls_key_file=tls_key_file,
        client_ca_file=client_ca_file,
    )
    live = (
        _live_options(
            settings,
            kubeconfig=kubeconfig,
            context=context,
            in_cluster=in_cluster,
            driver=driver,
            leader_elect=leader_elect,
            host=host,
            port=port,
        )
        if real
        else None
    )
    if live is None:
        tune_for_large_simulations()
    options = ServeOptions(
        host=host,
        port=port,
        name=name,
        nodes=nodes,
        seed=seed,
        speed=speed,
        kubernetes_version=kubernetes_version,
        ami_release=ami_release,
        faulty_releases=tuple(faulty_release or ()),
        token_file=token_file,
        config=config,
        trace_file=trace_file,
        otlp_endpoint=otlp_endpoint,
        token=settings.token,
        live=live,
        tls_cert_file=settings.tls_cert_file,
        tls_key_file=settings.tls_key_file,
        client_ca_file=settings.client_ca_file,
    )
    try:
        serve(options, lambda line: print(line, flush=True))
    except KeyboardInterrupt:  # Ctrl-C while the clusters were still being built
        raise typer.Exit(130) from None
    except ServeError as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        raise typer.Exit(1) from exc


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


def _given(ctx: typer.Context, name: str) -> bool:
    """Whether the option was given (on the command line or by its environment variable)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name != "DEFAULT"


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _from_command_line(ctx: typer.Context, name: str) -> bool:
    """Whether the option was given on the command line (not by its environment variable)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"


def _check_mode(ctx: typer.Context, real: bool) -> None:
    """A simulation option for a real cluster (--kubeconfig or --in-cluster), or a real-cluster
    option without, is a usage error."""
    wrong = [n for n in (SIMULATION_ONLY if real else REAL_ONLY) if _given(ctx, n)]
    if wrong:
        where = "a real cluster" if real else "a simulated cluster"
        needs = "" if real else " (give --kubeconfig PATH or --in-cluster)"
        others = f" (nor {', '.join(map(_flag, wrong[1:]))})" if wrong[1:] else ""
        raise typer.BadParameter(f"not for {where}{others}{needs}", param_hint=_flag(wrong[0]))


def _settings(ctx: typer.Context, **options: Any) -> AgentSettings:
    """The agent's settings, read once: the options given on the command line over the
    environment; a bad value is an error naming the variable (or option) and the rule, exit 1."""
    from agent.settings import AgentSettingsError, load_agent_settings

    given = {n: v for n, v in options.items() if _from_command_line(ctx, n)}
    try:
        return load_agent_settings(given)
    except AgentSettingsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise typer.Exit(1) from exc


def _live_options(settings: AgentSettings, **given: Any) -> LiveOptions:
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
        kubeconfig=given["kubeconfig"],
        context=given["context"],
        in_cluster=given["in_cluster"],
        region=settings.region,
        profile=settings.profile,
        driver=given["driver"].value,
        interruption_queue=settings.interruption_queue,
        leader_elect=given["leader_elect"],
        lease_namespace=settings.lease_namespace,
        cluster_ca_bundle=settings.cluster_ca_bundle,
        pod_name=settings.pod_name,
        host=given["host"],
        port=given["port"],
    )
