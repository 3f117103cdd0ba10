"""What a migration reports: the changes it made and the errors/warnings it found."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from common.documents import Finding, Severity, located


@dataclass(frozen=True)
class Change:
    """One edit the migration made to one document."""

    source: str
    document: int
    kind: str
    name: str
    path: str
    message: str
    line: int = 0
    """The line where the document starts in the file migrated (0: unknown)."""

    def __str__(self) -> str:
        where = located(self.source, self.document, self.line)
        return f"{where} {self.kind}/{self.name or '<unnamed>'}: {self.path}: {self.message}"

    def as_dict(self) -> dict[str, Any]:
        """The change as JSON-ready data."""
        return asdict(self)


@dataclass
class MigrationResult:
    """The migrated text, the changes made, and the errors/warnings found on the way."""

    text: str
    changes: list[Change] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    origins: dict[tuple[int, str], tuple[int, int]] = field(default_factory=dict)
    """Where each document of ``text`` came from: (its number in ``text``, its List item prefix)
    → (its number in the file migrated, its start line there)."""

    @property
    def ok(self) -> bool:
        """True when no error was found (warnings do not count)."""
        return not any(f.severity == "error" for f in self.findings)


class DocContext:
    """Where a document came from, and the sinks its migration reports into."""

    def __init__(
        self,
        source: str,
        index: int,
        data: Any,
        result: MigrationResult,
        prefix: str = "",
        line: int = 0,
    ) -> None:
        self.source = source
        self.index = index
        self.data = data
        self.prefix = prefix
        self.line = line
        self._result = result

    def _path(self, path: str) -> str:
        return f"{self.prefix}.{path}" if self.prefix and path else (self.prefix or path)

    @property
    def kind(self) -> str:
        """The document's kind."""
        return str(self.data.get("kind", "?"))

    @property
    def name(self) -> str:
        """The document's metadata.name."""
        meta = self.data.get("metadata")
        return str(meta.get("name", "")) if isinstance(meta, dict) else ""

    def change(self, path: str, message: str) -> None:
        """Record an edit."""
        self._result.changes.append(
            Change(
                self.source, self.index, self.kind, self.name, self._path(path), message, self.line
            )
        )

    def report(self, path: str, message: str, severity: Severity = "error") -> None:
        """Record an error (the migration cannot be completed) or a warning."""
        self._result.findings.append(
            Finding(
                self.source,
                self.index,
                self.kind,
                self.name,
                self._path(path),
                message,
                severity,
                self.line,
            )
        )
