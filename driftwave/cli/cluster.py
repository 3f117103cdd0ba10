"""``driftwave cluster``: one cluster across rollouts (``history``: every step any rollout took
on it, newest first, with images, nodes and outcome).

Read through the fleet API of the context in use, or the fleet database here (embedded). The
client is imported inside the commands, so ``driftwave cluster --help``
loads none of it."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from driftwave.cli.context import ContextOpt, fleet_port
from driftwave.cli.group import Group, show_help_when_bare
from driftwave.cli.output import JsonOpt, OutputOpt, emit, output_format, stamp, table_console

cluster_app = typer.Typer(
    name="cluster",
    help="One cluster across rollouts: every step taken on it, with images and outcomes.",
    cls=Group,
)
cluster_app.callback(invoke_without_command=True)(show_help_when_bare)

FAILED = {"failed", "timed-out", "unreachable"}


@cluster_app.command("history")
def history(
    name: Annotated[str, typer.Argument(help="The cluster's name (as in its Fleet).")],
    fleet: Annotated[
        str | None,
        typer.Option(help="The cluster's fleet (needed when several fleets have that name)."),
    ] = None,
    output: OutputOpt = None,
    as_json: JsonOpt = False,
    context: ContextOpt = None,
) -> None:
    """Show every step any rollout took on a cluster, newest first: rollout, release, ring,
    wave (from 1), step and rollback state, how the cluster stands now on the fleet's last
    observation (on target, regressed, rolled back; the observation's age above the table),
    image before and after, nodes and nodes replaced, when it started and finished, and its
    whole error.

    -o wide adds the step's id, attempts and the rollout's state; -o json and -o yaml print
    every field. An unknown cluster, or a name several fleets use without --fleet, exits 1.

    Example: driftwave cluster history prod-euc1 --fleet payments -o wide
    """
    chosen = output_format(output, as_json)
    from driftwave.client.port import dump

    with fleet_port(context, changes=False) as port:
        found = dump(port.cluster_history(name, fleet))
    emit(
        found, chosen, table=lambda data: _table(data, False), wide=lambda data: _table(data, True)
    )


def _table(found: dict[str, Any], wide: bool) -> None:
    console = table_console()
    steps = found["steps"]
    console.print(
        f"cluster {found['cluster']} of fleet {found['fleet']}: {len(steps)} step(s)",
        highlight=False,
    )
    seen = found.get("observed")
    console.print(f"now: {seen['text'] if seen else 'never observed'}", highlight=False)
    if not steps:
        return
    columns = ["ROLLOUT", "RELEASE", "RING", "WAVE", "STEP", "ROLLBACK", "NOW", "IMAGE", "NODES"]
    columns += ["REPLACED", "STARTED", "FINISHED"]
    if wide:
        columns += ["STEP ID", "ATTEMPTS", "ROLLOUT STATE"]
    table = Table(*columns, "ERROR", box=None)
    for step in steps:
        cells: list[str | Text] = [
            step["rollout"],
            step["release"],
            step["ring"],
            str(step["wave"]),
            Text(step["state"], style="red" if step["state"] in FAILED else ""),
            step["rollback"] or "",
            _now(step.get("now"), wide),
            f"{step['imageBefore'] or '?'} → {step['imageAfter'] or '?'}",
            _count(step["nodes"]),
            _count(step["nodesReplaced"]),
            stamp(step["startedAt"]),
            stamp(step["finishedAt"]),
        ]
        if wide:
            cells += [step["step"], str(step["attempts"]), step["rolloutState"]]
        cells.append(Text(step["error"] or "", style="red" if step["state"] in FAILED else ""))
        table.add_row(*cells)
    console.print(table)


def _now(now: dict[str, Any] | None, wide: bool) -> Text:
    """How the cluster stands now for this step: the word (``rolled-back``, ``on-target``,
    ``regressed``, ``superseded``...), with -o wide the whole message; what the cluster runs and
    the observation's age are on the ``now:`` line above the table."""
    if not now:
        return Text("")
    style = {"regressed": "red", "rolled-back": "yellow", "on-target": "green"}
    holding = str(now["holding"])
    if not wide:
        return Text(holding, style=style.get(holding, "dim"))
    if holding == "superseded":
        return Text(f"superseded by {now['supersededBy']}", style="dim")
    return Text(str(now["message"]), style=style.get(holding, ""))


def _count(value: int | None) -> str:
    return "" if value is None else str(value)
