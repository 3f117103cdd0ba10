"""An index from (label key, label value) to the names of the instance types carrying it.

Built once per set of instance types, it turns "which types have ``kubernetes.io/arch=arm64``"
into a dict lookup. It is immutable, so catalogs of the same instance types share one (the
packaged catalog's index is built once per process).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache

from agent.catalog.loader import packaged_instance_types
from agent.catalog.types import InstanceType

_EMPTY: frozenset[str] = frozenset()


class LabelIndex:
    """Names of instance types by label key and value."""

    __slots__ = ("_all", "_by_item", "_by_key")

    def __init__(self, instance_types: Iterable[InstanceType]) -> None:
        by_item: dict[tuple[str, str], set[str]] = {}
        names: list[str] = []
        for instance_type in instance_types:
            name = instance_type.name
            names.append(name)
            for item in instance_type.labels.items():
                found = by_item.get(item)
                if found is None:
                    by_item[item] = {name}
                else:
                    found.add(name)
        self._all = frozenset(names)
        self._by_item = {item: frozenset(found) for item, found in by_item.items()}
        by_key: dict[str, set[str]] = {}
        for key, value in self._by_item:
            by_key.setdefault(key, set()).add(value)
        self._by_key = {key: frozenset(values) for key, values in by_key.items()}

    @staticmethod
    def packaged() -> LabelIndex:
        """The index of the packaged instance types (built once per process)."""
        return _packaged_index()

    @property
    def names(self) -> frozenset[str]:
        """Every indexed instance type name."""
        return self._all

    def with_label(self, key: str, value: str) -> frozenset[str]:
        """Names of the types whose label ``key`` is ``value`` (empty when there are none)."""
        return self._by_item.get((key, value), _EMPTY)

    def with_labels(self, selector: Mapping[str, str]) -> frozenset[str]:
        """Names of the types carrying every label of ``selector``; all names when it is empty."""
        result = self._all
        for item in selector.items():
            result = result & self._by_item.get(item, _EMPTY)
            if not result:
                break
        return result

    def label_values(self, key: str) -> frozenset[str]:
        """Every value label ``key`` takes (empty when no type carries it)."""
        return self._by_key.get(key, _EMPTY)


@cache
def _packaged_index() -> LabelIndex:
    return LabelIndex(packaged_instance_types())
