"""Did you mean: the allowed name closest to one that is not allowed (a misspelt manifest
field, an option's value), so that an error says what to write instead.

:func:`closest` picks among names with :mod:`difflib` (case ignored); :func:`field_names` finds
the names a pydantic model allows at a location of an error (``spec.disruption`` → the fields
of a NodePool's ``disruption``), following lists, mappings, optional values and unions.
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel

CUTOFF = 0.6
"""How alike (difflib's ratio, 0 to 1) a name must be to be suggested."""


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The choice most like ``word`` (case ignored), or None when none is alike enough."""
    by_lower = {choice.lower(): choice for choice in choices if choice != word}
    found = difflib.get_close_matches(word.lower(), list(by_lower), n=1, cutoff=CUTOFF)
    return by_lower[found[0]] if found else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``; did you mean 'budgets'?`` for the closest choice, or nothing."""
    found = closest(word, choices)
    return f"; did you mean {found!r}?" if found else ""


def field_names(model: type[BaseModel], location: Sequence[int | str]) -> list[str]:
    """The field names (as a manifest writes them: aliases) that ``model`` allows at
    ``location``, a path into it (``("spec", "disruption")``); empty when it leads nowhere."""
    here: list[Any] = [model]
    for part in location:
        here = [found for kind in _concrete(here) for found in _step(kind, part)]
    names: list[str] = []
    for kind in _concrete(here):
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            names.extend(info.alias or name for name, info in kind.model_fields.items())
    return sorted(set(names))


def _concrete(kinds: Iterable[Any]) -> list[Any]:
    """The types ``kinds`` stand for: ``Annotated``, optional values and unions unwrapped."""
    out: list[Any] = []
    for kind in kinds:
        origin = get_origin(kind)
        if origin is Annotated:
            out.extend(_concrete([get_args(kind)[0]]))
        elif origin is Union or origin is types.UnionType:
            out.extend(_concrete(a for a in get_args(kind) if a is not type(None)))
        else:
            out.append(kind)
    return out


def _step(kind: Any, part: int | str) -> list[Any]:
    """What is found at ``part`` of a value of type ``kind`` (nothing: no such place)."""
    origin, args = get_origin(kind), get_args(kind)
    if isinstance(part, int):
        if origin in (list, tuple, set, frozenset) or _is(origin, Sequence):
            return [args[0]] if args else []
        return []
    if origin is dict or _is(origin, Mapping):
        return [args[1]] if len(args) == 2 else []
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        if part == kind.__name__:  # a union member's tag in a pydantic location
            return [kind]
        for name, info in kind.model_fields.items():
            if part in (info.alias, name):
                return [info.annotation]
    return []


def _is(origin: Any, abstract: type) -> bool:
    return isinstance(origin, type) and issubclass(origin, abstract)
