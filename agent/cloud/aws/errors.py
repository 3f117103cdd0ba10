"""botocore's exceptions as the project's typed errors, translated at the boundary.

Every boto3 call goes through :func:`aws_call`, which names what was being done ("describing
instance types", "launching instance for nodeclaim default-x7k2p") and raises one of:

=========================  =========  ===========================================================
error                      retryable  AWS error codes (or cause)
=========================  =========  ===========================================================
:class:`AWSThrottled`      yes        ``Throttling``, ``ThrottlingException``,
                                      ``RequestLimitExceeded``, ... left after botocore's retries
:class:`AWSUnavailable`    yes        5xx answers, ``ServiceUnavailable``, connection and
                                      read time-outs, endpoint not reachable
:class:`AWSAccessDenied`   no         ``AccessDenied``, ``UnauthorizedOperation``,
                                      ``AuthFailure``, ``ExpiredToken``, no credentials at all
:class:`AWSNotFound`       no         codes ending ``NotFound`` / ``.NotFound``,
                                      ``ParameterNotFound``, ``ResourceNotFoundException``,
                                      ``AWS.SimpleQueueService.NonExistentQueue``
:class:`AWSRequestError`   no         any other 4xx (the request itself is wrong)
=========================  =========  ===========================================================

The CloudProvider-level errors (:mod:`agent.cloud.port`) are raised by the modules that know
what a failure means for a NodeClaim (insufficient capacity on a launch, a missing instance).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionError,
    EndpointConnectionError,
    NoCredentialsError,
    ReadTimeoutError,
)

R = TypeVar("R")

THROTTLING_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottledException",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "RequestThrottled",
        "SlowDown",
        "PriorRequestNotComplete",
        "EC2ThrottledException",
    }
)
ACCESS_CODES = frozenset(
    {
        "AccessDenied",
        "AccessDeniedException",
        "UnauthorizedOperation",
        "AuthFailure",
        "ExpiredToken",
        "ExpiredTokenException",
        "InvalidClientTokenId",
        "UnrecognizedClientException",
        "SignatureDoesNotMatch",
    }
)
NOT_FOUND_CODES = frozenset(
    {
        "ParameterNotFound",
        "ResourceNotFoundException",
        "AWS.SimpleQueueService.NonExistentQueue",
        "QueueDoesNotExist",
    }
)


class AWSError(Exception):
    """A failed AWS call: ``code`` is AWS's error code (or the exception's name), ``operation``
    the API operation, ``retryable`` whether trying again later can help."""

    retryable = False

    def __init__(self, message: str, *, code: str, operation: str) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.operation = operation


class AWSThrottled(AWSError):
    """AWS throttled the call (still, after botocore's retries). Temporary."""

    retryable = True


class AWSUnavailable(AWSError):
    """AWS could not be reached or answered with a server error. Temporary."""

    retryable = True


class AWSAccessDenied(AWSError):
    """The credentials are missing, expired or not allowed to make the call. Permanent until
    the IAM policy or credentials change."""


class AWSNotFound(AWSError):
    """The resource named in the call does not exist. Permanent."""


class AWSRequestError(AWSError):
    """AWS refused the request as malformed or invalid. Permanent."""


def error_code(exc: ClientError) -> str:
    """The AWS error code of a ClientError (``""`` when it carries none)."""
    return str(exc.response.get("Error", {}).get("Code", ""))


def translate(exc: Exception, doing: str) -> AWSError:
    """The typed error for ``exc`` raised while ``doing`` (see the module docstring)."""
    if isinstance(exc, ClientError):
        code = error_code(exc)
        operation = str(getattr(exc, "operation_name", "") or "")
        detail = str(exc.response.get("Error", {}).get("Message", "") or code)
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        message = f"{doing}: {operation} failed: {code}: {detail}"
        kind: type[AWSError]
        if code in THROTTLING_CODES:
            kind = AWSThrottled
        elif code in ACCESS_CODES:
            kind = AWSAccessDenied
        elif code in NOT_FOUND_CODES or code.endswith("NotFound") or code.endswith(".NotFound"):
            kind = AWSNotFound
        elif status >= 500 or code in {"ServiceUnavailable", "InternalError", "Unavailable"}:
            kind = AWSUnavailable
        else:
            kind = AWSRequestError
        return kind(message, code=code, operation=operation)
    if isinstance(exc, NoCredentialsError):
        return AWSAccessDenied(
            f"{doing}: no AWS credentials found (environment, shared files, IRSA or Pod Identity)",
            code="NoCredentials",
            operation="",
        )
    if isinstance(exc, EndpointConnectionError | ConnectionError | ReadTimeoutError):
        return AWSUnavailable(f"{doing}: {exc}", code=type(exc).__name__, operation="")
    if isinstance(exc, BotoCoreError):
        return AWSRequestError(f"{doing}: {exc}", code=type(exc).__name__, operation="")
    raise TypeError(f"not an AWS error: {exc!r}")


def aws_call(doing: str, call: Callable[..., R], /, **kwargs: Any) -> R:
    """``call(**kwargs)``, with botocore's exceptions translated (see :func:`translate`)."""
    try:
        return call(**kwargs)
    except (ClientError, BotoCoreError) as exc:
        raise translate(exc, doing) from exc
