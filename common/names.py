"""Kubernetes name rules: DNS subdomains (object names), qualified names (label keys), label
values, and the form of a Kubernetes minor version.

Each check returns why a string breaks the rule, or None when it keeps it, so that callers put the
reason in their own error with the field's path.
"""

from __future__ import annotations

import re

KUBERNETES_VERSION = r"^1\.[0-9]{2}$"
"""A Kubernetes minor version (``1.31``), as waves, releases and scenarios name one."""
LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
"""A label value: at most 63 of these characters (the length is checked apart)."""

_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
"""A DNS subdomain (RFC 1123), as Kubernetes names objects (at most 253 characters, checked
apart)."""
_DNS_SUBDOMAIN = re.compile(DNS_SUBDOMAIN)
_LABEL_VALUE = re.compile(LABEL_VALUE)


def dns_subdomain_problem(name: str) -> str | None:
    """Why ``name`` is not a DNS subdomain (the rule for object names), or None when it is."""
    if len(name) > 253 or not _DNS_SUBDOMAIN.fullmatch(name):
        return (
            f"{name!r} must be a DNS subdomain: at most 253 lower-case alphanumerics, '-' and "
            "'.', starting and ending with an alphanumeric"
        )
    return None


def qualified_name_problem(key: str) -> str | None:
    """Why ``key`` is not a valid qualified name (``[prefix/]name``), or None when it is."""
    prefix, _, name = key.rpartition("/")
    if "/" in key and not prefix:
        return f"{key!r} has an empty prefix before '/'"
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        return f"prefix {prefix!r} must be a DNS subdomain (lower case, at most 253 characters)"
    if not name or len(name) > 63 or not _QUALIFIED_NAME.fullmatch(name):
        return (
            f"name part {name!r} must be 1-63 characters of alphanumerics, '-', '_' or '.', "
            "starting and ending with an alphanumeric"
        )
    return None


def label_value_problem(value: str) -> str | None:
    """Why ``value`` is not a valid label value, or None when it is."""
    if len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
        return (
            f"label value {value!r} must be at most 63 characters of alphanumerics, '-', '_' or "
            "'.', starting and ending with an alphanumeric"
        )
    return None
