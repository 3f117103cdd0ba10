"""The errors of the fleet client: each message is what the command prints after ``error:``."""

from __future__ import annotations


class ClientError(Exception):
    """A command cannot be done as asked; the message says why (and what to do)."""


class ConfigError(ClientError):
    """The config file, or a value given for it, breaks a rule (the message names the field and
    the rule); nothing is written."""


class ApiError(ClientError):
    """The fleet API refused or failed a request: its status and its message."""

    def __init__(self, status: int, message: str, code: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.code = code


class NotSignedIn(ClientError):
    """The context has no usable credentials (no token, or an ID token that expired and cannot
    be refreshed)."""
