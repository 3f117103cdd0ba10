"""Karpenter's structure hash: the algorithm of the Go library Karpenter hashes its objects with
(``hashstructure`` v2, format v2, FNV-1 64-bit), applied to a JSON object read as the Go type
Karpenter decodes it into.

A hash depends on the *Go* shape of the value, not on its JSON: a struct hashes its type name and
each exported field by its Go name; a nil pointer hashes as the zero value it points to; a field
whose Go value is zero (nil pointer, nil map or slice, ``""``, ``0``, ``false``, a struct of zero
fields) is skipped, but an *empty* map or slice written out is not zero and is hashed; slices
are hashed as sets (their members' hashes XOR-ed); maps as sets of key/value pairs. So the types
Karpenter decodes into are described here (:class:`Struct`, :class:`Field`, ...) and
:func:`go_hash` walks a JSON value along its type, as ``encoding/json`` would fill the Go value
and as the library would then visit it, with Karpenter's options (slices as sets, zero values
ignored, nil as zero).
"""

from __future__ import annotations

import math
import struct as binary
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction
from typing import Any

from agent.api.quantity import parse_quantity

_FNV_OFFSET = 14695981039346656037
_FNV_PRIME = 1099511628211
_MASK = (1 << 64) - 1


def fnv1_64(data: bytes) -> int:
    """FNV-1 (multiply, then XOR) over ``data``, 64 bits: Go's ``hash/fnv.New64``."""
    h = _FNV_OFFSET
    for byte in data:
        h = ((h * _FNV_PRIME) & _MASK) ^ byte
    return h


def _ordered(a: int, b: int) -> int:
    return fnv1_64(binary.pack("<QQ", a, b))


def _finish(a: int) -> int:
    return fnv1_64(binary.pack("<Q", a))


class GoHashError(ValueError):
    """A JSON value does not fit the Go type it is hashed as."""


class GoType:
    """A Go type a JSON value is decoded into."""

    def is_zero(self, value: Any) -> bool:
        """Whether the Go value decoded from ``value`` is its type's zero value."""
        raise NotImplementedError

    def visit(self, value: Any) -> int:
        """The hash of the Go value decoded from ``value`` (None: the zero value)."""
        raise NotImplementedError


@dataclass(frozen=True)
class Str(GoType):
    """A ``string`` (or a named string type)."""

    def is_zero(self, value: Any) -> bool:
        return value is None or value == ""

    def visit(self, value: Any) -> int:
        if value is not None and not isinstance(value, str):
            raise GoHashError(f"{value!r} is not a string")
        return fnv1_64((value or "").encode())


@dataclass(frozen=True)
class Int(GoType):
    """A sized integer (``int32``, ``int64``, ``time.Duration``, ...): written little-endian."""

    code: str = "q"
    """The ``struct`` format letter of its width and sign."""

    def is_zero(self, value: Any) -> bool:
        return value is None or value == 0

    def visit(self, value: Any) -> int:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise GoHashError(f"{value!r} is not an integer")
        return fnv1_64(binary.pack("<" + self.code, value or 0))


@dataclass(frozen=True)
class Bool(GoType):
    """A ``bool``: hashed as an ``int8``."""

    def is_zero(self, value: Any) -> bool:
        return not value

    def visit(self, value: Any) -> int:
        if value is not None and not isinstance(value, bool):
            raise GoHashError(f"{value!r} is not a boolean")
        return fnv1_64(b"\x01" if value else b"\x00")


@dataclass(frozen=True)
class GoDuration(GoType):
    """A ``time.Duration`` written as a Go duration string (``1h30m``): its nanoseconds."""

    def is_zero(self, value: Any) -> bool:
        return value is None or go_duration_ns(value) == 0

    def visit(self, value: Any) -> int:
        return Int("q").visit(0 if value is None else go_duration_ns(value))


@dataclass(frozen=True)
class Ptr(GoType):
    """A pointer: nil (JSON absent or null) hashes as its element's zero value."""

    elem: GoType

    def is_zero(self, value: Any) -> bool:
        return value is None

    def visit(self, value: Any) -> int:
        return self.elem.visit(value)


