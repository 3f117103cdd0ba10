"""A service's document as a response: the JSON the handlers send.

The services return the documents of :mod:`fleet.documents`; a handler sends one with
:func:`sent`: camelCase, and only the fields the service set, so a field a document leaves
unset (a planned rollout's ``queuedBehind``, the ``paused`` of an abort's result) stays absent
from the answer rather than null.
"""

from __future__ import annotations

from collections.abc import Mapping

from fastapi.responses import JSONResponse

from common.wire.base import Document


def body(document: Document) -> dict[str, object]:
    """``document`` as JSON-ready data: camelCase, the fields set."""
    return document.model_dump(mode="json", by_alias=True, exclude_unset=True)


def sent(
    document: Document, *, status_code: int = 200, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """``document`` as the response (see the module docstring)."""
    return JSONResponse(body(document), status_code=status_code, headers=headers)
