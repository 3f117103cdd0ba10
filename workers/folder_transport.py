"""The embedded broker: kombu's filesystem transport, with messages that appear whole or not at
all, and a reader that never stops on a file it cannot read.

kombu's own filesystem transport creates a message's file under its final name and only then
locks it and writes the message, while its readers move and read files without that lock. On a
busy machine a writer is descheduled between the two, a reader takes the still empty (or half
written) file, fails to decode it (``JSONDecodeError``), and that exception stops the Celery
worker; the message is gone, since the reader has already moved it away and deletes what it read.
The exchange tables in the control folder have the same gap (a new table's file is created empty,
then written).

Here:

* a message is written whole under a name no reader looks at (in ``incoming/`` inside the
  queue's folder, so on the same file system) and then renamed into the queue's folder; a rename
  is atomic, so a reader sees no file or the whole message;
* a reader claims a file by renaming it into ``claimed/``: of readers racing for one file
  exactly one rename succeeds, the others go on to the next file; the claimant reads it and
  removes it;
* a file that does not hold a message Celery can take (not JSON, not kombu's envelope, a body
  that does not decode as JSON) is moved to ``unreadable/``, kept for a person to look at, and
  logged by name, size and what is wrong with it (never its content); the reader goes on with the
  next file, so a worker never stops on one. A step whose message was lost that way stays
  silent, and the scheduler sends it again after ``redispatch_after``;
* an exchange table is rewritten under a lock of its own and replaced by a rename.

What it does not promise, like kombu's: a message a worker has taken lives in that worker's
memory until the task acknowledges it (a worker stopped normally puts it back; one killed
outright loses it, and the scheduler's redispatch sends its step again), and files are not
synced to disk (a power cut may lose the last messages written).
"""

from __future__ import annotations

import logging
import os
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from queue import Empty
from time import monotonic_ns
from typing import Any

from kombu.exceptions import ChannelError, DecodeError
from kombu.transport import filesystem, virtual
from kombu.utils import json as kombu_json

TRANSPORT = "workers.folder_transport:Transport"
"""The transport's import path, as Celery's ``broker_transport`` setting takes it."""
INCOMING, CLAIMED, UNREADABLE = "incoming", "claimed", "unreadable"
"""Sub-folders of the queue folder: messages being written, being read, and set aside."""

JSON = "application/json"
log = logging.getLogger(__name__)

# kombu's JSON (its encoder knows dates, UUIDs and decimals) and its file locks, typed
_dumps: Callable[[Any], str] = kombu_json.dumps
_loads: Callable[[str], Any] = kombu_json.loads
_lock: Callable[[Any, int], None] = filesystem.lock
_unlock: Callable[[Any], None] = filesystem.unlock


