"""The fleet's TLS to its agents over a real HTTPS agent on loopback (:mod:`fleet.agenttls`
through :class:`~fleet.gateway.HttpAgentGateway`): the CA of the Fleet entry's ``caRef`` is
the only one trusted; a wrong CA, an expired certificate, a certificate for another host, a
plain HTTP agent and a missing client certificate (mutual TLS) are each refused with their
reason in plain words, taken from OpenSSL's verify code or the agent's error code; a client
certificate the agent refuses (it only closes the connection) is unreachable with a hint; the
bearer token stays the authorisation on top."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
from opentelemetry.trace import NoOpTracer

from agent.server.tls import TLSFiles
from fleet.agentport import AgentRejected, AgentTarget, AgentTLSRefused, AgentUnreachable
from fleet.agenttls import (
    CLIENT_CERTIFICATE_REFUSED_HINT,
    AgentTLS,
    TLSFailure,
    explain,
    tls_failure,
)
from fleet.gateway import HttpAgentGateway
from tests.support.tlsagent import TOKEN, tls_agent
from tests.support.tlsca import TestCA


def _gateway() -> HttpAgentGateway:
    return HttpAgentGateway(NoOpTracer(), timeout=10)


def _target(url: str, tls: AgentTLS | None, tmp_path: Path) -> AgentTarget:
    (tmp_path / "token").write_text(TOKEN + "\n")
    return AgentTarget("prod-1", url, f"file:{tmp_path / 'token'}", tls=tls)


def _refusal(target: AgentTarget) -> AgentTLSRefused:
    gateway = _gateway()
    try:
        with pytest.raises(AgentTLSRefused) as refused:
            gateway.status(target)
    finally:
        gateway.close()
    return refused.value


@pytest.fixture
def ca(tmp_path: Path) -> TestCA:
    return TestCA(tmp_path, "fleet-ca")


def test_an_agent_signed_by_the_ca_in_caref_answers(ca: TestCA, tmp_path: Path) -> None:
    served = ca.issue("agent")
    with tls_agent(TLSFiles(served.cert, served.key)) as (agent, _):
        tls = AgentTLS(ca_ref=f"file:{ca.ca_file}")
        gateway = _gateway()
        assert gateway.status(_target(agent.url, tls, tmp_path)).cluster == "prod-1"
        gateway.close()


def test_a_wrong_ca_an_expired_certificate_and_another_hosts_certificate_are_refused(
    ca: TestCA, tmp_path: Path
) -> None:
    other = TestCA(tmp_path, "other-ca")
    tls = AgentTLS(ca_ref=f"file:{ca.ca_file}")
    cases = [
        (ca.issue("good"), AgentTLS(ca_ref=f"file:{other.ca_file}"), TLSFailure.UNTRUSTED,
         "TLS: certificate verify failed: the agent's certificate is not signed by the CA in "
         "caRef"),
        (ca.issue("old", expired=True), tls, TLSFailure.EXPIRED,
         "TLS: certificate verify failed: the agent's certificate expired"),
        (ca.issue("elsewhere", hosts=("agent.example.internal",)), tls, TLSFailure.WRONG_HOST,
         "TLS: certificate verify failed: the agent's certificate is not for 127.0.0.1"),
        (ca.issue("public"), None, TLSFailure.UNTRUSTED,
         "the agent's certificate is not signed by the system's CAs (no caRef)"),
    ]  # fmt: skip
    for served, trusted, failure, reason in cases:
        with tls_agent(TLSFiles(served.cert, served.key)) as (agent, _):
            refused = _refusal(_target(agent.url, trusted, tmp_path))
        assert refused.failure is failure
        assert reason in refused.reason
        assert str(refused).startswith("reading the agent's status on cluster prod-1: TLS: ")
        assert isinstance(refused, AgentRejected), "the step fails: retrying cannot help"


def test_mutual_tls_without_and_with_the_fleets_client_certificate(
    ca: TestCA, tmp_path: Path
) -> None:
    served, client = ca.issue("agent"), ca.issue("fleet", client=True)
    with tls_agent(TLSFiles(served.cert, served.key, ca.ca_file)) as (agent, _):
        refused = _refusal(_target(agent.url, AgentTLS(ca_ref=f"file:{ca.ca_file}"), tmp_path))
        assert refused.failure is TLSFailure.CLIENT_CERTIFICATE_REQUIRED
        assert refused.reason == (
            "TLS: the agent requires a client certificate (mutual TLS) and the fleet sent none "
            "(set clientCertificateRef and clientKeyRef)"
        )
        mutual = AgentTLS(f"file:{ca.ca_file}", f"file:{client.cert}", f"file:{client.key}")
        gateway = _gateway()
        assert gateway.status(_target(agent.url, mutual, tmp_path)).cluster == "prod-1"
        wrong_token = AgentTarget("prod-1", agent.url, "env:DRIFTWAVE_NO_SUCH_TOKEN", tls=mutual)
        with pytest.raises(AgentRejected, match="DRIFTWAVE_NO_SUCH_TOKEN is not set"):
            gateway.status(wrong_token)
        stranger = TestCA(tmp_path, "stranger").issue("intruder", client=True)
        refused_client = AgentTLS(f"file:{ca.ca_file}", f"file:{stranger.cert}",
                                  f"file:{stranger.key}")  # fmt: skip
        with pytest.raises(AgentUnreachable) as closed:
            gateway.status(_target(agent.url, refused_client, tmp_path))
        assert closed.value.reason.endswith(CLIENT_CERTIFICATE_REFUSED_HINT)
        gateway.close()


def test_a_plain_http_agent_behind_an_https_endpoint_is_named(ca: TestCA, tmp_path: Path) -> None:
    from tests.support.tlsagent import plain_agent

    with plain_agent() as agent:
        https = agent.url.replace("http://", "https://")
        refused = _refusal(_target(https, AgentTLS(ca_ref=f"file:{ca.ca_file}"), tmp_path))
    assert refused.failure is TLSFailure.NOT_TLS
    assert "the agent does not speak TLS on this port" in refused.reason


def test_unreadable_or_wrong_tls_documents_name_their_field(ca: TestCA, tmp_path: Path) -> None:
    gateway = _gateway()
    missing = AgentTLS(ca_ref=f"file:{tmp_path / 'nope.crt'}")
    with pytest.raises(AgentRejected, match=r"cluster prod-1: caRef file:.*cannot read the file"):
        gateway.status(_target("https://127.0.0.1:1", missing, tmp_path))
    (tmp_path / "junk.crt").write_text("not a certificate\n")
    junk = AgentTLS(ca_ref=f"file:{tmp_path / 'junk.crt'}")
    with pytest.raises(AgentRejected, match="caRef: not a PEM bundle of CA certificates"):
        gateway.status(_target("https://127.0.0.1:1", junk, tmp_path))
    client = ca.issue("fleet", client=True)
    other = ca.issue("other", client=True)
    mismatched = AgentTLS(f"file:{ca.ca_file}", f"file:{client.cert}", f"file:{other.key}")
    with pytest.raises(AgentRejected, match="clientCertificateRef / clientKeyRef: not a PEM"):
        gateway.status(_target("https://127.0.0.1:1", mismatched, tmp_path))
    gateway.close()


@pytest.mark.parametrize(
    ("code", "failure"),
    [
        (10, TLSFailure.EXPIRED),
        (9, TLSFailure.NOT_YET_VALID),
        (20, TLSFailure.UNTRUSTED),
        (19, TLSFailure.UNTRUSTED),
        (62, TLSFailure.WRONG_HOST),
        (64, TLSFailure.WRONG_HOST),
        (23, TLSFailure.OTHER),
    ],
)
def test_verify_codes_map_to_failures(code: int, failure: TLSFailure) -> None:
    error = ssl.SSLCertVerificationError(1, "certificate verify failed")
    error.verify_code = code
    wrapped = ConnectionError("wrapped")
    wrapped.__cause__ = error
    assert tls_failure(wrapped) is failure
    assert tls_failure(ConnectionRefusedError(111, "refused")) is None
    assert explain(failure, None, "h").startswith("TLS: ")