@dataclass(frozen=True)
class Slice(GoType):
    """A slice, hashed as a set: the XOR of its members' hashes."""

    elem: GoType

    def is_zero(self, value: Any) -> bool:
        return value is None

    def visit(self, value: Any) -> int:
        if value is None:
            return 0
        if not isinstance(value, Sequence) or isinstance(value, str):
            raise GoHashError(f"{value!r} is not a list")
        h = 0
        for member in value:
            h ^= self.elem.visit(member)
        return h


@dataclass(frozen=True)
class Map(GoType):
    """A map: the XOR of its key/value pairs' hashes, hardened."""

    value_type: GoType
    key_type: GoType = Str()

    def is_zero(self, value: Any) -> bool:
        return value is None

    def visit(self, value: Any) -> int:
        if value is None:
            return 0
        if not isinstance(value, Mapping):
            raise GoHashError(f"{value!r} is not a map")
        h = 0
        for key, item in value.items():
            h ^= _ordered(self.key_type.visit(key), self.value_type.visit(item))
        return _finish(h)


@dataclass(frozen=True)
class Field:
    """A struct field: its Go name, its JSON name, its type and its ``hash`` tag."""

    go: str
    json: str
    type: GoType
    tag: str = ""


@dataclass(frozen=True)
class Struct(GoType):
    """A struct: its type name, then each exported, non-zero, non-ignored field by Go name."""

    name: str
    fields: tuple[Field, ...]

    def is_zero(self, value: Any) -> bool:
        if value is None:
            return True
        if not isinstance(value, Mapping):
            raise GoHashError(f"{value!r} is not an object")
        return all(f.type.is_zero(value.get(f.json)) for f in self.fields)

    def visit(self, value: Any) -> int:
        if value is not None and not isinstance(value, Mapping):
            raise GoHashError(f"{value!r} is not an object")
        data: Mapping[str, Any] = value or {}
        h = Str().visit(self.name)
        for field in self.fields:
            if field.tag in ("ignore", "-"):
                continue
            item = data.get(field.json)
            if field.type.is_zero(item):
                continue
            if field.tag == "string":
                item_hash = Str().visit(quantity_string(item))
            else:
                item_hash = field.type.visit(item)
            h = _finish(h ^ _ordered(Str().visit(field.go), item_hash))
        return h


@dataclass(frozen=True)
class Nillable(GoType):
    """Karpenter's ``NillableDuration``: a struct embedding ``*time.Duration`` (nil for
    ``Never``) beside the raw JSON (not hashed, but it makes a written value non-zero)."""

    def is_zero(self, value: Any) -> bool:
        return value is None or value == "Never"

    def visit(self, value: Any) -> int:
        inner = Struct("NillableDuration", (Field("Duration", "duration", Ptr(GoDuration())),))
        return inner.visit(None if value in (None, "Never") else {"duration": value})


@dataclass(frozen=True)
class MetaDuration(GoType):
    """``metav1.Duration``: a struct embedding ``time.Duration``, written as a duration string."""

    def is_zero(self, value: Any) -> bool:
        return value is None or go_duration_ns(value) == 0

    def visit(self, value: Any) -> int:
        inner = Struct("Duration", (Field("Duration", "duration", GoDuration()),))
        return inner.visit(None if value is None else {"duration": value})


@dataclass(frozen=True)
class MetaTime(GoType):
    """``metav1.Time`` (RFC 3339 in JSON): a struct embedding ``time.Time``, which is hashed by
    its binary form (read as a UTC time, as in a controller running in UTC)."""

    def is_zero(self, value: Any) -> bool:
        return value is None

    def visit(self, value: Any) -> int:
        if value is None:
            raise GoHashError("a zero time cannot be hashed")
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        seconds = math.floor(moment.timestamp()) + 62135596800  # since January 1, year 1
        body = binary.pack(">Bqih", 1, seconds, moment.microsecond * 1000, 0)
        # the struct's name, then its one field (Time), whose value hashes as its bytes
        name = Str().visit("Time")
        return _finish(name ^ _ordered(name, fnv1_64(body)))


