"""The report's audit trail as a table (time, actor, action, object, reason, what changed,
trace) and the trace spans the audit names, read from the demo's trace file so each audit
row links to its span.

What changed is rendered as ``key: before → after`` lines, nested values flattened to dotted
keys, never as Python or JSON reprs.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REASON_KEYS = ("reason", "note")
"""Keys of an entry's ``after`` that say why, when the entry has no ``reason`` of its own."""
STATUS = {"UNSET": "-", "OK": "ok", "ERROR": "error"}
"""An OpenTelemetry span status code as the span table shows it."""
SPAN_ATTRIBUTES = 8
"""Attributes shown per span."""


def scalar(value: Any) -> str:
    """One value as a person reads it (``none``, ``true``, ``3``, ``canary``)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={scalar(v)}" for k, v in value.items()) or "none"
    if isinstance(value, list | tuple):
        items = [scalar(v) for v in value]
        joiner = "; " if any(isinstance(v, Mapping) for v in value) else ", "
        return joiner.join(items) if items else "none"
    return str(value)


def flatten(value: Any, prefix: str = "") -> dict[str, str]:
    """A before or after document as dotted keys to readable values (``{"a": {"b": 1}}`` →
    ``{"a.b": "1"}``); a list stays one value."""
    if isinstance(value, Mapping):
        out: dict[str, str] = {}
        for key, item in value.items():
            out.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix or "value": scalar(value)}


def reason(entry: Mapping[str, Any]) -> str:
    """Why the change was made: the entry's ``reason``, else its ``after``'s reason or note."""
    given = entry.get("reason")
    if given:
        return str(given)
    after = entry.get("after")
    if isinstance(after, Mapping):
        for key in REASON_KEYS:
            if after.get(key):
                return str(after[key])
    return ""


def changes(entry: Mapping[str, Any]) -> list[str]:
    """What the entry changed, one ``key: before → after`` line per key that differs (a key
    only after: ``key: value``; only before: ``key: value → removed``); the reason, shown in
    its own column, is left out."""
    before = flatten(entry.get("before") or {})
    after = flatten(entry.get("after") or {})
    why = reason(entry)
    lines = []
    for key in [*before, *(k for k in after if k not in before)]:
        if key in REASON_KEYS and after.get(key) == why and key not in before:
            continue
        if key in before and key in after:
            if before[key] != after[key]:
                lines.append(f"{key}: {before[key]} → {after[key]}")
        elif key in after:
            lines.append(f"{key}: {after[key]}")
        else:
            lines.append(f"{key}: {before[key]} → removed")
    return lines


def _clock(stamp: str) -> str:
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).strftime("%H:%M:%S.%f")[:-3]
    except ValueError:
        return stamp


def load_spans(
    trace_file: Path | None, trace_id: str | None, wanted: Iterable[str]
) -> dict[str, dict[str, Any]]:
    """The spans of ``trace_id`` whose ids are in ``wanted``, read from the JSON-lines trace
    file (an absent or unreadable file, or a line that is not JSON, gives no span)."""
    ids = set(wanted)
    found: dict[str, dict[str, Any]] = {}
    if trace_file is None or not trace_id or not ids:
        return found
    try:
        lines = trace_file.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return found
    for line in lines:
        if trace_id not in line:
            continue
        try:
            span = json.loads(line)
        except ValueError:
            continue
        if span.get("traceId") == trace_id and span.get("spanId") in ids:
            found[span["spanId"]] = span
    return found


def audit_table(
    audit: Sequence[Mapping[str, Any]],
    spans: Mapping[str, Mapping[str, Any]],
) -> str:
    """The audit trail as an HTML table; each row's trace cell links to its span in the
    report's span table when the trace file holds it."""
    e = html.escape
    parts = [
        "<table class='audit'><thead><tr><th>Time (UTC)</th><th>Actor</th><th>Action</th>"
        "<th>Object</th><th>Reason</th><th>Before → after</th><th>Trace</th></tr></thead>"
        "<tbody>"
    ]
    for entry in audit:
        stamp = str(entry.get("at") or "")
        lines = "<br>".join(e(line) for line in changes(entry))
        span_id = str(entry.get("spanId") or "")
        span = spans.get(span_id)
        ids = f"trace {entry.get('traceId') or '-'} span {span_id or '-'}"
        trace = (
            f"<a href='#span-{e(span_id)}' title='{e(ids)}'>{e(str(span.get('name')))}</a>"
            if span
            else f"<code title='{e(ids)}'>{e(span_id[:8]) or '-'}</code>"
        )
        parts.append(
            f"<tr><td title='{e(stamp)}'>{e(_clock(stamp))}</td>"
            f"<td>{e(str(entry.get('actor') or ''))}</td>"
            f"<td>{e(str(entry.get('action') or ''))}</td>"
            f"<td>{e(str(entry.get('object') or ''))}</td>"
            f"<td class='reason'>{e(reason(entry))}</td><td class='changes'>{lines}</td>"
            f"<td>{trace}</td></tr>"
        )
    parts.append("</tbody></table>")
    return "".join(parts)


def span_table(spans: Mapping[str, Mapping[str, Any]]) -> str:
    """The spans the audit names, oldest first, each row anchored as ``span-ID``."""
    e = html.escape
    parts = [
        "<table class='spans'><thead><tr><th>Span</th><th>Service</th><th>Start (UTC)</th>"
        "<th>Duration</th><th>Status</th><th>Attributes</th></tr></thead><tbody>"
    ]
    for span_id, span in sorted(
        spans.items(), key=lambda s: int(s[1].get("startTimeUnixNano") or 0)
    ):
        start = int(span.get("startTimeUnixNano") or 0)
        end = int(span.get("endTimeUnixNano") or start)
        service = (span.get("resource") or {}).get("attributes", {}).get("service.name", "")
        status = str((span.get("status") or {}).get("code", "")).removeprefix("STATUS_CODE_")
        attributes = list((span.get("attributes") or {}).items())[:SPAN_ATTRIBUTES]
        when = datetime.fromtimestamp(start / 1e9, tz=UTC).strftime("%H:%M:%S.%f")[:-3]
        parts.append(
            f"<tr id='span-{e(span_id)}'><td>{e(str(span.get('name') or ''))}<br>"
            f"<code>{e(span_id)}</code></td><td>{e(str(service))}</td><td>{e(when)}</td>"
            f"<td>{(end - start) / 1e6:.1f} ms</td><td>{e(STATUS.get(status, status))}</td><td>"
            + "<br>".join(e(f"{k}: {scalar(v)}") for k, v in attributes)
            + "</td></tr>"
        )
    parts.append("</tbody></table>")
    return "".join(parts)
