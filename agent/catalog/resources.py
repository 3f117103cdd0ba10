"""Resource amounts: the one resource-vector type, and quantities in base units.

A :class:`ResourceVector` is an immutable map of resource name to an integer amount in base
units (cpu in millicores, memory / ephemeral-storage / hugepages in bytes, pods and extended
resources as counts), possibly negative, so that "allocatable minus what is already requested"
can go below zero. A missing resource is zero, and zero amounts are not stored.
:class:`Resources` is the catalog's form of it: the amounts an instance type states, none
negative, zeros kept as stated (see :mod:`agent.catalog.types`).

:func:`to_base_units` converts a Kubernetes quantity as Kubernetes rounds it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Iterator, Mapping
from fractions import Fraction
from typing import TypeVar, overload

from agent.api.quantity import parse_quantity
from agent.catalog import labels as lbl

__all__ = ["ResourceVector", "Resources", "to_base_units", "total"]

_T = TypeVar("_T")


def to_base_units(name: str, quantity: int | float | str | Fraction) -> int:
    """A quantity of resource ``name`` in base units, rounded up as Kubernetes rounds
    (``MilliValue`` for cpu, ``Value`` for everything else): ``("cpu", "500m")`` → 500,
    ``("memory", "1Gi")`` → 1073741824, ``("cpu", "0.1m")`` → 1."""
    if isinstance(quantity, Fraction):
        return _rounded(name, quantity)
    return _parsed(name, quantity)


@functools.lru_cache(maxsize=4096, typed=True)
def _parsed(name: str, quantity: int | float | str) -> int:
    """:func:`to_base_units` of a quantity as written (few distinct ones recur: every node of
    a type has the same capacity, so a controller's passes parse each once)."""
    return _rounded(name, parse_quantity(quantity))


def _rounded(name: str, value: Fraction) -> int:
    return math.ceil(value * 1000) if name == lbl.CPU else math.ceil(value)


class ResourceVector(Mapping[str, int]):
    """An immutable map of resource name to an integer amount (possibly negative).

    Two vectors are equal when every resource has the same amount, missing meaning zero; the
    same holds when comparing with any mapping (such as :class:`Resources`).
    """

    __slots__ = ("_values",)

    _values: dict[str, int]

    def __init__(self, values: Mapping[str, int] | None = None) -> None:
        items: dict[str, int] = {}
        for name, amount in (values or {}).items():
            if type(amount) is not int:
                raise TypeError(f"resource {name!r} must be a whole number, not {amount!r}")
            if amount:
                items[name] = amount
        self._values = items

    @classmethod
    def _of(cls, values: dict[str, int]) -> ResourceVector:
        made = object.__new__(cls)
        made._values = {name: amount for name, amount in values.items() if amount}
        return made

    @classmethod
    def from_quantities(
        cls, quantities: Mapping[str, int | float | str | Fraction]
    ) -> ResourceVector:
        """From a Kubernetes resource list: ``{"cpu": "500m", "memory": "1Gi"}`` →
        ``{"cpu": 500, "memory": 1073741824}`` (see :func:`to_base_units`)."""
        return ResourceVector._of({name: to_base_units(name, q) for name, q in quantities.items()})

    def __getitem__(self, name: str) -> int:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, name: object) -> bool:
        return name in self._values

    @overload
    def get(self, name: str, /) -> int | None: ...
    @overload
    def get(self, name: str, default: int | _T, /) -> int | _T: ...
    def get(self, name: str, default: object = None, /) -> object:
        """The amount of ``name``, or ``default`` when the map does not hold it."""
        return self._values.get(name, default)

    def add(self, other: Mapping[str, int]) -> ResourceVector:
        """The sum, resource by resource."""
        out = dict(self._values)
        for name, amount in other.items():
            out[name] = out.get(name, 0) + amount
        return ResourceVector._of(out)

    def subtract(self, other: Mapping[str, int]) -> ResourceVector:
        """The difference, resource by resource; a resource only ``other`` has goes negative.

        (Karpenter's ``Subtract`` keeps only the left side's resources; here the negative amount
        stays, so :meth:`fits` refuses a node that could not even hold what was subtracted.)
        """
        out = dict(self._values)
        for name, amount in other.items():
            out[name] = out.get(name, 0) - amount
        return ResourceVector._of(out)

    def max(self, other: Mapping[str, int]) -> ResourceVector:
        """The larger amount of each resource (missing counts as zero)."""
        out = {name: max(amount, other.get(name, 0)) for name, amount in self._values.items()}
        for name, amount in other.items():
            if name not in out:
                out[name] = max(amount, 0)
        return ResourceVector._of(out)

    def fits(self, capacity: Mapping[str, int]) -> bool:
        """Whether these requests fit in ``capacity``, Karpenter's ``Fits``: every amount is at
        most the capacity's, and no capacity amount is negative (an overcommitted node takes
        nothing more, not even a pod that requests none of the overcommitted resource)."""
        if any(amount < 0 for amount in capacity.values()):
            return False
        return all(amount <= capacity.get(name, 0) for name, amount in self._values.items())

    def exceeding(self, capacity: Mapping[str, int]) -> list[str]:
        """The resources whose amount here is larger than in ``capacity``, sorted by name."""
        return sorted(n for n, a in self._values.items() if a > capacity.get(n, 0))

    def __add__(self, other: Mapping[str, int]) -> ResourceVector:
        return self.add(other)

    def __sub__(self, other: Mapping[str, int]) -> ResourceVector:
        return self.subtract(other)

    def __eq__(self, other: object) -> bool:
        if type(other) is ResourceVector:
            return self._values == other._values
        if isinstance(other, Mapping):
            return self._values == {k: v for k, v in other.items() if v}
        return NotImplemented

    def __hash__(self) -> int:
        return hash(frozenset(self._values.items()))

    def __repr__(self) -> str:
        return f"ResourceVector({self._values!r})"


