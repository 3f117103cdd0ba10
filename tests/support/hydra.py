"""A real OpenID Connect provider on loopback for the sign-on tests: ory/hydra v2.3.0 (OpenID
Certified), built by ``make tools`` into ``.tools/bin/hydra`` from the pinned module in
``tools/hydra``.

hydra issues and signs the tokens, serves discovery and its keys, checks PKCE, redirect URIs,
CSRF cookies and refresh tokens; by design it has no users and no pages of its own: an operator
brings a login and a consent application, which hydra redirects the browser to and which tell
hydra's admin API who signed in and what they granted. :class:`LoginApp` is that application
for the tests (its own code: a few pages, not an identity store): the people a test adds with
:meth:`Hydra.add_person`, signed in either through a form (``#username``, ``#sign-in``: what a
browser test fills in) or at once as the person named by :meth:`Hydra.sign_in_next` (for a flow
an HTTP client follows). Consent is always granted, with the person's ``email``, ``name`` and
``groups`` as claims of the ID token.

:func:`running_hydra` starts both on free loopback ports (hydra's state in SQLite in memory)
and stops them (hydra through :mod:`tests.support.groups`, also when its start fails);
:meth:`Hydra.register_client` adds an OAuth 2 client; :meth:`Hydra.sign_in` runs a whole
authorization code flow with PKCE as an HTTP client and answers the tokens;
:meth:`Hydra.complete` follows an authorization URL someone else made (the CLI's ``login``)
through the login pages to its redirect URI.
"""

from __future__ import annotations

import base64
import hashlib
import html
import os
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx

from common.ports import free_ports
from tests.support.groups import ProcessGroups, Started
from tests.support.required import unavailable

ROOT = Path(__file__).resolve().parents[2]
BINARY = ROOT / ".tools" / "bin" / "hydra"
SCOPES = "openid offline_access email profile"


@dataclass(frozen=True)
class Person:
    """Someone who can sign in: the subject, and the claims the ID token carries."""

    username: str
    groups: tuple[str, ...] = ()
    email: str = ""
    name: str = ""

    def claims(self) -> dict[str, object]:
        """The ID token's claims beyond hydra's own (``groups`` as a list)."""
        return {
            "email": self.email or f"{self.username}@example.com",
            "email_verified": True,
            "name": self.name or self.username,
            "groups": list(self.groups),
        }


@dataclass(frozen=True)
class Tokens:
    """What the token endpoint answered."""

    id_token: str
    access_token: str
    refresh_token: str | None
    expires_in: int


class HydraError(RuntimeError):
    """hydra or the login application did not do what a test asked (what, and what it said)."""


