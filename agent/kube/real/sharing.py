"""A new version of an object, read from the API server, made to share what did not change with
the version before it.

Every version an informer reads is decoded on its own, so two versions that differ in one
heartbeat's time are two full sets of objects. The cache holds one version of each object, but
the Kubernetes adapter also keeps a few earlier versions of the kinds it updates (the forms its
merge patches are computed from), and a kubelet (or kwok) writes a Node's status every few
seconds: at 5,000 Nodes those earlier versions were most of the agent's memory. :func:`share`
replaces each part of the new version that equals the old version's part by the old one, down
to the fields of the items of lists (an object's ``metadata``, ``spec`` and ``status``, their
fields, the items of their lists, such as a Node's conditions, and those items' fields), so
earlier versions cost only what changed. Models are never changed once published (every change
is a copy), so sharing parts between versions is safe; the new version is changed here, before
anyone else sees it. Sharing also keeps the pods' shape cache (:mod:`agent.scheduling.pods`)
on its fast path, which finds a pod's spec by identity.

A :class:`Compactor` applies this as the cache stores each object, and goes two steps further.
An object seen for the first time shares with the last new object of its type (the pods of one
workload arrive together and differ in little more than their names, addresses and times: their
containers, tolerations, owners and labels become one set of objects). And every model of the
object is given the shared fields-set of its names (:mod:`agent.kube.fieldsets`).
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel

from agent.kube.fieldsets import FieldSets

M = TypeVar("M", bound=BaseModel)
DEPTH = 4


def share(old: BaseModel, new: M, depth: int = DEPTH) -> M:
    """``new``, changed in place: each field equal to ``old``'s holds ``old``'s object; a
    field that differs and is a model in both, or a list of the same length in both, is shared
    in the same way (a list item by item), ``depth`` levels down. ``new`` must not have been
    handed to anyone yet."""
    if type(old) is not type(new):
        return new
    mine = new.__dict__
    theirs = old.__dict__
    for name, value in mine.items():
        before = theirs.get(name)
        if before is value or before is None:
            continue
        if before == value:
            mine[name] = before
        elif depth > 1:
            _within(before, value, depth - 1)
    return new


def _within(before: object, value: object, depth: int) -> None:
    """Share the parts of ``value`` (a differing field) with ``before``'s."""
    if isinstance(value, BaseModel) and isinstance(before, BaseModel):
        share(before, value, depth)
    elif isinstance(value, list) and isinstance(before, list) and len(value) == len(before):
        for index, (was, item) in enumerate(zip(before, value, strict=True)):
            if was is item:
                continue
            if was == item:
                value[index] = was
            elif depth > 1:
                _within(was, item, depth - 1)


class Compactor:
    """Makes each object stored share what it can (module docstring). Not thread-safe: the
    cache calls it under its lock."""

    def __init__(self) -> None:
        self._field_sets = FieldSets()
        self._last: dict[type[BaseModel], BaseModel] = {}

    def compact(self, new: M, old: BaseModel | None) -> M:
        """``new``, changed in place, before anyone else sees it: sharing with ``old`` (the
        version it replaces) or, for a new object, with the last new object of its type; its
        models given shared fields-sets."""
        if old is not None:
            share(old, new)
        else:
            sibling = self._last.get(type(new))
            if sibling is not None:
                share(sibling, new)
            self._last[type(new)] = new
        self._field_sets.share(new)
        return new
