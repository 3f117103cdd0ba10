"""``driftwave agent``: the per-cluster agent's commands (simulate, plan, hash, serve,
walkthrough).

What a command runs (the simulator, the scheduler's solver, the web stack, the AWS and
Kubernetes clients) is imported inside it, so ``driftwave agent --help`` loads none of it."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from fleet.clicore import (
    Group,
    JsonOpt,
    OutputOpt,
    emit,
    output_format,
    show_help_when_bare,
    simulated_time_bar,
)

if TYPE_CHECKING:
    from agent.live.options import LiveOptions


class Driver(StrEnum):
    """Who manages a real cluster's nodes (``agent serve --driver``)."""

    native = "native"
    karpenter = "karpenter"


REAL = "Real cluster (--kubeconfig or --in-cluster)"


class SimStrategy(StrEnum):
    """The scheduling strategies ``agent simulate`` offers."""

    driftwave = "driftwave"
    karpenter = "karpenter"


agent_app = typer.Typer(
    name="agent",
    help="The per-cluster agent: serve its HTTP API over a simulated cluster, simulate a "
    "scenario, preview what drift would do, or walk through the seed manifests.",
    cls=Group,
)
agent_app.callback(invoke_without_command=True)(show_help_when_bare)


@agent_app.command("simulate")
def agent_simulate(
    scenario: Annotated[
        Path, typer.Argument(help="A driftwave.io/v1alpha1 Scenario file.", exists=True)
    ],
    output: OutputOpt = None,
    as_json: JsonOpt = False,
    until: Annotated[
        str | None,
        typer.Option(help="Stop after this much simulated time (e.g. 30m); default: spec.until."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed for names, ids and prices.")] = 1,
    strategy: Annotated[
        SimStrategy,
        typer.Option(
            help="How the provisioner picks nodes: driftwave (cost-planned, the default) or "
            "karpenter (Karpenter's own order, to compare).",
            case_sensitive=False,
        ),
    ] = SimStrategy.driftwave,
) -> None:
    """Run a Scenario on a virtual clock: the agent's provisioner, NodeClaim lifecycle, drift
    detection, disruption and termination against a simulated cluster and cloud (the real EC2
    catalog and prices).

    Prints the NodeClaims launched (instance type, zone, capacity type, image, pods), the pods
    left pending and why, the cost per hour and the timeline (drift, disruptions with method
    and reason, evictions, PDB refusals, terminations); -o json or -o yaml adds the summary
    (most nodes disrupted at once per NodePool, PDB violations, pods lost, nodes per image over
    time).
    Exit code 1 when the scenario or a manifest it loads is invalid.

    Example: driftwave agent simulate examples/scenarios/seed-000-inflate.yaml
    """
    from agent.cli.simulate import as_json as sim_json
    from agent.cli.simulate import render, simulate

    chosen = output_format(output, as_json)
    if until is not None and not re.fullmatch(r"([0-9]+(ms|s|m|h))+", until):
        raise typer.BadParameter(
            f"{until!r} is not a duration such as 30s or 10m", param_hint="--until"
        )
    result = _scenario_result(
        scenario, lambda bar: simulate(scenario, until, seed, strategy.value, bar)
    )
    data = json.loads(sim_json(result))
    emit(data, chosen, table=lambda _: render(Console(highlight=False), result))


def _scenario_result(scenario: Path, run: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
    """Run a scenario command with a progress bar of simulated time on stderr (when it is a
    terminal); an invalid scenario or manifest prints its findings, exit 1. A file that is not
    YAML (or is over a YAML limit) is refused before the simulator loads."""
    from agent.api.manifests import ManifestSyntaxError, read_documents

    try:
        if str(scenario) != "-":  # (a file named -: read once, by the scenario's loader)
            read_documents(scenario)
    except ManifestSyntaxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise typer.Exit(1) from exc

    from agent.sim.heap import tune_for_large_simulations
    from agent.sim.scenario_run import ScenarioError

    tune_for_large_simulations()
    try:
        with simulated_time_bar() as progress:
            return run(progress)
    except ScenarioError as exc:
        for finding in exc.findings:
            print(str(finding), file=sys.stderr)
        raise typer.Exit(1) from exc
    except ManifestSyntaxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise typer.Exit(1) from exc


@agent_app.command("hash")
def agent_hash(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="Manifest files or directories with NodePools and EC2NodeClasses; - reads "
            "stdin, e.g. kubectl get nodepools,ec2nodeclasses -o yaml | driftwave agent hash -",
            show_default=False,
        ),
    ],
    output: OutputOpt = None,
    as_json: JsonOpt = False,
    ca_bundle: Annotated[
        str | None,
        typer.Option(
            envvar="CLUSTER_CA_BUNDLE",
            help="The cluster's CA bundle (base64), as Karpenter's setting of the same name.",
        ),
    ] = None,
    ca_file: Annotated[
        Path | None,
        typer.Option(help="The cluster's CA file (PEM), as Karpenter reads it.", dir_okay=False),
    ] = None,
    kubeconfig: Annotated[
        Path | None,
        typer.Option(help="Take the CA bundle from this kubeconfig's cluster.", dir_okay=False),
    ] = None,
    context: Annotated[
        str | None, typer.Option(help="The kubeconfig context (default: its current one).")
    ] = None,
) -> None:
    """Print the drift hashes Karpenter would stamp on each NodePool and
    EC2NodeClass (karpenter.sh/nodepool-hash, karpenter.k8s.aws/ec2nodeclass-hash
    and their versions).

    Before the agent takes a cluster over from Karpenter, check that no node
    would drift: objects read from the cluster carry the hash Karpenter
    stamped, and each row says whether driftwave's agrees. An EC2NodeClass's
    hash includes the cluster's CA bundle, as in Karpenter: give the one
    Karpenter runs with (--ca-bundle, --ca-file or --kubeconfig); without one
    the hash is as where none is set. -o json (or yaml) prints a list of
    {kind, name, hash, hashVersion}. Exit code 1 on an invalid manifest or option.

    Example:

    kubectl get nodepools,ec2nodeclasses -o yaml | driftwave agent hash -
    --kubeconfig ~/.kube/config
    """
    from agent.api.kinds import agent_kinds
    from agent.cli import hash as hashes
    from agent.lifecycle.hashing import ca_bundle_problem

    chosen = output_format(output, as_json)
    for path in files:
        if str(path) != "-" and not path.exists():
            raise typer.BadParameter(f"{path} does not exist", param_hint="FILES")
    sources = [n for n, v in (("--ca-bundle", ca_bundle), ("--ca-file", ca_file),
                              ("--kubeconfig", kubeconfig)) if v]  # fmt: skip
    if len(sources) > 1:
        raise typer.BadParameter(
            f"give one of {', '.join(sources)} (rule: one source of the CA bundle)",
            param_hint=sources[1],
        )
    if context is not None and kubeconfig is None:
        raise typer.BadParameter("only with --kubeconfig", param_hint="--context")
    if ca_bundle is not None and (problem := ca_bundle_problem(ca_bundle)):
        raise typer.BadParameter(problem, param_hint="--ca-bundle")
    try:
        if ca_file is not None:
            ca_bundle = hashes.ca_bundle_from_file(ca_file)
        elif kubeconfig is not None:
            ca_bundle = hashes.ca_bundle_from_kubeconfig(kubeconfig, context)
    except hashes.CABundleError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise typer.Exit(1) from exc
    found, errors = hashes.hash_files(files, agent_kinds(), ca_bundle)
    for finding in errors:
        print(str(finding), file=sys.stderr)
    if errors:
        raise typer.Exit(1)
    if not found:
        print("error: no NodePool or EC2NodeClass in the files", file=sys.stderr)
        raise typer.Exit(1)
    emit(json.loads(hashes.as_json(found)), chosen, table=lambda _: _hash_table(found, ca_bundle))


def _hash_table(found: list[Any], ca_bundle: str | None) -> None:
    from agent.cli import hash as hashes

    if ca_bundle is None and any(s.kind == "EC2NodeClass" for s in found):
        print(
            "note: no CA bundle given; EC2NodeClass hashes are as where Karpenter has none "
            "(give --ca-bundle, --ca-file or --kubeconfig)",
            file=sys.stderr,
        )
    for line in hashes.table(found):
        print(line)
    drifting = [s for s in found if s.verdict == "differs"]
    if drifting:
        print(
            f"{len(drifting)} object(s) carry another hash of the same version: their nodes "
            "would drift under Karpenter's rules"
        )


@agent_app.command("plan")
def agent_plan(
    scenario: Annotated[
        Path, typer.Argument(help="A driftwave.io/v1alpha1 Scenario file.", exists=True)
    ],
    output: OutputOpt = None,
    as_json: JsonOpt = False,
    seed: Annotated[int, typer.Option(help="Seed for names, ids and prices.")] = 1,
) -> None:
    """Preview drift without acting: which nodes have drifted and why, which would be replaced
    or held (and by what: a do-not-disrupt pod, a PodDisruptionBudget, a halted NodePool), the
    waves the NodePools' Drifted budgets allow, and an ETA.

    The scenario is played up to its last event in dry-run mode: drift is detected, nothing is
    disrupted. Exit code 1 when the scenario or a manifest it loads is invalid.

    Example: driftwave agent plan examples/scenarios/seed-001-budget-hours.yaml
    """
    from agent.cli.plan import as_json as plan_json
    from agent.cli.plan import plan as drift_plan
    from agent.cli.plan import render as render_plan

    chosen = output_format(output, as_json)
    result = _scenario_result(scenario, lambda bar: drift_plan(scenario, seed, progress=bar))
    data = json.loads(plan_json(result))
    emit(data, chosen, table=lambda _: render_plan(Console(highlight=False), result))


@agent_app.command("serve")
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
    refuses to start without a token. A line per agent says where it
    listens; Ctrl-C or SIGTERM stops. Exit code 1 on invalid options.

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

    live = _live_options(
        ctx,
        kubeconfig=kubeconfig,
        context=context,
        in_cluster=in_cluster,
        cluster_name=cluster_name,
        region=region,
        profile=profile,
        driver=driver,
        interruption_queue=interruption_queue,
        leader_elect=leader_elect,
        lease_namespace=lease_namespace,
        cluster_ca_bundle=cluster_ca_bundle,
        host=host,
        port=port,
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
        live=live,
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


def _live_options(ctx: typer.Context, **given: Any) -> LiveOptions | None:
    """The live agent's options when --kubeconfig or --in-cluster is given (None: simulate).
    A simulation option with them, or a real-cluster option without, is a usage error."""
    real = given["kubeconfig"] is not None or given["in_cluster"]
    wrong = [n for n in (SIMULATION_ONLY if real else REAL_ONLY) if _given(ctx, n)]
    if wrong:
        where = "a real cluster" if real else "a simulated cluster"
        needs = "" if real else " (give --kubeconfig PATH or --in-cluster)"
        others = f" (nor {', '.join(map(_flag, wrong[1:]))})" if wrong[1:] else ""
        raise typer.BadParameter(f"not for {where}{others}{needs}", param_hint=_flag(wrong[0]))
    if not real:
        return None
    from agent.live.options import LiveOptions

    if not given["cluster_name"]:
        raise typer.BadParameter(
            "the EKS cluster's name is required for a real cluster (or set DRIFTWAVE_CLUSTER_NAME)",
            param_hint="--cluster-name",
        )
    return LiveOptions(
        cluster_name=given["cluster_name"],
        kubeconfig=given["kubeconfig"],
        context=given["context"],
        in_cluster=given["in_cluster"],
        region=given["region"],
        profile=given["profile"],
        driver=given["driver"].value,
        interruption_queue=given["interruption_queue"],
        leader_elect=given["leader_elect"],
        lease_namespace=given["lease_namespace"],
        cluster_ca_bundle=given["cluster_ca_bundle"],
        host=given["host"],
        port=given["port"],
    )


@agent_app.command("amis")
def agent_amis(
    nodeclass: Annotated[
        Path, typer.Argument(help="A file with one or more EC2NodeClasses (- reads stdin).")
    ],
    kubernetes_version: Annotated[
        str | None,
        typer.Option(help="The Kubernetes version aliases resolve for (else the cluster's)."),
    ] = None,
    cluster_name: Annotated[
        str | None,
        typer.Option(
            envvar="DRIFTWAVE_CLUSTER_NAME",
            help="The EKS cluster whose version aliases resolve for (DescribeCluster).",
        ),
    ] = None,
    region: Annotated[str | None, typer.Option(envvar="AWS_REGION", help="AWS region.")] = None,
    profile: Annotated[str | None, typer.Option(help="AWS profile (else the usual chain).")] = None,
    output: OutputOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Print the images each EC2NodeClass in the file selects in AWS, which
    it would use, and why.

    Aliases (al2023@latest, bottlerocket@v1.26.1, ...) are read from the
    SSM parameters AWS publishes for the cluster's Kubernetes version; id,
    name (wildcards; owners self and amazon by default), tags and
    ssmParameter terms from EC2 DescribeImages. Per set of requirements
    (architecture, GPU or accelerator variant) the newest non-deprecated
    image is chosen, as Karpenter chooses. Credentials, region and
    AWS_ENDPOINT_URL come from the usual AWS chain. Exit code 1 on an
    invalid manifest, an AWS error, or a node class that selects nothing.

    Example: driftwave agent amis nodeclass.yaml --kubernetes-version 1.31
    """
    from agent.cli.amis import AmisError, AmisRequest, report
    from agent.cli.amis import as_json as amis_json
    from agent.cli.amis import render as render_amis

    chosen = output_format(output, as_json)
    request = AmisRequest(nodeclass, kubernetes_version, cluster_name, region, profile)
    try:
        result = report(request)
    except AmisError as exc:
        for line in exc.lines:
            print(f"error: {line}", file=sys.stderr)
        raise typer.Exit(1) from exc
    emit(json.loads(amis_json(result)), chosen, table=lambda _: render_amis(result))
    if any(nc.get("error") for nc in result["nodeClasses"]):
        raise typer.Exit(1)


@agent_app.command("walkthrough")
def agent_walkthrough() -> None:
    """Walk through the seed manifests: migrate the v1beta1 seeds to v1, validate them, and show
    what each NodePool may launch from the real EC2 catalog, cheapest first, then simulate the
    seed scenarios.

    Example: driftwave agent walkthrough
    """
    from agent.cli.demo import run_demo as run_walkthrough

    raise typer.Exit(run_walkthrough(Console(highlight=False)))
