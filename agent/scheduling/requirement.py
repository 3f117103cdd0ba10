"""One scheduling requirement: a label key and the set of values it allows, as in Karpenter v1.

A :class:`Requirement` is Karpenter's ``scheduling.Requirement``: the value set of one key is
either *finite* (``In``: exactly these values) or a *complement* (``NotIn`` / ``Exists``: every
value except a finite set), optionally bounded by inclusive integer bounds ``gte`` / ``lte``
(``Gt N`` becomes ``gte = N + 1``, ``Lt N`` becomes ``lte = N - 1``; ``Gte`` / ``Lte`` are kept).
A value outside the bounds, or one that is not a 64-bit integer as Go's ``strconv.Atoi`` reads it
(``"7"``, ``"+7"``, ``"-7"``, ``"007"``; not ``"7.0"`` or ``" 7"``), is not allowed by a bounded
requirement. ``DoesNotExist`` is the empty finite set and ``Exists`` the complement of the empty
set; Karpenter makes no other distinction between "the label is absent" and "no value is allowed".

Bounds only ever sit on complements: intersecting a bounded complement with a finite set filters
the finite values through the bounds and drops them. Keys are normalised on construction
(``beta.kubernetes.io/arch`` → ``kubernetes.io/arch``, see :data:`NORMALIZED_LABELS`).

Objects are immutable, hashable and compare structurally, so they can be shared between the
requirement sets of many pods and instance types without copying.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Final, Literal

from agent.api import requirements as api
from agent.api.labels import WELL_KNOWN_LABELS

Operator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]
SetOperator = Literal["In", "NotIn", "Exists", "DoesNotExist"]
"""What :meth:`Requirement.operator` reports: bounds are not operators of their own there."""

INT64_MAX: Final = 2**63 - 1
INT64_MIN: Final = -(2**63)
_INTEGER = re.compile(r"[+-]?[0-9]+")
_EMPTY: frozenset[str] = frozenset()

NORMALIZED_LABELS: Final[dict[str, str]] = {
    "failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
    "beta.kubernetes.io/arch": "kubernetes.io/arch",
    "beta.kubernetes.io/os": "kubernetes.io/os",
    "beta.kubernetes.io/instance-type": "node.kubernetes.io/instance-type",
}
"""Deprecated label keys and the well-known key Karpenter reads them as."""

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "NORMALIZED_LABELS",
    "WELL_KNOWN_LABELS",
    "InvalidRequirement",
    "Operator",
    "Requirement",
    "SetOperator",
    "normalize_key",
    "parse_int",
]


class InvalidRequirement(ValueError):
    """An operator Karpenter does not know, or a bound that is not one 64-bit integer."""


def normalize_key(key: str) -> str:
    """The key Karpenter reads ``key`` as: the well-known key of a deprecated alias, or ``key``."""
    return NORMALIZED_LABELS.get(key, key)


def parse_int(value: str) -> int | None:
    """``value`` as Go's ``strconv.Atoi`` reads it on a 64-bit machine, or None when it cannot."""
    if not _INTEGER.fullmatch(value):
        return None
    number = int(value)
    return number if INT64_MIN <= number <= INT64_MAX else None


def _within(value: str, gte: int | None, lte: int | None) -> bool:
    if gte is None and lte is None:
        return True
    number = parse_int(value)
    if number is None:
        return False
    return (gte is None or number >= gte) and (lte is None or number <= lte)


def _bound(operator: str, values: tuple[str, ...]) -> int:
    number = parse_int(values[0]) if len(values) == 1 else None
    if number is None:
        raise InvalidRequirement(
            f"operator {operator} takes exactly one integer value, got "
            f"{len(values)}: {', '.join(values) or 'none'}"
        )
    return number


