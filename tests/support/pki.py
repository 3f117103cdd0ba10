"""A throwaway PKI for the loopback control plane: a CA, the API server's serving certificate
and the service-account signing key pair (TokenRequest tokens are signed with it)."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

SERVING_NAMES = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc")


@dataclass(frozen=True)
class PKI:
    """Paths of the files :func:`write_pki` wrote."""

    ca: Path
    serving_cert: Path
    serving_key: Path
    sa_private: Path
    sa_public: Path


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _certificate(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: tuple[x509.Name, ec.EllipticCurvePrivateKey] | None,
    *,
    ca: bool,
) -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    issuer_name, signer = issuer if issuer else (name, key)
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if not ca:
        sans: list[x509.GeneralName] = [x509.DNSName(n) for n in SERVING_NAMES]
        sans.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
        sans.append(x509.IPAddress(ipaddress.ip_address("10.96.0.1")))
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(signer, hashes.SHA256())


def write_pki(directory: Path) -> PKI:
    """Create a fresh CA, serving certificate and service-account key pair in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = _key()
    ca_cert = _certificate("driftwave-test-ca", ca_key, None, ca=True)
    serving_key = _key()
    serving = _certificate("kube-apiserver", serving_key, (ca_cert.subject, ca_key), ca=False)
    sa_key = _key()
    pki = PKI(
        ca=directory / "ca.crt",
        serving_cert=directory / "apiserver.crt",
        serving_key=directory / "apiserver.key",
        sa_private=directory / "sa.key",
        sa_public=directory / "sa.pub",
    )
    pki.ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    pki.serving_cert.write_bytes(serving.public_bytes(serialization.Encoding.PEM))
    pki.serving_key.write_bytes(_pem_key(serving_key))
    pki.sa_private.write_bytes(_pem_key(sa_key))
    pki.sa_public.write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return pki
