"""The AWS adapter of the CloudProvider port: boto3 against EC2, SSM, EKS, SQS and STS.

This package is the only place in the project that imports boto3 or botocore (an
import-linter contract keeps it so). :mod:`.session` makes the clients, :mod:`.errors` turns
botocore's exceptions into the project's typed errors; the other modules each own one concern.
:func:`open_secret_reader` makes the Secrets Manager reader of the fleet's credentials, importing
boto3 only then (not when this package is imported).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent.cloud.aws.secrets import SecretReader


def open_secret_reader() -> SecretReader:
    """A Secrets Manager reader as the process's own AWS identity (boto3 is imported here)."""
    from agent.cloud.aws.secrets import SecretReader

    return SecretReader()
