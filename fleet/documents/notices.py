"""The warnings about an accepted manifest, as the fleet's documents carry them."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from common.wire.base import Document

__all__ = ["Notice", "Warnings"]


class Notice(Document):
    """A warning about an accepted manifest: the field's path and what is risky about it."""

    path: str
    message: str


Warnings = Annotated[
    list[Notice], Field(description="Warnings about the manifest (it was accepted).")
]
