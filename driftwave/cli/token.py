"""``driftwave token``: tokens for automation (create, list, revoke), kept hashed in the fleet
database.

Like every fleet command they act through a context's fleet API (``/v1/tokens``, role admin)
or, with no context, embedded on the fleet database of ``DRIFTWAVE_DATABASE_URL``, audited as
the OS user marked ``(embedded)``. Embedded is how the first admin token is made, where the
database's credentials are: whoever holds them is the fleet's root anyway, so the token
commands are not refused embedded on PostgreSQL as the other changing commands are; the audit
names them. The fleet's stack is imported inside the commands, so the help loads none of it.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from driftwave.cli.context import ContextOpt, fail, fleet_port
from driftwave.cli.group import Group, show_help_when_bare
from driftwave.cli.output import JsonOpt, OutputOpt, emit, output_format

token_app = typer.Typer(
    name="token",
    help="Tokens for automation: create (the secret is shown once), list and revoke.",
    cls=Group,
)
token_app.callback(invoke_without_command=True)(show_help_when_bare)


@token_app.command("create")
def token_create(
    name: Annotated[
        str, typer.Option(help="The token's name: the actor its actions are audited as.")
    ],
    role: Annotated[str, typer.Option(help="viewer, operator, approver or admin.")],
    rings: Annotated[
        list[str] | None,
        typer.Option("--rings", help="A ring it may approve (repeat; default: every ring)."),
    ] = None,
    expires_in: Annotated[
        str | None,
        typer.Option(help="How long it lives: 30d, 12h, 90m (default 90d, at most 365d)."),
    ] = None,
    context: ContextOpt = None,
    output: OutputOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Create a token for automation and print its secret, once: the database keeps only its
    SHA-256 hash. Send it as Authorization: Bearer <token>.

    Run embedded (no context) where the fleet database's credentials are, it makes the first
    admin.

    Example: driftwave token create --name ci --role operator --expires-in 30d
    """
    chosen = output_format(output, as_json)
    ring_list = [r for item in rings for r in item.split(",") if r] if rings else None
    from pydantic import ValidationError

    from fleet.api.tokens import CreateTokenRequest

    try:
        request = CreateTokenRequest.model_validate(
            {"name": name, "role": role, "rings": ring_list, "expiresIn": expires_in}
        )
    except ValidationError as exc:
        problem = exc.errors()[0]
        fail(f"--{'-'.join(str(p) for p in problem['loc'])}: {problem['msg']}")
    with fleet_port(context, changes=False) as fleet:
        made = fleet.create_token(request)
    emit(made.model_dump(mode="json"), chosen, table=_created)


def _created(document: dict[str, Any]) -> None:
    rings = ", ".join(document["rings"]) if document["rings"] is not None else "every ring"
    print(
        f"token {document['name']} created: role {document['role']}, approves {rings}, "
        f"expires {document['expiresAt']}",
        file=sys.stderr,
    )
    print("its secret (shown once; send it as Authorization: Bearer <token>):", file=sys.stderr)
    print(document["token"])


@token_app.command("list")
def token_list(
    context: ContextOpt = None,
    output: OutputOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List the tokens: name, role, rings, state (active, expired, revoked), who made each and
    when, when it expires and when it was last used. Never a secret nor a hash.

    Example: driftwave token list -o wide
    """
    chosen = output_format(output, as_json)
    with fleet_port(context, changes=False) as fleet:
        tokens = [t.model_dump(mode="json") for t in fleet.tokens()]
    emit(
        tokens, chosen, table=lambda rows: _table(rows, False), wide=lambda rows: _table(rows, True)
    )


def _table(tokens: list[dict[str, Any]], wide: bool) -> None:
    from rich.table import Table

    from driftwave.cli.output import table_console

    if not tokens:
        print("no tokens (driftwave token create --name NAME --role ROLE)")
        return
    columns = ["NAME", "ROLE", "RINGS", "STATE", "EXPIRES", "LAST USED"]
    if wide:
        columns += ["CREATED", "CREATED BY"]
    table = Table(*columns, box=None)
    for t in tokens:
        row = [
            t["name"],
            t["role"],
            ",".join(t["rings"]) if t["rings"] is not None else "*",
            t["state"],
            _day(t["expiresAt"]),
            _day(t["lastUsedAt"]) if t["lastUsedAt"] else "never",
        ]
        if wide:
            row += [_day(t["createdAt"]), t["createdBy"]]
        table.add_row(*row)
    table_console().print(table)


def _day(stamp: str) -> str:
    at = datetime.fromisoformat(stamp).astimezone(UTC)
    return at.strftime("%Y-%m-%d %H:%M")


@token_app.command("revoke")
def token_revoke(
    name: Annotated[str, typer.Argument(help="The token to revoke.")],
    context: ContextOpt = None,
) -> None:
    """Revoke a token: every later request with it gets 401 "token revoked". Revoking an
    already revoked token changes nothing.

    Example: driftwave token revoke ci
    """
    with fleet_port(context, changes=False) as fleet:
        revoked = fleet.revoke_token(name)
    print(f"token {revoked.name} revoked at {revoked.revoked_at:%Y-%m-%d %H:%M:%S} UTC")
