"""``driftwave rollout``: rolling a Release through a Fleet. ``plan`` (a dry run that prints the
rings, waves, windows, gates and an estimate, from the API's plan document) lives here; the
operational commands (start, status, pause, ...) in :mod:`driftwave.cli.rollout_ops`. The
fleet's domain and the client are imported inside the commands, so ``driftwave rollout --help``
loads neither."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Protocol

import typer
from rich.console import Console

from driftwave.cli import rollout_ops as ops
from driftwave.cli.context import ContextOpt, fleet_context, fleet_port, uses_api
from driftwave.cli.group import Group, show_help_when_bare
from driftwave.cli.output import JsonOpt, OutputOpt, emit, output_format, table_console, when

if TYPE_CHECKING:
    from common.documents import Finding
    from fleet.api.documents import ClusterPlanDocument, PlanDocument, RingPlanDocument
    from fleet.domain.fleet import Fleet
    from fleet.domain.manifests import Loaded
    from fleet.domain.pace import Pace
    from fleet.domain.release import Release

rollout_app = typer.Typer(
    name="rollout",
    help="Roll a Release (a new AMI or Kubernetes version) through a Fleet's rings in waves.",
    cls=Group,
)
rollout_app.callback(invoke_without_command=True)(show_help_when_bare)
rollout_app.command("start")(ops.start)
rollout_app.command("status")(ops.status)
rollout_app.command("list")(ops.list_)
for _command in (ops.pause, ops.resume, ops.approve, ops.abort, ops.rollback, ops.audit):
    rollout_app.command(_command.__name__)(_command)


@rollout_app.command("plan")
def rollout_plan(
    release: Annotated[
        Path,
        typer.Argument(help="A driftwave.io/v1alpha1 Release file.", exists=True, dir_okay=False),
    ],
    fleet: Annotated[
        Path | None,
        typer.Option(
            "--fleet",
            help="The driftwave.io/v1alpha1 Fleet file the release rolls through (default: the "
            "fleet stored by driftwave fleet apply).",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    output: OutputOpt = None,
    as_json: JsonOpt = False,
    at: Annotated[
        str | None,
        typer.Option(
            "--at",
            help="Plan as of this time (RFC 3339, e.g. 2026-01-05T09:00:00Z); default: now.",
        ),
    ] = None,
    context: ContextOpt = None,
) -> None:
    """Show how a Release would roll through a Fleet, without doing anything.

    Prints the rings in the Fleet's order (rings the release does not list are shown as not
    rolled), each ring's waves and their clusters (sorted by name) with their maintenance-window
    state, the soak, gates, failure budget and approval, the clusters spec.clusters leaves out,
    and an estimated duration with the assumptions behind it. A wave's time is learnt from the
    fleet's finished waves (the median of the last 12): without --fleet, those of the stored
    fleet (through the context's API, or the fleet database here); with a Fleet file, those of
    the fleet of that name in the fleet database here, if there is one (none through a
    context); with none, it is assumed to be half its ring's convergenceTimeout, of simulated
    time when the fleet last observed every cluster of the ring simulated, else of real time,
    and the plan says which. Warnings about risky settings go to stderr. Invalid files print
    their findings (FILE:LINE Kind/name: field: message) on stderr and exit 1.

    Example: driftwave rollout plan release.yaml --fleet fleet.yaml --at 2026-01-05T09:00:00Z
    """
    from driftwave.client.port import dump

    chosen = output_format(output, as_json)
    now = _now(at)
    loaded_release, loaded_fleet, findings = _load(fleet, release)
    _report(findings)
    if loaded_fleet is None:
        with fleet_port(context, changes=False) as port:
            document = port.plan(loaded_release.obj, now if at is not None else None)
        shown = {(f.path, f.message) for f in findings}
        for notice in document.warnings:
            if (notice.path, notice.message) not in shown:
                print(f"warning: {notice.path}: {notice.message}", file=sys.stderr)
    else:
        document = _local_plan(loaded_release, loaded_fleet, now, uses_api(context))
    emit(dump(document), chosen, table=lambda _: render(table_console(), document))


def _local_plan(
    release: Loaded[Release], fleet: Loaded[Fleet], now: datetime, remote: bool
) -> PlanDocument:
    """The plan of ``release`` through a Fleet file, computed here (wave times from the fleet
    database here, when embedded and there is one)."""
    from fleet.api.documents import PlanDocument
    from fleet.domain.manifests import release_fleet_findings
    from fleet.domain.model import fleet_info, release_info
    from fleet.domain.pace import Pace
    from fleet.domain.planner import plan as plan_rollout

    fleet_data = fleet_info(fleet.obj)
    release_data = release_info(release.obj)
    cross = release_fleet_findings(release, release_data, fleet_data)
    _report(cross)
    if any(f.severity == "error" for f in cross):
        raise typer.Exit(1)
    pace = Pace(()) if remote else _pace(fleet_data.name)
    result = plan_rollout(fleet_data, release_data, now, pace)
    return PlanDocument.model_validate({**result.as_dict(), "warnings": []})


def _now(at: str | None) -> datetime:
    from fleet.domain.fields import parse_time

    if at is None:
        return datetime.now(UTC)
    try:
        return parse_time(at)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--at") from None


def _pace(fleet: str) -> Pace:
    """The wave times of fleet ``fleet``, learnt from its finished waves in the fleet database;
    none learnt when there is no embedded database yet (a plan never creates one)."""
    from pydantic import ValidationError

    from fleet.db.engine import embedded_missing
    from fleet.domain.pace import Pace
    from fleet.service.errors import ServiceError, translated
    from fleet.service.scheduling.pacing import stored_pace
    from fleet.settings import DatabaseSettings

    try:
        with translated():
            missing = embedded_missing(DatabaseSettings())
    except (ValidationError, ServiceError):
        missing = False  # opening the database says what is wrong
    if missing:
        return Pace(())
    with fleet_context() as ctx:
        return stored_pace(ctx, fleet)


def _load(
    fleet: Path | None, release: Path
) -> tuple[Loaded[Release], Loaded[Fleet] | None, list[Finding]]:
    """Read the release and the fleet file (if any) with their warnings; on any error print
    every finding and exit 1."""
    from fleet.domain.errors import ManifestError
    from fleet.domain.fleet import Fleet
    from fleet.domain.manifests import load_one
    from fleet.domain.release import Release

    findings: list[Finding] = []
    loaded_fleet: Loaded[Fleet] | None = None
    loaded_release: Loaded[Release] | None = None
    if fleet is not None:
        try:
            loaded_fleet = load_one(fleet, Fleet)
        except ManifestError as exc:
            findings.extend(exc.findings)
    try:
        loaded_release = load_one(release, Release)
    except ManifestError as exc:
        findings.extend(exc.findings)
    if loaded_release is None or (fleet is not None and loaded_fleet is None):
        _report(findings)
        raise typer.Exit(1)
    warnings = list(loaded_fleet.warnings) if loaded_fleet is not None else []
    return loaded_release, loaded_fleet, warnings + loaded_release.warnings


def _report(findings: list[Finding]) -> None:
    console = Console(stderr=True, highlight=False)
    for finding in findings:
        style = "red" if finding.severity == "error" else "yellow"
        console.print(str(finding), style=style, markup=False, soft_wrap=True)


def _time(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None


def _span(seconds: float | None) -> timedelta | None:
    return None if seconds is None else timedelta(seconds=seconds)


def _target(target: dict[str, Any]) -> str:
    """A plan's target in one line (:meth:`fleet.domain.model.TargetInfo.describe`)."""
    from fleet.domain.model import TargetInfo

    classes = target.get("nodeClasses") or {}
    return TargetInfo(
        ami_selector_terms=tuple(target.get("amiSelectorTerms") or ()),
        kubernetes_version=target.get("kubernetesVersion"),
        node_class_names=tuple(classes.get("names") or ()),
        node_class_labels=dict(classes.get("matchLabels") or {}),
    ).describe()


def render(console: Console, result: PlanDocument) -> None:
    """Print a plan for people: rings, waves, clusters, then exclusions, policies, assumptions."""
    say = _printer(console)
    say(f"Release {result.release} through fleet {result.fleet}: {_target(result.target)}")
    total = (
        f"estimated {human(_span(result.estimated_seconds))}, until {when(_time(result.ends_at))}"
        if result.estimated_seconds is not None
        else "no estimate: some cluster has no window to start in"
    )
    say(f"Planned at {when(_time(result.at))}; {total}")
    say(f"Estimated from: {result.estimate_basis}")
    for ring in result.rings:
        say("")
        _ring(say, ring)
    if result.freezes:
        say("")
        say("Freezes (no step starts during them):")
        for freeze in result.freezes:
            reason = f": {freeze.reason}" if freeze.reason else ""
            say(f"  {when(_time(freeze.start))} to {when(_time(freeze.end))}{reason}")
    if result.excluded:
        say("")
        say("Excluded by spec.clusters:")
        for item in result.excluded:
            say(f"  {item.name} (ring {item.ring}): {item.reason}")
    say("")
    policies = result.policies
    say(
        f"Policies: unreachable clusters {_UNREACHABLE[policies['onUnreachable']]}; clusters "
        f"added during the rollout are {_ADDED[policies['onClusterAdded']]}; clusters removed "
        "are skipped"
    )
    say("Assumptions:")
    for line in result.assumptions:
        say(f"  - {line}")
    if result.notes:
        say("Notes:")
        for line in result.notes:
            say(f"  - {line}", "yellow")


_UNREACHABLE = {"fail": "fail (they count against the budget)", "skip": "are skipped"}
_ADDED = {"ignore": "ignored", "include": "included (if their ring has not finished)"}


def _printer(console: Console) -> _Say:
    def say(text: str, style: str | None = None) -> None:
        console.print(text, style=style, markup=False, soft_wrap=True)

    return say


class _Say(Protocol):
    """The shape of the line printer (text, optional style)."""

    def __call__(self, text: str, style: str | None = None) -> None:
        """Print one line."""


def _ring(say: _Say, ring: RingPlanDocument) -> None:
    if not ring.rolled or ring.wave_strategy is None:
        members = ", ".join(ring.clusters) or "no clusters"
        say(f"Ring {ring.name}: not rolled (the release does not list it): {members}")
        return
    approval = "; waits for approval (not counted)" if ring.waits_for_approval else ""
    say(
        f"Ring {ring.name}: {ring.wave_strategy}, soak {human(_span(ring.soak_seconds))}, "
        f"failure budget {ring.failure_budget}, on failure {ring.on_failure}{approval}"
    )
    say(f"  gates: {_gates(ring.gates or {})}")
    if not ring.waves:
        say(f"  {ring.note or ''}", "yellow")
        return
    for wave in ring.waves:
        took = (
            f"~{human(_span(wave.estimated_seconds))}"
            if wave.estimated_seconds is not None
            else "no estimate"
        )
        say(f"  wave {wave.index}: starts {when(_time(wave.starts_at))}, {took}")
        for cluster in wave.clusters:
            say(f"    {cluster.name} ({cluster.account}, {cluster.region}): {_window(cluster)}")


def _gates(gates: dict[str, Any]) -> str:
    parts = [
        f"converge within {human(_span(gates.get('convergenceTimeoutSeconds')))}",
        f"pending pods <= {gates.get('maxPendingPods')}",
        f"launch failures <= {gates.get('maxLaunchFailures')}",
    ]
    for metric in gates.get("metrics") or []:
        low, high = metric.get("min"), metric.get("max")
        bounds = [
            f">= {low:g}" if low is not None else "",
            f"<= {high:g}" if high is not None else "",
        ]
        parts.append(f"metric {metric['name']} {' '.join(b for b in bounds if b)}")
    return ", ".join(parts)


def _window(cluster: ClusterPlanDocument) -> str:
    from fleet.domain.windows import HORIZON

    window = cluster.window
    if window.open_now:
        state = "always open" if window.always_open else "window open now"
    elif window.next_open is not None:
        state = f"next window {when(_time(window.next_open))}"
    else:
        state = f"no window within {HORIZON.days} days"
    step = when(_time(cluster.starts_at)) if cluster.starts_at else "unknown"
    return f"{state}; step expected {step}"


def human(span: timedelta | None) -> str:
    """A span for people: ``1d 2h 30m``, ``22m 30s``, ``0s``."""
    if span is None:
        return "unknown"
    total = int(span.total_seconds())
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{n}{unit}" for n, unit in ((days, "d"), (hours, "h"), (minutes, "m"), (secs, "s"))]
    shown = [p for p in parts if not p.startswith("0")]
    return " ".join(shown) or "0s"
