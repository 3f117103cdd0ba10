"""``driftwave token``: tokens for automation (create, list, revoke), kept hashed in the fleet
database.

With ``--server URL`` (or ``DRIFTWAVE_SERVER``) the commands are clients of the fleet API's
``/v1/tokens`` (an admin's bearer token in ``DRIFTWAVE_TOKEN``); without it they run embedded,
on the fleet database of ``DRIFTWAVE_DATABASE_URL``, through the service layer, audited as the
OS user marked ``(embedded)``: that is how the first admin token is made, where the database's
credentials are. The fleet's stack is imported inside the commands, so the help loads none of
it.
"""

from __future__ import annotations

import getpass
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

import typer

from driftwave.cli.context import fail, fleet_context, run
from driftwave.cli.group import Group, show_help_when_bare
from driftwave.cli.output import JsonOpt, OutputOpt, emit, output_format

token_app = typer.Typer(
    name="token",
    help="Tokens for automation: create (the secret is shown once), list and revoke.",
    cls=Group,
)
token_app.callback(invoke_without_command=True)(show_help_when_bare)

ServerOpt = Annotated[
    str | None,
    typer.Option(
        "--server",
        envvar="DRIFTWAVE_SERVER",
        help="The fleet API (https://...); its admin token in $DRIFTWAVE_TOKEN. Without it the "
        "command runs on the fleet database (DRIFTWAVE_DATABASE_URL) directly.",
        show_default=False,
    ),
]
CaOpt = Annotated[
    Path | None,
    typer.Option("--ca-file", help="The CA bundle the server's certificate is checked against."),
]


def embedded_actor() -> str:
    """The OS user, marked embedded: ``alice (embedded)``."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user} (embedded)"


def call_api(
    server: str, ca_file: Path | None, method: str, path: str, body: dict[str, Any] | None = None
) -> Any:
    """One request to the fleet API at ``server`` with ``$DRIFTWAVE_TOKEN``; the answer's JSON,
    or ``error: <the API's message>`` and exit 1."""
    import httpx

    token = os.environ.get("DRIFTWAVE_TOKEN", "").strip()
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    verify: str | bool = str(ca_file) if ca_file is not None else True
    try:
        with httpx.Client(base_url=server.rstrip("/"), verify=verify, timeout=30) as client:
            answer = client.request(method, path, json=body, headers=headers)
    except httpx.HTTPError as exc:
        fail(f"cannot reach {server}: {exc}")
    try:
        data = answer.json()
    except ValueError:
        data = None
    if answer.status_code >= 400:
        error = data.get("error", {}) if isinstance(data, dict) else {}
        message = error.get("message") if isinstance(error, dict) else None
        fail(f"{answer.status_code}: {message or answer.text[:200]}")
    return data


def _embedded(action: Callable[[Any], Any]) -> Any:
    from fleet.db.errors import AlreadyExists, InvalidInput

    with fleet_context() as ctx:
        try:
            return run(lambda: action(ctx))
        except (InvalidInput, AlreadyExists) as exc:
            fail(str(exc))


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
    server: ServerOpt = None,
    ca_file: CaOpt = None,
    output: OutputOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Create a token for automation and print its secret, once: the database keeps only its
    SHA-256 hash. Send it as Authorization: Bearer <token>.

    Run where the fleet database's credentials are (no --server), it makes the first admin.

    Example: driftwave token create --name ci --role operator --expires-in 30d
    """
    chosen = output_format(output, as_json)
    ring_list = [r for item in rings for r in item.split(",") if r] if rings else None
    if server is not None:
        body = {"name": name, "role": role, "rings": ring_list, "expiresIn": expires_in}
        document = call_api(server, ca_file, "POST", "/v1/tokens", body)
    else:
        from fleet.api.tokens import token_document
        from fleet.service.tokens import create_token, parse_expiry

        try:
            lifetime = parse_expiry(expires_in) if expires_in is not None else None
        except ValueError as exc:
            fail(f"--expires-in: {exc}")

        def make(ctx: Any) -> dict[str, Any]:
            made = create_token(
                ctx, name, role, actor=embedded_actor(), rings=ring_list, expires_in=lifetime
            )
            return {**token_document(made.info, ctx.now()), "token": made.secret}

        document = _embedded(make)
    emit(document, chosen, table=_created)


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
    server: ServerOpt = None,
    ca_file: CaOpt = None,
    output: OutputOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List the tokens: name, role, rings, state (active, expired, revoked), who made each and
    when, when it expires and when it was last used. Never a secret nor a hash.

    Example: driftwave token list -o wide
    """
    chosen = output_format(output, as_json)
    if server is not None:
        tokens = call_api(server, ca_file, "GET", "/v1/tokens")["tokens"]
    else:
        from fleet.api.tokens import token_document
        from fleet.service.tokens import list_tokens

        tokens = _embedded(lambda ctx: [token_document(t, ctx.now()) for t in list_tokens(ctx)])
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
    server: ServerOpt = None,
    ca_file: CaOpt = None,
) -> None:
    """Revoke a token: every later request with it gets 401 "token revoked". Revoking an
    already revoked token changes nothing.

    Example: driftwave token revoke ci
    """
    if server is not None:
        document = call_api(server, ca_file, "DELETE", f"/v1/tokens/{quote(name, safe='')}")
    else:
        from fleet.api.tokens import token_document
        from fleet.service.tokens import revoke_token

        document = _embedded(
            lambda ctx: token_document(revoke_token(ctx, name, actor=embedded_actor()), ctx.now())
        )
    print(f"token {document['name']} revoked at {document['revokedAt']}")
