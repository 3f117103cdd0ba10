"""The migration driver: parse the file round-trip, migrate each document, dump it back."""

from __future__ import annotations

import io
import re
from itertools import pairwise
from typing import Any

from ruamel.yaml import YAML

from agent.api.migration.context import DocContext, MigrationResult
from agent.api.migration.documents import migrate_documents
from common.documents import ManifestSyntaxError
from common.yamlsafe import YamlError, load_round_trip


def _yaml(text: str) -> YAML:
    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.width = 4096
    yaml.brace_single_entry_mapping_in_flow_sequence = True
    mapping, sequence, offset = _guess_indent(text)
    yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
    return yaml


def _guess_indent(text: str) -> tuple[int, int, int]:
    """(mapping indent, sequence indent, dash offset) as the file writes them."""
    key_indents: list[int] = []
    dash_offsets: list[int] = []
    previous_key_indent: int | None = None
    for line in text.splitlines():
        stripped = line.lstrip(" ")
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(line) - len(stripped)
        if stripped.startswith("- ") and previous_key_indent is not None:
            dash_offsets.append(indent - previous_key_indent)
            previous_key_indent = None
        elif re.match(r"^[^\s:#-][^:]*:\s*$", stripped):
            key_indents.append(indent)
            previous_key_indent = indent
        else:
            previous_key_indent = None
    steps = [b - a for a, b in pairwise(key_indents) if b > a]
    mapping = min(steps) if steps else 2
    offset = max(set(dash_offsets), key=dash_offsets.count) if dash_offsets else 0
    offset = max(0, min(offset, mapping))
    return mapping, offset + 2, offset


def _line(data: Any) -> int:
    """The line (from 1) where a mapping or list read round-trip starts (0: not known)."""
    where = getattr(data, "lc", None)
    return int(where.line) + 1 if where is not None and where.line is not None else 0


def migrate_text(text: str, source: str) -> MigrationResult:
    """Migrate every document of a file; the result's text is only meaningful when ``ok``."""
    yaml = _yaml(text)
    try:
        documents = load_round_trip(yaml, text)
    except YamlError as exc:
        raise ManifestSyntaxError(source, exc.reason, exc.limit) from exc
    result = MigrationResult(text="")
    contexts: list[DocContext] = []
    kept = 0
    for index, data in enumerate(documents, start=1):
        if data is None:
            continue  # an empty document is not written back: the next ones move up
        kept += 1
        line = _line(data)
        result.origins[(kept, "")] = (index, line)
        if not isinstance(data, dict):
            continue
        items = data.get("items")
        if str(data.get("kind", "")).endswith("List") and isinstance(items, list):
            for n, item in enumerate(items):
                result.origins[(kept, f"items[{n}]")] = (index, _line(item) or line)
            contexts.extend(
                DocContext(source, index, item, result, f"items[{n}]", _line(item) or line)
                for n, item in enumerate(items)
                if isinstance(item, dict)
            )
        else:
            contexts.append(DocContext(source, index, data, result, line=line))
    migrate_documents(contexts)
    out = io.StringIO()
    yaml.dump_all([data for data in documents if data is not None], out)
    result.text = out.getvalue()
    return result
