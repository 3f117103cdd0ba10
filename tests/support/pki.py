"""A throwaway PKI for the loopback control plane: a CA, the API server's serving certificate
(:class:`tests.support.tlsca.TestCA`) and the service-account signing key pair (TokenRequest
tokens are signed with it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization

from tests.support.tlsca import TestCA, new_key, pem_key

SERVING_NAMES = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc")
SERVING_ADDRESSES = ("127.0.0.1", "10.96.0.1")


@dataclass(frozen=True)
class PKI:
    """Paths of the files :func:`write_pki` wrote."""

    ca: Path
    serving_cert: Path
    serving_key: Path
    sa_private: Path
    sa_public: Path


def write_pki(directory: Path) -> PKI:
    """Create a fresh CA, serving certificate and service-account key pair in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = TestCA(directory, ca_file="ca.crt")
    serving = ca.issue("apiserver", hosts=(*SERVING_NAMES, *SERVING_ADDRESSES))
    sa_key = new_key()
    pki = PKI(
        ca=ca.ca_file,
        serving_cert=serving.cert,
        serving_key=serving.key,
        sa_private=directory / "sa.key",
        sa_public=directory / "sa.pub",
    )
    pki.sa_private.write_bytes(pem_key(sa_key))
    pki.sa_public.write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return pki