@dataclass
class LoginApp:
    """The login and consent pages hydra sends the browser to (see the module docstring)."""

    admin: str
    people: dict[str, Person] = field(default_factory=dict)
    next_person: Person | None = None
    port: int = 0
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        """Where the pages are served."""
        return f"http://127.0.0.1:{self.port}"

    def start(self, port: int) -> None:
        """Serve the pages on ``port`` (a thread; :meth:`stop` ends it)."""
        app = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                """Quiet: the test's own output stays readable."""

            def do_GET(self) -> None:
                app.get(self)

            def do_POST(self) -> None:
                app.post(self)

        self.port = port
        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        """Stop serving."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def get(self, request: BaseHTTPRequestHandler) -> None:
        """``/login`` (a form, or at once as :attr:`next_person`) and ``/consent``."""
        parts = urlsplit(request.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        if parts.path == "/login" and "login_challenge" in query:
            challenge = query["login_challenge"]
            wanted = self._admin("GET", "login", challenge)
            if wanted.get("skip"):
                self._redirect(request, self._accept_login(challenge, str(wanted["subject"])))
            elif self.next_person is not None:
                person, self.next_person = self.next_person, None
                self._redirect(request, self._accept_login(challenge, person.username))
            else:
                self._form(request, challenge, "")
        elif parts.path == "/consent" and "consent_challenge" in query:
            self._redirect(request, self._consent(query["consent_challenge"]))
        else:
            request.send_error(404)

    def post(self, request: BaseHTTPRequestHandler) -> None:
        """The login form: signs in a known person, shows the form again for anyone else."""
        length = int(request.headers.get("Content-Length") or 0)
        form = {k: v[0] for k, v in parse_qs(request.rfile.read(length).decode()).items()}
        challenge, username = form.get("challenge", ""), form.get("username", "")
        if username not in self.people:
            self._form(request, challenge, f"unknown user {username!r}")
            return
        self._redirect(request, self._accept_login(challenge, username))

    def _accept_login(self, challenge: str, subject: str) -> str:
        done = self._admin("PUT", "login", challenge, {"subject": subject, "remember": False})
        return str(done["redirect_to"])

    def _consent(self, challenge: str) -> str:
        wanted = self._admin("GET", "consent", challenge)
        person = self.people[str(wanted["subject"])]
        body = {
            "grant_scope": wanted.get("requested_scope") or [],
            "grant_access_token_audience": wanted.get("requested_access_token_audience") or [],
            "remember": False,
            "session": {"id_token": person.claims(), "access_token": person.claims()},
        }
        return str(self._admin("PUT", "consent", challenge, body)["redirect_to"])

    def _admin(
        self, method: str, flow: str, challenge: str, body: dict[str, object] | None = None
    ) -> dict[str, object]:
        path = f"/admin/oauth2/auth/requests/{flow}" + ("/accept" if method == "PUT" else "")
        answer = httpx.request(
            method,
            self.admin + path,
            params={f"{flow}_challenge": challenge},
            json=body,
            timeout=30,
        )
        if answer.status_code >= 400:
            raise HydraError(f"hydra {method} {path}: {answer.status_code} {answer.text}")
        result: dict[str, object] = answer.json()
        return result

    @staticmethod
    def _redirect(request: BaseHTTPRequestHandler, location: str) -> None:
        request.send_response(302)
        request.send_header("Location", location)
        request.send_header("Content-Length", "0")
        request.end_headers()

    @staticmethod
    def _form(request: BaseHTTPRequestHandler, challenge: str, problem: str) -> None:
        page = (
            "<!doctype html><title>Sign in</title><h1>Sign in</h1>"
            + (f"<p id='problem'>{html.escape(problem)}</p>" if problem else "")
            + "<form method='post' action='/login'>"
            f"<input type='hidden' name='challenge' value='{html.escape(challenge)}'>"
            "<label>Username <input id='username' name='username'></label>"
            "<button id='sign-in' type='submit'>Sign in</button></form>"
        ).encode()
        request.send_response(200)
        request.send_header("Content-Type", "text/html; charset=utf-8")
        request.send_header("Content-Length", str(len(page)))
        request.end_headers()
        request.wfile.write(page)


@dataclass
class Hydra:
    """A running hydra and its login pages (see the module docstring)."""

    issuer: str
    admin: str
    login: LoginApp

    def add_person(self, person: Person) -> Person:
        """Someone who may sign in from now on."""
        self.login.people[person.username] = person
        return person

    def sign_in_next(self, person: Person) -> None:
        """The next login request signs ``person`` in at once, without the form."""
        self.login.people[person.username] = person
        self.login.next_person = person

    def register_client(
        self,
        client_id: str,
        redirect_uris: list[str],
        *,
        secret: str | None = None,
        scope: str = SCOPES,
    ) -> None:
        """An OAuth 2 client of the authorization code flow (and refresh tokens): public (PKCE,
        no secret) unless ``secret`` is given."""
        body: dict[str, object] = {
            "client_id": client_id,
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "redirect_uris": redirect_uris,
            "scope": scope,
            "token_endpoint_auth_method": "client_secret_basic" if secret else "none",
        }
        if secret:
            body["client_secret"] = secret
        answer = httpx.post(self.admin + "/admin/clients", json=body, timeout=30)
        if answer.status_code >= 400:
            raise HydraError(f"registering client {client_id}: {answer.status_code} {answer.text}")

    def complete(self, authorize_url: str, person: Person, *, visit_redirect: bool = True) -> str:
        """Follow ``authorize_url`` through the login and consent pages as ``person`` until the
        provider redirects outside itself; request that last URL too when ``visit_redirect``
        (the CLI's loopback listener gets its code so). Answers that URL."""
        self.sign_in_next(person)
        ours = (self.issuer, self.login.url)
        with httpx.Client(timeout=30) as browser:
            url = authorize_url
            for _ in range(20):
                answer = browser.get(url)
                location = answer.headers.get("Location")
                if answer.status_code not in (302, 303) or location is None:
                    raise HydraError(f"{url}: {answer.status_code} {answer.text[:500]}")
                url = str(httpx.URL(url).join(location))
                if not url.startswith(ours):
                    if visit_redirect:
                        httpx.get(url, timeout=30)
                    return url
        raise HydraError(f"{authorize_url}: more than 20 redirects")

    def sign_in(
        self, person: Person, client_id: str, redirect_uri: str, *, scope: str = SCOPES
    ) -> Tokens:
        """A whole authorization code flow with PKCE for a public client: the tokens issued to
        ``person``."""
        verifier = secrets.token_urlsafe(48)
        challenge = (
            base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
            .rstrip(b"=")
            .decode()
        )
        state = secrets.token_urlsafe(16)
        query = {
            "client_id": client_id,
            "response_type": "code",
            "redirect_uri": redirect_uri,
            "scope": scope,
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
        landed = self.complete(
            f"{self.issuer}/oauth2/auth?{urlencode(query)}", person, visit_redirect=False
        )
        answer = {k: v[0] for k, v in parse_qs(urlsplit(landed).query).items()}
        if answer.get("state") != state or "code" not in answer:
            raise HydraError(f"the flow ended at {landed} without a code for this state")
        tokens = httpx.post(
            f"{self.issuer}/oauth2/token",
            data={
                "grant_type": "authorization_code",
                "code": answer["code"],
                "redirect_uri": redirect_uri,
                "client_id": client_id,
                "code_verifier": verifier,
            },
            timeout=30,
        )
        if tokens.status_code >= 400:
            raise HydraError(f"token endpoint: {tokens.status_code} {tokens.text}")
        got = tokens.json()
        return Tokens(
            id_token=got["id_token"],
            access_token=got["access_token"],
            refresh_token=got.get("refresh_token"),
            expires_in=int(got.get("expires_in", 0)),
        )


def require_hydra() -> Path:
    """The hydra binary; when ``make tools`` has not built it, a failed test in CI and a
    skipped one elsewhere."""
    if not BINARY.is_file():
        unavailable(f"{BINARY} is missing: run make tools (it builds ory/hydra)")
    return BINARY


@contextmanager
def running_hydra(folder: Path, *, id_token_lifespan: str = "1h") -> Iterator[Hydra]:
    """hydra and its login pages on free loopback ports, logging into ``folder/hydra.log``;
    ID and access tokens live ``id_token_lifespan`` (hydra's duration syntax: ``30s``, ``1h``).

    A free port is free when picked, not when hydra binds it: another process may take it in
    between. hydra then exits saying the address is in use, and it is started again on other
    ports (three tries)."""
    binary = require_hydra()
    for attempt in range(3):
        groups = ProcessGroups(folder, die_with_parent=True)
        login: LoginApp | None = None
        try:
            public, admin, pages = free_ports(3)
            issuer, admin_url = f"http://127.0.0.1:{public}", f"http://127.0.0.1:{admin}"
            try:
                login = LoginApp(admin=admin_url)
                login.start(pages)
                env = _environment(folder, issuer, login.url, public, admin, id_token_lifespan)
                # --dev: an http:// issuer on loopback (hydra otherwise demands TLS)
                started = groups.started("hydra", [str(binary), "serve", "all", "--dev"], env=env)
                _wait_ready(started, admin_url)
            except (_PortTaken, OSError):
                if attempt == 2:
                    raise
                continue
            yield Hydra(issuer=issuer, admin=admin_url, login=login)
            return
        finally:
            report = groups.stop(grace=10)
            if login is not None:
                login.stop()
            if not report.clean:
                raise HydraError(f"hydra did not stop: {report.describe()}")


def _environment(
    folder: Path, issuer: str, pages: str, public: int, admin: int, lifespan: str
) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(folder),
        "DSN": "memory",
        "URLS_SELF_ISSUER": issuer,
        "URLS_LOGIN": f"{pages}/login",
        "URLS_CONSENT": f"{pages}/consent",
        "SECRETS_SYSTEM": secrets.token_hex(24),
        "SERVE_PUBLIC_HOST": "127.0.0.1",
        "SERVE_PUBLIC_PORT": str(public),
        "SERVE_ADMIN_HOST": "127.0.0.1",
        "SERVE_ADMIN_PORT": str(admin),
        "TTL_ID_TOKEN": lifespan,
        "TTL_ACCESS_TOKEN": lifespan,
        "LOG_LEVEL": "warn",
    }


class _PortTaken(HydraError):
    """hydra exited because one of its ports was taken after it was picked."""


def _wait_ready(hydra: Started, admin: str) -> None:
    """Wait until hydra's admin API is ready."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if hydra.exited():
            kind = _PortTaken if hydra.port_taken() else HydraError
            raise kind(f"hydra exited {hydra.child.returncode}:\n{hydra.said()}")
        try:
            if httpx.get(admin + "/health/ready", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise HydraError(f"hydra did not become ready in 90 s:\n{hydra.said()}")