def _max(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    return a if b is None or a >= b else b


def _min(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    return a if b is None or a <= b else b


class Requirement:
    """The values one label key may take: a finite set or a complement, with optional bounds.

    ``Requirement(key, operator, values, min_values=...)`` builds one from a node selector
    requirement (operators In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte; values of Exists
    and DoesNotExist are ignored). ``values`` is the finite set when ``complement`` is false and
    the excluded values when it is true.
    """

    __slots__ = ("_hash", "complement", "gte", "key", "lte", "min_values", "values")

    key: str
    complement: bool
    values: frozenset[str]
    gte: int | None
    lte: int | None
    min_values: int | None
    _hash: int

    def __init__(
        self,
        key: str,
        operator: Operator | str,
        values: Iterable[str] = (),
        *,
        min_values: int | None = None,
    ) -> None:
        key = NORMALIZED_LABELS.get(key, key)
        complement, members, gte, lte = True, _EMPTY, None, None
        if operator == "In":
            complement, members = False, frozenset(values)
        elif operator == "NotIn":
            members = frozenset(values)
        elif operator == "DoesNotExist":
            complement = False
        elif operator in ("Gt", "Gte"):
            gte = _bound(operator, tuple(values)) + (1 if operator == "Gt" else 0)
            if gte > INT64_MAX:  # Gt of the largest integer allows nothing
                complement, gte = False, None
        elif operator in ("Lt", "Lte"):
            lte = _bound(operator, tuple(values)) - (1 if operator == "Lt" else 0)
        elif operator != "Exists":
            raise InvalidRequirement(f"unknown operator {operator!r} for key {key!r}")
        _init(self, key, complement, members, gte, lte, min_values)

    @classmethod
    def _make(
        cls,
        key: str,
        complement: bool,
        values: frozenset[str],
        gte: int | None,
        lte: int | None,
        min_values: int | None,
    ) -> Requirement:
        made = object.__new__(cls)
        _init(made, key, complement, values, gte, lte, min_values)
        return made

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Requirement is immutable (cannot set {name})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Requirement is immutable (cannot delete {name})")

    def has(self, value: str) -> bool:
        """Whether the label value ``value`` is allowed."""
        if (value in self.values) is self.complement:
            return False
        return _within(value, self.gte, self.lte)

    def intersection(self, other: Requirement) -> Requirement:
        """The values allowed by both (the key is this requirement's); minValues is the larger.

        Bounds that cross (``gte > lte``) give the empty set (DoesNotExist).
        """
        if other is self or (self.gte is None and self.lte is None and other == self):
            return self  # without bounds, a set meets itself in itself
        gte, lte = _max(self.gte, other.gte), _min(self.lte, other.lte)
        min_values = _max(self.min_values, other.min_values)
        if gte is not None and lte is not None and gte > lte:
            return Requirement._make(self.key, False, _EMPTY, None, None, min_values)
        if self.complement:
            values = self.values | other.values if other.complement else other.values - self.values
        else:
            values = self.values - other.values if other.complement else self.values & other.values
        if gte is not None or lte is not None:
            values = frozenset(v for v in values if _within(v, gte, lte))
        complement = self.complement and other.complement
        if not complement:
            gte = lte = None
        return Requirement._make(self.key, complement, values, gte, lte, min_values)

    def intersects(self, other: Requirement) -> bool:
        """Whether some value is allowed by both, without building the intersection.

        As in Karpenter, two complements always intersect unless their bounds cross, even when
        a closed range is wholly excluded (``Gte 4, Lte 4, NotIn [4]``).
        """
        gte, lte = _max(self.gte, other.gte), _min(self.lte, other.lte)
        if gte is not None and lte is not None and gte > lte:
            return False
        if self.complement and other.complement:
            return True
        if gte is None and lte is None:  # plain sets: the same answers, without a loop
            if self.complement:
                return not other.values <= self.values
            if other.complement:
                return not self.values <= other.values
            return not self.values.isdisjoint(other.values)
        if self.complement:
            finite, excluded = other.values, self.values
            return any(v not in excluded and _within(v, gte, lte) for v in finite)
        if other.complement:
            finite, excluded = self.values, other.values
            return any(v not in excluded and _within(v, gte, lte) for v in finite)
        small, large = (
            (self.values, other.values)
            if len(self.values) <= len(other.values)
            else (other.values, self.values)
        )
        return any(v in large and _within(v, gte, lte) for v in small)

    def operator(self) -> SetOperator:
        """In / DoesNotExist for a finite set (non-empty / empty), NotIn / Exists for a complement
        (some values excluded / none); bounds do not change the operator."""
        if self.complement:
            return "NotIn" if self.values else "Exists"
        return "In" if self.values else "DoesNotExist"

    @property
    def is_empty(self) -> bool:
        """Whether no value is allowed (DoesNotExist); complements are never empty."""
        return not self.complement and not self.values

    def __len__(self) -> int:
        """The number of allowed values; a complement counts as the largest int64 minus its
        exclusions, as in Karpenter (bounds do not reduce it)."""
        return INT64_MAX - len(self.values) if self.complement else len(self.values)

    def __bool__(self) -> bool:
        return not self.is_empty

    def any(self) -> str:
        """A representative allowed value, or ``""`` for the empty set.

        The smallest value of a finite set; for a complement, the smallest allowed integer from
        ``gte`` on (from 0 without a lower bound). Karpenter draws a random integer from the same
        range instead. A complement that only allows negative integers counts down from ``lte``.
        """
        if not self.complement:
            return min(self.values) if self.values else ""
        low = self.gte if self.gte is not None else 0
        high = self.lte if self.lte is not None else INT64_MAX
        reach = len(self.values) + 1
        candidates = (
            range(low, min(high, low + reach - 1) + 1)
            if low <= high
            else range(high, high - reach, -1)
        )
        for number in candidates:
            text = str(number)
            if text not in self.values:
                return text
        return ""

    def node_selector_requirements(self) -> list[api.Requirement]:
        """This requirement as NodeClaim requirements (Karpenter's API model, with minValues).

        A bounded complement gives ``Gte`` and/or ``Lte`` plus, when it excludes values, a
        ``NotIn`` (Karpenter drops the exclusions there; keeping them makes the conversion
        lossless). The models are built without validation: a pod's requirements may name keys
        (``kubernetes.io/hostname``) or bounds (``Lt 0`` → ``Lte -1``) a NodePool may not.
        """

        def make(operator: str, values: list[str] | None) -> api.Requirement:
            fields: dict[str, Any] = {"key": self.key, "operator": operator}
            if values is not None:
                fields["values"] = values
            if self.min_values is not None:
                fields["min_values"] = self.min_values
            return api.Requirement.model_construct(**fields)

        out: list[api.Requirement] = []
        if self.gte is not None:
            out.append(make("Gte", [str(self.gte)]))
        if self.lte is not None:
            out.append(make("Lte", [str(self.lte)]))
        operator = self.operator()
        if operator in ("In", "NotIn"):
            out.append(make(operator, sorted(self.values)))
        elif not out:
            out.append(make(operator, None))
        return out

    def _identity(self) -> tuple[object, ...]:
        return (self.key, self.complement, self.values, self.gte, self.lte, self.min_values)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Requirement):
            return NotImplemented
        return self is other or (
            self._hash == other._hash and self._identity() == other._identity()
        )

    def __hash__(self) -> int:
        return self._hash  # computed once: the solver looks requirements up in its caches often

    def __str__(self) -> str:
        """Karpenter's form: ``key In [a b]``, ``key Exists >=2 <=8``, ``... minValues 2``;
        more than five values are cut to five and ``and N others``."""
        operator = self.operator()
        if operator in ("Exists", "DoesNotExist"):
            text = f"{self.key} {operator}"
        else:
            shown = sorted(self.values)
            if len(shown) > 5:
                shown = [*shown[:5], f"and {len(shown) - 5} others"]
            text = f"{self.key} {operator} [{' '.join(shown)}]"
        if self.gte is not None:
            text += f" >={self.gte}"
        if self.lte is not None:
            text += f" <={self.lte}"
        if self.min_values is not None:
            text += f" minValues {self.min_values}"
        return text

    def __repr__(self) -> str:
        return f"Requirement({str(self)!r})"


def _init(
    target: Requirement,
    key: str,
    complement: bool,
    values: frozenset[str],
    gte: int | None,
    lte: int | None,
    min_values: int | None,
) -> None:
    setter = object.__setattr__
    setter(target, "key", key)
    setter(target, "complement", complement)
    setter(target, "values", values)
    setter(target, "gte", gte)
    setter(target, "lte", lte)
    setter(target, "min_values", min_values)
    setter(target, "_hash", hash((key, complement, values, gte, lte, min_values)))
