"""Migrating a manifest file v1beta1 → v1 (``driftwave migrate FILE [-o OUT]``): the result, a
report of every change, a check that the result passes ``driftwave validate``, and writing it
atomically."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from agent.api.lint import lint
from agent.api.migration import MigrationResult, migrate_text
from common.documents import KindKey, check_document, is_skipped, load_documents, read_text
from common.kubemodel import KubeModel


def migrate_file(path: Path, kinds: Mapping[KindKey, type[KubeModel]]) -> MigrationResult:
    """Migrate a file and validate the result against ``kinds`` (findings added to the result).

    Raises ManifestSyntaxError or OSError when the file cannot be read.
    """
    source = str(path)
    result = migrate_text(read_text(path), source)
    if not result.ok:
        return result
    for doc in load_documents(result.text, source):
        index, line = result.origins.get((doc.index, doc.prefix), (doc.index, 0))
        doc = replace(doc, index=index, line=line)  # as the file migrated numbers it
        _, findings = check_document(doc, kinds, (lint,))
        result.findings.extend(f for f in findings if not is_skipped(f))
    result.changes.sort(key=lambda c: c.document)
    result.findings.sort(key=lambda f: f.document)
    return result


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file, so a failure leaves no half file."""
    temporary = path.with_name(f".{path.name}.driftwave-tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def result_json(result: MigrationResult, output: Path | None) -> str:
    """The migration report as JSON (with the migrated text when it was not written to a file)."""
    body: dict[str, object] = {
        "ok": result.ok,
        "output": str(output) if output else None,
        "changes": [c.as_dict() for c in result.changes],
        "findings": [f.as_dict() for f in result.findings],
    }
    if output is None and result.ok:
        body["text"] = result.text
    return json.dumps(body, indent=2)
