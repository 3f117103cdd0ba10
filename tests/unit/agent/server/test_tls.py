"""The agent's HTTPS (:mod:`agent.server.tls`): plain HTTP only on loopback, the TLS options
checked together, a certificate rotated the way the kubelet updates a mounted Secret (a symlink
swapped to a new folder) served to new handshakes without a restart, a half-written pair kept
out, and mutual TLS refusing ``/v1`` without a client certificate while the probes answer."""

from __future__ import annotations

import os
import shutil
import ssl
from pathlib import Path

import httpx
import pytest

from agent.server.serve import ServeError, ServeOptions, serve
from agent.server.tls import (
    ReloadingTLS,
    TLSFiles,
    TLSSetupError,
    listen_problem,
    tls_options_problems,
)
from common.addresses import is_loopback
from tests.support.kubeobjects import eventually
from tests.support.tlsagent import AUTH, tls_agent
from tests.support.tlsca import Issued, TestCA, served_serial


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"])
def test_loopback_may_serve_plain_http(host: str) -> None:
    assert is_loopback(host)
    assert listen_problem(host, None) is None


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.7", "agents"])
def test_plain_http_off_loopback_is_refused_naming_the_option_and_the_rule(host: str) -> None:
    problem = listen_problem(host, None)
    assert problem is not None
    assert problem.startswith(f"--host {host}: plain HTTP is served on loopback only")
    assert "give --tls-cert-file and --tls-key-file" in problem
    assert listen_problem(host, TLSFiles(Path("c"), Path("k"))) is None


def test_serve_refuses_plain_http_off_loopback_before_anything_starts() -> None:
    said: list[str] = []
    with pytest.raises(ServeError) as refused:
        serve(ServeOptions(host="0.0.0.0", port=0, nodes=1, token="t"), said.append)
    assert refused.value.problems == [listen_problem("0.0.0.0", None)]
    assert said == []


def test_tls_options_go_together() -> None:
    assert tls_options_problems(Path("c"), None, None) == [
        "--tls-key-file: required with --tls-cert-file (rule: give both or neither)"
    ]
    assert tls_options_problems(None, Path("k"), None) == [
        "--tls-cert-file: required with --tls-key-file (rule: give both or neither)"
    ]
    assert tls_options_problems(None, None, Path("ca"))[0].startswith(
        "--client-ca-file: mutual TLS needs the agent to serve TLS"
    )
    assert tls_options_problems(Path("c"), Path("k"), Path("ca")) == []


def test_unusable_tls_files_are_refused_naming_the_option(tmp_path: Path) -> None:
    ca = TestCA(tmp_path)
    one, two = ca.issue("one"), ca.issue("two")
    with pytest.raises(TLSSetupError, match=r"^--tls-cert-file: cannot read .*missing"):
        ReloadingTLS(TLSFiles(tmp_path / "missing", one.key))
    with pytest.raises(TLSSetupError, match="are not a PEM certificate chain and its private key"):
        ReloadingTLS(TLSFiles(one.cert, two.key))
    with pytest.raises(TLSSetupError, match=r"--client-ca-file: .* holds no PEM certificate"):
        ReloadingTLS(TLSFiles(one.cert, one.key, one.key))
    options = ServeOptions(port=0, nodes=1, token="t", tls_cert_file=one.cert, tls_key_file=two.key)
    with pytest.raises(ServeError, match="--tls-cert-file / --tls-key-file"):
        serve(options, lambda _line: None)


