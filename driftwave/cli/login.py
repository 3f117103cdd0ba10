"""``driftwave login``: sign in to a context's fleet API with OIDC (:mod:`driftwave.client.oidc`),
storing the ID token, refresh token and expiry in the context (:mod:`driftwave.client.config`).

Only typer is imported here: the client loads when the command runs."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from driftwave.cli.context import fail


def login(
    context: Annotated[
        str | None,
        typer.Option(
            "--context",
            envvar="DRIFTWAVE_CONTEXT",
            help="The context to sign in to (default: the current one).",
            show_default=False,
        ),
    ] = None,
    device: Annotated[
        bool,
        typer.Option(
            "--device",
            help="Use the device flow: open the URL shown on any device and enter the code "
            "(when the provider offers it).",
        ),
    ] = False,
    browser: Annotated[
        bool, typer.Option(help="Open a browser on the sign-in URL (when there is one).")
    ] = True,
    port: Annotated[
        int, typer.Option(help="The loopback port of the redirect (0 picks a free one).", min=0)
    ] = 0,
    timeout: Annotated[
        float, typer.Option(help="Seconds to wait for the sign-in to finish.", min=1)
    ] = 300.0,
) -> None:
    """Sign in to a context's fleet API with OIDC; the ID token, the refresh token and the
    expiry are stored in the context (the commands renew an expired ID token themselves).

    The issuer and the CLI's client id are the context's (driftwave config set-context
    --oidc-issuer URL --oidc-client-id ID), else the server's (GET /v1/auth/config). By
    default: the authorization code flow with PKCE, redirected to a loopback address: the URL
    to open is printed, and a browser opened on it when there is one. --device uses the device
    flow instead. Tokens are never printed.

    Example: driftwave login --context prod
    """
    import webbrowser

    from driftwave.client import config as files
    from driftwave.client import oidc
    from driftwave.client.credentials import store
    from driftwave.client.errors import ClientError
    from driftwave.client.signin import sign_in_settings

    path = files.config_path()
    try:
        config = files.load(path)
    except ClientError as exc:
        fail(str(exc))
    name = context or config.current_context
    if not name or name == files.EMBEDDED:
        fail(
            "no context to sign in to (rule: name one with --context, or make one current: "
            "driftwave config use-context NAME)"
        )
    try:
        found = config.named(name, path)
        settings = sign_in_settings(found)

        def say(line: str) -> None:
            print(line, file=sys.stderr, flush=True)

        if device:
            user = oidc.device_login(settings, say)
        else:
            opener = webbrowser.open if browser else (lambda _url: False)
            user = oidc.browser_login(settings, say, opener, port=port, timeout=timeout)
        if found.oidc is None:  # keep where this sign-in came from, for refreshing it
            config = files.load(path)
            config.put(config.named(name, path).model_copy(update={"oidc": settings}))
            files.save(config, path)
        store(path, name, user)
    except ClientError as exc:
        fail(str(exc))
    print(f"signed in to context {name} (until {user.expiry or 'the provider says'})")
