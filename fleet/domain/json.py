"""JSON values, typed: what a JSON column holds and what a read model returns for people.

``JSONValue`` is any value ``json.loads`` may return; ``JSONObject`` is a JSON object. The
documents the fleet stores and shows are built from these (no ``Any``), so a reader knows a
value came from JSON and checks its shape before relying on it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

JSONScalar: TypeAlias = str | int | float | bool | None
"""A JSON string, number, boolean or null."""

JSONValue: TypeAlias = JSONScalar | Sequence["JSONValue"] | Mapping[str, "JSONValue"]
"""Any JSON value (arrays and objects read-only, so a ``list[str]`` or a ``dict[str, int]``
is one)."""

JSONObject: TypeAlias = dict[str, JSONValue]
"""A JSON object (the documents the fleet's reads return)."""