class MountedSecret:
    """A folder laid out as the kubelet mounts a Secret: ``tls.crt`` and ``tls.key`` link to
    ``..data/``, itself a link to a timestamped folder, swapped atomically on each update."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir()
        self.version = 0

    def publish(self, cert: Path, key: Path) -> None:
        self.version += 1
        current = self.folder / f"..2026_11_28_{self.version:02d}"
        current.mkdir()
        shutil.copy(cert, current / "tls.crt")
        shutil.copy(key, current / "tls.key")
        data, staged = self.folder / "..data", self.folder / "..data_tmp"
        old = os.readlink(data) if data.is_symlink() else None
        staged.symlink_to(current.name)
        os.replace(staged, data)  # the kubelet's atomic swap
        for name in ("tls.crt", "tls.key"):
            if not (self.folder / name).is_symlink():
                (self.folder / name).symlink_to(f"..data/{name}")
        if old is not None:
            shutil.rmtree(self.folder / old)

    @property
    def files(self) -> TLSFiles:
        return TLSFiles(self.folder / "tls.crt", self.folder / "tls.key")


def test_a_rotated_secret_is_served_to_new_handshakes_without_a_restart(tmp_path: Path) -> None:
    ca = TestCA(tmp_path)
    first, second = ca.issue("first"), ca.issue("second")
    secret = MountedSecret(tmp_path / "secret")
    secret.publish(first.cert, first.key)
    with tls_agent(secret.files) as (agent, tls):
        assert agent.url.startswith("https://127.0.0.1:")
        assert served_serial("127.0.0.1", agent.port, ca.ca_file) == first.serial
        with httpx.Client(verify=ssl.create_default_context(cafile=ca.ca_file)) as client:
            kept = client.get(f"{agent.url}/v1/status", headers=AUTH)
            assert kept.status_code == 200
            secret.publish(second.cert, second.key)
            eventually(lambda: tls.reloads == 1, 30)
            assert served_serial("127.0.0.1", agent.port, ca.ca_file) == second.serial
            assert client.get(f"{agent.url}/v1/status", headers=AUTH).status_code == 200
        assert tls.last_error is None


def test_a_half_updated_pair_keeps_the_served_certificate_until_it_matches(
    tmp_path: Path,
) -> None:
    ca = TestCA(tmp_path)
    first, second = ca.issue("first"), ca.issue("second")
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    shutil.copy(first.cert, cert)
    shutil.copy(first.key, key)
    said: list[str] = []
    tls = ReloadingTLS(TLSFiles(cert, key), say=said.append)
    assert not tls.reload_if_changed(), "nothing changed yet"
    shutil.copy(second.cert, cert)  # the certificate is new, the key not yet
    assert not tls.reload_if_changed()
    assert tls.last_error is not None
    assert "not a PEM certificate chain" in tls.last_error
    assert said == [f"TLS: keeping the certificate served: {tls.last_error}"]
    assert not tls.reload_if_changed()
    assert len(said) == 1, "the same problem is said once"
    shutil.copy(second.key, key)
    assert tls.reload_if_changed()
    assert tls.reloads == 1
    assert tls.last_error is None, "a pair that loads clears the problem"
    assert said[-1] == f"TLS: loaded the new certificate from {cert}"


def _client(ca: TestCA, certificate: Issued | None = None) -> httpx.Client:
    context = ssl.create_default_context(cafile=ca.ca_file)
    if certificate is not None:
        context.load_cert_chain(certificate.cert, certificate.key)
    return httpx.Client(verify=context, timeout=10)


def test_mutual_tls_needs_a_client_certificate_for_the_api_not_for_the_probes(
    tmp_path: Path,
) -> None:
    ca = TestCA(tmp_path)
    served, client = ca.issue("agent"), ca.issue("fleet", client=True)
    with tls_agent(TLSFiles(served.cert, served.key, ca.ca_file)) as (agent, _):
        with _client(ca) as anonymous:
            assert anonymous.get(f"{agent.url}/healthz").status_code == 200
            assert anonymous.get(f"{agent.url}/readyz").status_code == 200
            refused = anonymous.get(f"{agent.url}/v1/status", headers=AUTH)
            assert refused.status_code == 401
            assert refused.json()["error"]["code"] == "client_certificate_required"
            assert "requires a client certificate (mutual TLS)" in refused.text
        with _client(ca, client) as fleet:
            assert fleet.get(f"{agent.url}/v1/status", headers=AUTH).status_code == 200
            untokened = fleet.get(f"{agent.url}/v1/status")
            assert untokened.status_code == 401, "the bearer token stays the authorisation"
            assert untokened.json()["error"]["code"] == "unauthorized"
        stranger = TestCA(tmp_path, "stranger").issue("intruder", client=True)
        with _client(ca, stranger) as intruder, pytest.raises(httpx.TransportError):
            intruder.get(f"{agent.url}/v1/status", headers=AUTH)
