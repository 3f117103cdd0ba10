"""``driftwave agent serve``: the agent's HTTP API over a live simulated cluster (or several),
or over a real cluster (``--kubeconfig`` or ``--in-cluster``).

This module is the command: the options every mode takes (address, token, tracing, TLS), the
check that no option of the other mode was given, and the settings read once. Each mode keeps
its own options and preparation: the simulation in :mod:`driftwave.cli.agent_serve_sim`, a real
cluster (its native and karpenter drivers) in :mod:`driftwave.cli.agent_serve_live`.

The web stack (FastAPI, uvicorn) and the live agent's clients are imported inside the command,
so ``driftwave agent --help`` loads none of them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from driftwave.cli import agent_serve_live as live_mode
from driftwave.cli import agent_serve_sim as sim

if TYPE_CHECKING:
    from agent.settings import AgentSettings


TLS = "HTTPS (required to listen off loopback)"


def agent_serve(
    ctx: typer.Context,
    port: Annotated[int, typer.Option(help="Port to listen on (0 picks a free one).")] = 9100,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    name: sim.Name = "fleet-member",
    nodes: sim.Nodes = 200,
    seed: sim.Seed = 1,
    speed: sim.Speed = 60.0,
    kubernetes_version: sim.KubernetesVersion = "1.30",
    ami_release: sim.AmiRelease = "v20251202",
    faulty_release: sim.FaultyRelease = None,
    token_file: Annotated[
        Path | None,
        typer.Option(
            help="A file holding the bearer token clients must send (else $DRIFTWAVE_AGENT_TOKEN).",
            dir_okay=False,
        ),
    ] = None,
    config: sim.Config = None,
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
    kubeconfig: live_mode.Kubeconfig = None,
    context: live_mode.Context = None,
    in_cluster: live_mode.InCluster = False,
    cluster_name: live_mode.ClusterName = None,
    region: live_mode.Region = None,
    profile: live_mode.Profile = None,
    driver: live_mode.DriverOption = live_mode.Driver.native,
    interruption_queue: live_mode.InterruptionQueue = None,
    leader_elect: live_mode.LeaderElect = True,
    lease_namespace: live_mode.LeaseNamespace = "kube-system",
    cluster_ca_bundle: live_mode.ClusterCaBundle = None,
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
        live_mode.live_options(
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
        sim.prepare_simulation()
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
    wrong = [n for n in (sim.SIMULATION_ONLY if real else live_mode.REAL_ONLY) if _given(ctx, n)]
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
