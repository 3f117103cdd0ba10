"""Models stored in a cluster's cache share their fields-sets.

pydantic keeps, per model instance, the set of the fields given explicitly (read by
``exclude_unset`` dumps), and ``model_copy`` copies it: every model of every stored object owns
one. A set of five or more names takes 728 bytes; in a pod decoded from the API server these sets
were some 45 % of its size. Models are frozen (no assignment adds to a set) and ``model_copy``
copies the set before adding to it, so equal sets can be one object: :class:`FieldSets` gives every
model of a stored object the one shared set of its names.
"""

from __future__ import annotations

from pydantic import BaseModel


class FieldSets:
    """One shared fields-set per distinct set of names. Not thread-safe: the cache that stores
    objects calls it under its own lock."""

    def __init__(self) -> None:
        self._sets: dict[frozenset[str], set[str]] = {}
        self._shared: set[int] = set()
        """The ids of the shared sets (each held by ``_sets``, so an id is never reused)."""

    def share(self, value: object) -> None:
        """Give ``value`` (a model, or a list of models) and every model in it the shared set
        of its fields. A model already holding a shared set was given it with all its parts
        (parts never change), so it is not walked again: a new version costs only its new
        parts."""
        if isinstance(value, BaseModel):
            fields = value.__pydantic_fields_set__
            if id(fields) in self._shared:
                return
            shared = self._sets.setdefault(frozenset(fields), fields)
            if shared is fields:
                self._shared.add(id(fields))
            else:
                object.__setattr__(value, "__pydantic_fields_set__", shared)
            for part in value.__dict__.values():
                if isinstance(part, (BaseModel, list)):
                    self.share(part)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, (BaseModel, list)):
                    self.share(item)
