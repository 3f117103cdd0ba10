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
from typing import Annotated, Any

import typer

from driftwave.cli.agent_serve import agent_serve
from driftwave.cli.group import Group, show_help_when_bare
from driftwave.cli.output import (
    JsonOpt,
    OutputOpt,
    emit,
    output_format,
    simulated_time_bar,
    table_console,
)


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
    from agent.sim.simulate import as_json as sim_json
    from agent.sim.simulate import simulate
    from driftwave.cli.agent_views import render_simulation

    chosen = output_format(output, as_json)
    if until is not None and not re.fullmatch(r"([0-9]+(ms|s|m|h))+", until):
        raise typer.BadParameter(
            f"{until!r} is not a duration such as 30s or 10m", param_hint="--until"
        )
    result = _scenario_result(
        scenario, lambda bar: simulate(scenario, until, seed, strategy.value, bar)
    )
    data = json.loads(sim_json(result))
    emit(data, chosen, table=lambda _: render_simulation(table_console(), result))


def _scenario_result(scenario: Path, run: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
    """Run a scenario command with a progress bar of simulated time on stderr (when it is a
    terminal); an invalid scenario or manifest prints its findings, exit 1. A file that is not
    YAML (or is over a YAML limit) is refused before the simulator loads."""
    from common.documents import ManifestSyntaxError, read_documents

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
    from agent.hashing import report as hashes
    from agent.hashing.stamps import ca_bundle_problem
    from driftwave.cli.kinds import check_scenario

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
    found, errors = hashes.hash_files(files, agent_kinds(), ca_bundle, check_scenario)
    for finding in errors:
        print(str(finding), file=sys.stderr)
    if errors:
        raise typer.Exit(1)
    if not found:
        print("error: no NodePool or EC2NodeClass in the files", file=sys.stderr)
        raise typer.Exit(1)
    emit(json.loads(hashes.as_json(found)), chosen, table=lambda _: _hash_table(found, ca_bundle))


def _hash_table(found: list[Any], ca_bundle: str | None) -> None:
    from driftwave.cli.agent_views import hash_table

    if ca_bundle is None and any(s.kind == "EC2NodeClass" for s in found):
        print(
            "note: no CA bundle given; EC2NodeClass hashes are as where Karpenter has none "
            "(give --ca-bundle, --ca-file or --kubeconfig)",
            file=sys.stderr,
        )
    for line in hash_table(found):
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
    from agent.sim.plan import as_json as plan_json
    from agent.sim.plan import plan as drift_plan
    from driftwave.cli.agent_views import render_plan

    chosen = output_format(output, as_json)
    result = _scenario_result(scenario, lambda bar: drift_plan(scenario, seed, progress=bar))
    data = json.loads(plan_json(result))
    emit(data, chosen, table=lambda _: render_plan(table_console(), result))


agent_app.command("serve")(agent_serve)


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
    from agent.cloud.aws.amireport import AmisError, AmisRequest, report
    from agent.cloud.aws.amireport import as_json as amis_json
    from driftwave.cli.agent_views import render_amis

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
    from driftwave.cli.walkthrough import run_walkthrough

    raise typer.Exit(run_walkthrough(table_console()))