def total(vectors: Iterable[Mapping[str, int]]) -> ResourceVector:
    """The sum of many vectors (one pass, one result)."""
    out: dict[str, int] = {}
    for vector in vectors:
        for name, amount in vector.items():
            out[name] = out.get(name, 0) + amount
    return ResourceVector._of(out)


class Resources(ResourceVector):
    """The amounts an instance type states: a :class:`ResourceVector` whose amounts are all
    whole numbers >= 0, kept as given (a zero amount is stored).

    A missing resource means zero: ``resources.get("nvidia.com/gpu", 0)``. Two maps are equal
    when they hold the same amounts (zeros included); maps are hashable. Arithmetic
    (:meth:`~ResourceVector.add`, :meth:`~ResourceVector.subtract`...) gives a
    :class:`ResourceVector`.
    """

    __slots__ = ()

    def __init__(self, values: Mapping[str, int] | None = None) -> None:
        items = dict(values) if values is not None else {}
        for name, amount in items.items():
            if type(amount) is not int or amount < 0:
                raise ValueError(f"resource {name!r} must be a whole number >= 0, not {amount!r}")
        self._values = items

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Resources):
            return self._values == other._values
        if isinstance(other, ResourceVector):
            return NotImplemented  # the vector's equality: missing and zero amounts alike
        if isinstance(other, Mapping):
            return self._values == dict(other.items())
        return NotImplemented

    def __hash__(self) -> int:
        return hash(frozenset(self._values.items()))

    def __repr__(self) -> str:
        return f"Resources({self._values!r})"

    @property
    def cpu_millis(self) -> int:
        """CPU in millicores (0 when absent)."""
        return self._values.get(lbl.CPU, 0)

    @property
    def memory_bytes(self) -> int:
        """Memory in bytes (0 when absent)."""
        return self._values.get(lbl.MEMORY, 0)

    @property
    def ephemeral_storage_bytes(self) -> int:
        """Ephemeral storage in bytes (0 when absent)."""
        return self._values.get(lbl.EPHEMERAL_STORAGE, 0)

    @property
    def pods(self) -> int:
        """The number of pods (0 when absent)."""
        return self._values.get(lbl.PODS, 0)

    def fits(self, requests: Mapping[str, int]) -> bool:
        """Whether every amount in ``requests`` is at most the amount here (missing means 0):
        the capacity's side of :meth:`ResourceVector.fits` (here no amount is negative)."""
        values = self._values
        return all(amount <= values.get(name, 0) for name, amount in requests.items())
