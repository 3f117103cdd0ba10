"""Make the compose tour's throwaway TLS files, once: a CA and the simulated agents' serving
certificate for the host name ``agents`` (the compose service), written to the folder given
(``ca.crt``, ``agents.crt``, ``agents.key``), readable by the image's user (uid 65532). Files
already there are kept, so restarting the tour keeps its CA. Run by the ``certs`` service of
docker-compose.yml: python deploy/compose/make-certs.py FOLDER."""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

USER = 65532
HOSTS = ("agents", "localhost")


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def make(folder: Path) -> None:
    """Write the CA and the agents' certificate into ``folder`` unless they are there."""
    if (folder / "agents.key").exists():
        return
    now = datetime.now(UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("driftwave compose tour CA"))
        .issuer_name(_name("driftwave compose tour CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.DNSName(h) for h in HOSTS]
    served = (
        x509.CertificateBuilder()
        .subject_name(_name("agents"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=90))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    folder.mkdir(parents=True, exist_ok=True)
    pem = serialization.Encoding.PEM
    files = {
        "ca.crt": ca.public_bytes(pem),
        "agents.crt": served.public_bytes(pem),
        "agents.key": key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
    }
    for name, data in files.items():
        path = folder / name
        path.write_bytes(data)
        path.chmod(0o600 if name.endswith(".key") else 0o644)
        if os.geteuid() == 0:
            os.chown(path, USER, USER)


if __name__ == "__main__":
    make(Path(sys.argv[1]))