def go_hash(value: Any, go_type: GoType) -> int:
    """The hash of ``value`` (a JSON value) decoded into ``go_type``."""
    return go_type.visit(value)


def go_hash_all(parts: Sequence[tuple[Any, GoType]]) -> int:
    """The hash of a Go ``[]any`` of the given values (a slice: the XOR of its members)."""
    h = 0
    for value, go_type in parts:
        h ^= go_type.visit(value)
    return h


_GO_UNITS = {"ns": 1, "us": 10**3, "\u00b5s": 10**3, "\u03bcs": 10**3, "ms": 10**6,
             "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9}  # fmt: skip


def go_duration_ns(text: Any) -> int:
    """A Go duration string's length in nanoseconds (``time.ParseDuration``)."""
    if not isinstance(text, str) or not text:
        raise GoHashError(f"{text!r} is not a duration")
    rest = text
    sign = -1 if rest[0] == "-" else 1
    rest = rest.lstrip("+-")
    if rest == "0":
        return 0
    total = Fraction(0)
    while rest:
        number = ""
        while rest and (rest[0].isdigit() or rest[0] == "."):
            number, rest = number + rest[0], rest[1:]
        unit = ""
        while rest and not (rest[0].isdigit() or rest[0] == "."):
            unit, rest = unit + rest[0], rest[1:]
        if number in ("", ".") or unit not in _GO_UNITS:
            raise GoHashError(f"{text!r} is not a duration")
        total += Fraction(number) * _GO_UNITS[unit]
    return sign * int(total)


_DECIMAL_SUFFIXES = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T",
                     15: "P", 18: "E"}  # fmt: skip
_BINARY_SUFFIXES = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]


def quantity_string(value: Any) -> str:
    """A Kubernetes quantity in its canonical form (``resource.Quantity.String()``): ``1024Mi``
    is ``1Gi``, ``1500`` stays ``1500``, ``2000`` is ``2k``, ``1e3`` stays ``1e3``."""
    text = str(value).strip()
    amount = parse_quantity(text)
    amount = Fraction(math.ceil(amount * 10**9), 10**9)  # nano precision, rounded up
    suffix = text.lstrip("+-0123456789.")
    if suffix[:1] in ("e", "E"):
        style = "exponent"
    elif suffix.endswith("i"):
        style = "binary"
    else:
        style = "decimal"
    if style == "binary" and -1024 < amount < 1024:
        style = "decimal"
    if style == "binary" and amount.denominator != 1:
        style = "decimal"
    if style == "binary":
        number, power = int(amount), 0
        while abs(number) >= 1024 and number % 1024 == 0:
            number, power = number // 1024, power + 1
        return f"{number}{_BINARY_SUFFIXES[power]}"
    mantissa, exponent = _decimal(amount)
    if style == "exponent":
        return f"{mantissa}" + (f"e{exponent}" if exponent else "")
    return f"{mantissa}{_DECIMAL_SUFFIXES[exponent]}"


def _decimal(amount: Fraction) -> tuple[int, int]:
    """``amount`` as ``mantissa * 10**exponent``: no factor of ten left in the mantissa, then
    the exponent lowered to a multiple of three."""
    exponent = 0
    while amount.denominator != 1:
        amount, exponent = amount * 10, exponent - 1
    mantissa = int(amount)
    while abs(mantissa) >= 10 and mantissa % 10 == 0:
        mantissa, exponent = mantissa // 10, exponent + 1
    shift = exponent % 3
    return mantissa * 10**shift, exponent - shift


__all__ = [
    "Bool",
    "Field",
    "GoHashError",
    "GoType",
    "Int",
    "Map",
    "MetaDuration",
    "MetaTime",
    "Nillable",
    "Ptr",
    "Slice",
    "Str",
    "Struct",
    "fnv1_64",
    "go_duration_ns",
    "go_hash",
    "go_hash_all",
    "quantity_string",
]
