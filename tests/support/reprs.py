"""A watch for Python's own text in what people read: ``{'`` or ``['`` (a dict, list or set
formatted into a message instead of written out in words).

While the test session runs, :func:`watching` looks at every message the code under test
produces where people read it:

* every row written to the fleet's database (audit reasons and the ``reason``/``error`` values
  inside its before and after, rollout reasons, step errors, contact errors): a Core-level
  ``before_execute`` hook, so bulk inserts are seen too;
* every JSON answer of the fleet's and the agent's HTTP APIs (error bodies, reasons, messages):
  Starlette's ``JSONResponse.render``;
* every command run through Typer's ``CliRunner`` (its whole stdout and stderr);
* every webhook event's text and data (:meth:`fleet.service.notifications.events.Event.envelope`).

Each sighting is kept with where it was seen; the test that caused it fails at its teardown
(``tests/conftest.py``). JSON written by the code is not flagged: its strings are in double
quotes. Commands and processes a test starts as subprocesses are not watched.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

PYTHON_TEXT = re.compile(r"[\[{]'")
"""What Python's repr of a container of strings starts with: ``['`` or ``{'``."""
MESSAGE_KEYS = frozenset(
    {"reason", "error", "message", "text", "note", "detail", "last_contact_error", "summary"}
)
"""Names of the columns and JSON keys whose values are messages for people."""
MESSAGE_TABLES = frozenset({"audit_log", "steps", "rollouts", "gate_evaluations", "clusters"})
"""The fleet's tables whose rows hold messages (the others hold manifests, ids and times)."""


@dataclass
class Sightings:
    """Messages seen holding Python's text, each with where it was seen."""

    found: list[str] = field(default_factory=list)

    def look(self, where: str, text: str) -> None:
        """Keep ``text`` if it holds Python's text."""
        for line in text.splitlines() if PYTHON_TEXT.search(text) else ():
            if PYTHON_TEXT.search(line):
                self.found.append(f"{where}: {line.strip()[:400]}")

    def walk(self, where: str, value: Any, key: str = "") -> None:
        """Look at the message strings inside ``value`` (a JSON-like value): those under a
        message key (:data:`MESSAGE_KEYS`), at any depth."""
        if isinstance(value, str):
            if key in MESSAGE_KEYS:
                self.look(f"{where} {key}", value)
        elif isinstance(value, dict):
            for k, v in value.items():
                self.walk(where, v, k if isinstance(k, str) and k in MESSAGE_KEYS else key)
        elif isinstance(value, list | tuple):
            for item in value:
                self.walk(where, item, key)

    def take(self) -> list[str]:
        """The sightings since the last take."""
        found, self.found = self.found, []
        return found


@contextmanager
def watching() -> Iterator[Sightings]:
    """Watch the session's messages (see the module docstring) until the block ends."""
    from click.testing import Result
    from sqlalchemy import event
    from sqlalchemy.engine import Engine
    from starlette.responses import JSONResponse
    from typer.testing import CliRunner

    from fleet.documents.events import CloudEvent
    from fleet.service.notifications.events import Event

    seen = Sightings()

    def written(conn: Any, clause: Any, multiparams: Any, params: Any, options: Any) -> None:
        del conn, options
        table = getattr(getattr(clause, "table", None), "name", None)
        if table not in MESSAGE_TABLES:  # a read, or a table holding no message
            return
        for batch in (multiparams, params):
            seen.walk(f"written to {table}", _rows(batch))
        if not multiparams and not params:  # values given in the statement itself
            seen.walk(f"written to {table}", _inline(clause))

    render: Callable[[JSONResponse, Any], bytes] = JSONResponse.render

    def rendered(self: JSONResponse, content: Any) -> bytes:
        seen.walk("an API answer", content)
        return render(self, content)

    invoke: Any = CliRunner.invoke

    def invoked(self: CliRunner, cli: Any, args: Any = None, *rest: Any, **kw: Any) -> Result:
        result: Result = invoke(self, cli, args, *rest, **kw)
        shown = " ".join(map(str, args)) if isinstance(args, list | tuple) else str(args or "")
        seen.look(f"driftwave {shown} printed", result.output)
        return result

    envelope: Callable[[Event], CloudEvent] = Event.envelope

    def enveloped(self: Event) -> CloudEvent:
        body = envelope(self)
        seen.look(f"webhook event {self.type} text", body.text)
        seen.walk(f"webhook event {self.type}", body.data.model_dump(mode="json"))
        return body

    event.listen(Engine, "before_execute", written)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(JSONResponse, "render", rendered)
        patch.setattr(CliRunner, "invoke", invoked)
        patch.setattr(Event, "envelope", enveloped)
        try:
            yield seen
        finally:
            event.remove(Engine, "before_execute", written)


def _rows(batch: Any) -> Any:
    """The parameters of one execution as plain rows: a list of dicts, a dict, or nothing."""
    if isinstance(batch, dict):
        return batch
    if isinstance(batch, list | tuple):
        return [_rows(item) for item in batch]
    return None


def _inline(clause: Any) -> dict[str, Any]:
    """The values an INSERT or UPDATE statement carries itself (``.values(...)``), by column
    name; read from the statement without compiling it (a compile per statement would cost
    the session seconds)."""
    values = getattr(clause, "_values", None) or {}
    return {str(getattr(k, "key", k)): getattr(v, "value", v) for k, v in values.items()}
