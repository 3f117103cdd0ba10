"""The fleet's documents as the API sends them, for tests that compare the JSON."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


def wire(document: BaseModel | None) -> dict[str, Any] | None:
    """``document`` as its JSON (camelCase, the fields set), None staying None."""
    return None if document is None else document.model_dump(mode="json", exclude_unset=True)