class Channel(filesystem.Channel):
    """kombu's filesystem channel with atomic writes, claims by rename and unreadable files set
    aside (see the module's docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[no-untyped-call]
        self._waiting: dict[str, deque[str]] = {}
        """Per queue, the message files listed by the last look at the folder, oldest first,
        not yet tried (another reader may have taken them since)."""

    # kombu's own signature (its base class names the second argument ``message``)
    def _put(self, queue: str, payload: Any, **_: Any) -> None:  # type: ignore[override]
        """Write the message whole in ``incoming/``, then rename it into the queue's folder."""
        folder = Path(self.data_folder_out)
        # zero-padded milliseconds first: names sort in the order they were written
        name = f"{monotonic_ns() // 1_000_000:015d}_{uuid.uuid4().hex}.{queue}.msg"
        staging = folder / INCOMING / name
        try:
            staging.parent.mkdir(exist_ok=True)
            with staging.open("xb") as file:
                file.write(_dumps(payload).encode())
            os.rename(staging, folder / name)
        except OSError as exc:
            with suppress(OSError):
                staging.unlink()
            raise ChannelError(f"cannot add a message to {folder}: {exc}") from exc

    def _get(self, queue: str, timeout: float | None = None) -> Any:  # noqa: ARG002
        """The oldest message of ``queue`` this channel could claim; :class:`queue.Empty` when
        there is none (at once: kombu's consumer polls, ``timeout`` is unused as in kombu's)."""
        pending = self._waiting.get(queue)
        looks = 1 if not pending else 2  # a remembered listing may be stale: look again once
        for _ in range(looks):
            if not pending:
                pending = self._waiting[queue] = deque(self._listed(queue))
            while pending:
                message = self._claim(pending.popleft(), queue)
                if message is not None:
                    return message
        raise Empty()

    def _listed(self, queue: str) -> list[str]:
        """The names of ``queue``'s message files, oldest first (kombu's naming rule)."""
        suffix = f"{queue}.msg"
        try:
            names = os.listdir(self.data_folder_in)
        except OSError as exc:
            raise ChannelError(f"cannot list {self.data_folder_in}: {exc}") from exc
        return sorted(n for n in names if n.partition(".")[2] == suffix)

    def _claim(self, name: str, queue: str) -> Any | None:
        """Take the file ``name``: its message, or None when another reader took it first or
        it held no deliverable message (then it is set aside)."""
        folder = Path(self.data_folder_in)
        claimed = folder / CLAIMED / name
        try:
            claimed.parent.mkdir(exist_ok=True)
            os.rename(folder / name, claimed)
        except FileNotFoundError:
            return None  # another reader's (or purged)
        except OSError as exc:
            raise ChannelError(f"cannot claim {name} in {folder}: {exc}") from exc
        try:
            data = claimed.read_bytes()
        except OSError as exc:
            raise ChannelError(f"cannot read {claimed}: {exc}") from exc
        try:
            message = _loads(data.decode())
            self._check(message)
        except (ValueError, TypeError, KeyError, AttributeError, DecodeError) as exc:
            self._set_aside(claimed, queue, len(data), exc)
            return None
        claimed.unlink()
        return message

    def _check(self, message: Any) -> None:
        """Raise what bad data raises unless ``message`` is a JSON message whose body decodes
        (what the consumer will make of it; the embedded broker carries JSON only, and a body
        that does not decode would reach Celery's log, which quotes it)."""
        decoded = self.Message(message, channel=self)  # type: ignore[no-untyped-call]
        if decoded.content_type != JSON:
            raise ValueError(f"content type {decoded.content_type!r}, not {JSON}")
        decoded.decode()  # type: ignore[no-untyped-call]

    def _set_aside(self, claimed: Path, queue: str, size: int, exc: BaseException) -> None:
        """Move a file that held no deliverable message to ``unreadable/`` and say so."""
        aside = claimed.parent.parent / UNREADABLE / claimed.name
        try:
            aside.parent.mkdir(exist_ok=True)
            os.rename(claimed, aside)
            where = f"set aside as {aside}"
        except OSError as move:
            where = f"left in {claimed} (cannot set it aside: {move})"
        reason = f"{type(exc).__name__}: {exc}"[:200]
        log.warning(
            "embedded broker: a file of queue %s (%d bytes) holds no message (%s); %s. "
            "A step it carried is sent again once it has been silent for redispatch_after.",
            queue,
            size,
            reason,
            where,
        )

    def _queue_bind(self, exchange: str, routing_key: str, pattern: str, queue: str) -> None:
        """Add the binding to the exchange's table, replacing the table's file whole."""
        entry = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")
        with self._table(exchange) as table:
            if entry not in table:
                table.insert(0, entry)

    def _delete(
        self, queue: str, exchange: str, routing_key: str, pattern: str, *args: Any, **kwargs: Any
    ) -> None:
        """Purge the queue and remove its binding from the exchange's table (replaced whole)."""
        purge = virtual.Channel._delete  # the queue's part, without kombu's table rewrite
        purge(self, queue, exchange, routing_key, pattern, *args, **kwargs)  # type: ignore[no-untyped-call]
        entry = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")
        with self._table(exchange) as table:
            while entry in table:
                table.remove(entry)

    @contextmanager
    def _table(self, exchange: str) -> Iterator[list[Any]]:
        """The exchange's table to change, under the exchange's lock; written back whole (a
        temporary file renamed over it) when the block changed it."""
        file: Path = self._exchange_file(exchange)  # type: ignore[no-untyped-call]
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            with open(f"{file}.lock", "ab") as lock:
                _lock(lock, filesystem.LOCK_EX)
                try:
                    table = list(self.get_table(exchange))  # type: ignore[no-untyped-call]
                    before = list(table)
                    yield table
                    if table != before:
                        temporary = file.with_name(f"{file.name}.{uuid.uuid4().hex}.tmp")
                        temporary.write_bytes(_dumps(table).encode())
                        os.replace(temporary, file)
                finally:
                    _unlock(lock)
        except OSError as exc:
            raise ChannelError(f"cannot update {file}: {exc}") from exc


class Transport(filesystem.Transport):
    """kombu's filesystem transport with :class:`Channel`."""

    Channel = Channel
