"""A throwaway certificate authority for the tests (python ``cryptography``): a CA, server
certificates for loopback or given names (valid, expired, or for another CA), client
certificates, written as PEM files. EC P-256 keys, so making a few takes milliseconds. The
agents' TLS tests use it, and the loopback control plane's PKI (:mod:`tests.support.pki`)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def new_key() -> ec.EllipticCurvePrivateKey:
    """A fresh EC P-256 private key."""
    return ec.generate_private_key(ec.SECP256R1())


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    """``key`` as unencrypted PKCS#8 PEM."""
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


@dataclass(frozen=True)
class Issued:
    """A certificate and its key, as PEM files."""

    cert: Path
    key: Path
    serial: int


class TestCA:
    """A CA named ``name`` whose certificate is written to ``folder/NAME-ca.crt`` (or
    ``folder/CA_FILE``)."""

    __test__ = False  # not a pytest class

    def __init__(
        self, folder: Path, name: str = "driftwave-test-ca", *, ca_file: str | None = None
    ) -> None:
        self.folder = folder
        self.name = name
        self.key = new_key()
        now = datetime.now(UTC)
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(_name(name))
            .issuer_name(_name(name))
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(days=1))
            .not_valid_after(now + timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    key_cert_sign=True,
                    crl_sign=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self.key, hashes.SHA256())
        )
        self.ca_file = folder / (ca_file or f"{name}-ca.crt")
        self.ca_file.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))

    def issue(
        self,
        stem: str,
        *,
        client: bool = False,
        expired: bool = False,
        hosts: tuple[str, ...] = ("127.0.0.1", "localhost"),
    ) -> Issued:
        """A server (or ``client``) certificate for ``hosts``, written to ``folder/STEM.crt``
        and ``.key``; ``expired``: it ended yesterday."""
        key = new_key()
        now = datetime.now(UTC)
        start, end = (
            (now - timedelta(days=10), now - timedelta(days=1))
            if expired
            else (now - timedelta(hours=1), now + timedelta(days=7))
        )
        names: list[x509.GeneralName] = []
        for host in hosts:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                names.append(x509.DNSName(host))
        usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
        serial = x509.random_serial_number()
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(stem))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(serial)
            .not_valid_before(start)
            .not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if not client:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        cert_file, key_file = self.folder / f"{stem}.crt", self.folder / f"{stem}.key"
        cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_file.write_bytes(pem_key(key))
        return Issued(cert_file, key_file, serial)


def served_serial(host: str, port: int, ca_file: Path) -> int:
    """The serial number of the certificate ``host:port`` presents (verified against
    ``ca_file``; no client certificate)."""
    import socket
    import ssl

    context = ssl.create_default_context(cafile=str(ca_file))
    with (
        socket.create_connection((host, port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname=host) as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number
