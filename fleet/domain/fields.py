"""Field types and checks the Fleet and Release manifests share: names, durations, times, URLs,
labels, time zones, and counts-or-percentages."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Annotated
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import AfterValidator

from common.durations import DURATION, parse_duration
from common.kubemodel import matching
from common.names import label_value_problem, qualified_name_problem

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
DnsLabel = Annotated[
    str,
    matching(
        DNS_LABEL,
        "a DNS label: at most 63 lower-case alphanumerics or '-', alphanumeric at both ends",
    ),
]
"""A name that must be a DNS label (rings, clusters, accounts, metric gates)."""

Duration = Annotated[str, matching(DURATION, "a duration such as 30s, 10m or 1h30m")]
"""A duration in hours, minutes and seconds (``30s``, ``10m``, ``1h30m``), as Karpenter writes."""

_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")
_PERCENT = re.compile(r"([0-9]+)%")


def duration_of(text: str) -> timedelta:
    """A validated :data:`Duration` as a timedelta."""
    value = parse_duration(text)
    if value is None:  # pragma: no cover - Duration never allows Never
        raise ValueError(f"{text!r} is not a finite duration")
    return value


def parse_time(text: str) -> datetime:
    """An RFC 3339 time with an offset (``2026-12-20T00:00:00Z``) as an aware datetime.

    Raises ValueError naming the rule when ``text`` is not one.
    """
    if not _RFC3339.fullmatch(text):
        raise ValueError(
            f"{text!r} is not an RFC 3339 time with an offset such as 2026-12-20T00:00:00Z "
            "(rule: date, 'T', time, then Z or +HH:MM)"
        )
    try:
        return datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is not a real date and time (rule: RFC 3339)") from None


def _time(text: str) -> str:
    parse_time(text)
    return text


Timestamp = Annotated[str, AfterValidator(_time)]
"""An RFC 3339 time with an offset, kept as written."""


def _url(text: str) -> str:
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname or re.search(r"\s", text):
        raise ValueError(
            f"{text!r} is not an http(s) URL such as https://host.example.internal:9443 "
            "(rule: scheme http or https and a host)"
        )
    try:
        parts.port  # noqa: B018 - reading it validates the port
    except ValueError:
        raise ValueError(f"{text!r} has an invalid port (rule: 1-65535)") from None
    return text


HttpUrl = Annotated[str, AfterValidator(_url)]
"""An ``http://`` or ``https://`` URL with a host."""


def _zone(name: str) -> str:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"unknown time zone {name!r} (rule: an IANA time zone such as Europe/Berlin or UTC)"
        ) from None
    return name


TimeZone = Annotated[str, AfterValidator(_zone)]
"""An IANA time zone name (``Europe/Berlin``, ``UTC``)."""


def check_labels(labels: dict[str, str]) -> dict[str, str]:
    """``labels`` if every key and value follows Kubernetes label syntax; else ValueError."""
    for key, value in labels.items():
        problem = qualified_name_problem(key) or label_value_problem(value)
        if problem:
            raise ValueError(f"label {key!r}: {problem} (rule: Kubernetes label syntax)")
    return labels


Labels = Annotated[dict[str, str], AfterValidator(check_labels)]
"""A mapping of Kubernetes labels (qualified-name keys, label values)."""


def percent_of(text: str) -> int | None:
    """The N of an ``"N%"`` string, or None when ``text`` is not written as a percentage."""
    match = _PERCENT.fullmatch(text)
    return int(match.group(1)) if match else None


def count_or_percent(value: object, what: str, lowest: int) -> object:
    """Check a count-or-percentage field before type validation.

    Accepts an integer >= ``lowest`` or a string ``"N%"`` with ``max(lowest, 0) <= N <= 100``
    (``lowest`` 1 also refuses ``"0%"``); raises ValueError naming the rule otherwise.
    """
    rule = (
        f"rule: {what} is a count (an integer >= {lowest}) or a percentage "
        f'{lowest}%-100% written as a string, such as "25%"'
    )
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"{value!r} is not a count or a percentage ({rule})")
    if isinstance(value, int):
        if value < lowest:
            raise ValueError(f"{value} is below {lowest} ({rule})")
        return value
    percent = percent_of(value)
    if percent is None:
        raise ValueError(f"{value!r} is not a count or a percentage ({rule})")
    if not lowest <= percent <= 100:
        raise ValueError(f"{value!r} is out of range ({rule})")
    return value
