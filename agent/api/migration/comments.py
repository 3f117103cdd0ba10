"""Keeping comments in place while keys move between mappings (ruamel round-trip YAML).

ruamel attaches a comment to the key *before* it: a key's comment token holds its end-of-line
comment and then every full-line comment up to the next key, even one that belongs to the next
key or to an outer mapping. Moving a key must therefore carry only its own end-of-line comment
and leave the lines that follow it where they stand.
"""

from __future__ import annotations

from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import CommentMark
from ruamel.yaml.tokens import CommentToken


def _token(node: Any, key: Any) -> CommentToken | None:
    items = getattr(node, "ca", None)
    entry = items.items.get(key) if items is not None else None
    return entry[2] if entry and len(entry) > 2 else None


def _split(value: str) -> tuple[str, str]:
    """(end-of-line comment, the full-line comments after it) of a token's text."""
    first, _, rest = value.partition("\n")
    return (first if first.lstrip().startswith("#") else ""), rest


def _last_leaf(node: Any) -> tuple[Any, Any] | None:
    """(container, key) of the last scalar entry inside a mapping or sequence, if any."""
    while isinstance(node, CommentedMap | CommentedSeq) and len(node):
        key = list(node.keys())[-1] if isinstance(node, CommentedMap) else len(node) - 1
        child = node[key]
        if isinstance(child, CommentedMap | CommentedSeq) and len(child):
            node = child
            continue
        return node, key
    return None


def _set(node: Any, key: Any, value: str) -> None:
    if not value or value == "\n":
        node.ca.items.pop(key, None)
        return
    node.ca.items[key] = [None, None, CommentToken(value, CommentMark(0), None), None]


def take_trailing(node: Any, key: Any) -> str:
    """Remove and return the full-line comments that follow ``node[key]`` (and its contents)."""
    taken = ""
    target: tuple[Any, Any] | None = (node, key)
    value = node[key]
    if isinstance(value, CommentedMap | CommentedSeq) and len(value):
        target = _last_leaf(value)
    if target is not None:
        token = _token(*target)
        if token is not None:
            eol, rest = _split(token.value)
            taken = rest
            _set(target[0], target[1], eol + "\n" if eol else "")
    return taken


def give_trailing(node: Any, key: Any, text: str) -> None:
    """Append full-line comments after ``node[key]`` (after its last entry if a collection)."""
    if not text:
        return
    target: tuple[Any, Any] | None = (node, key)
    value = node[key]
    if isinstance(value, CommentedMap | CommentedSeq) and len(value):
        target = _last_leaf(value)
    if target is None:
        return
    token = _token(*target)
    current = token.value if token is not None else "\n"
    _set(target[0], target[1], current + text)


def pop_key(mapping: CommentedMap, key: str, orphans: str = "") -> tuple[Any, str, str]:
    """Remove ``key``; return (value, its end-of-line comment, comments left without a home).

    The full-line comments that followed the key (and ``orphans`` handed in) stay where they
    stood: after the previous key, or before the next one when the key was the first. Only when
    the mapping is left empty are they returned, for the caller to place (e.g. when it then
    removes the emptied mapping too).
    """
    keys = list(mapping.keys())
    index = keys.index(key)
    own = _token(mapping, key)
    eol = _split(own.value)[0] if own is not None else ""
    trailing = take_trailing(mapping, key) + orphans
    mapping.ca.items.pop(key, None)
    value = mapping.pop(key)
    if index > 0:
        give_trailing(mapping, keys[index - 1], trailing)
        trailing = ""
    elif trailing and len(mapping):
        _before(mapping, keys[1], trailing)
        trailing = ""
    return value, eol, trailing


def _before(mapping: CommentedMap, key: str, text: str) -> None:
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return
    indent = len(lines[0]) - len(lines[0].lstrip())
    body = "\n".join(line.strip().removeprefix("#").removeprefix(" ") for line in lines)
    mapping.yaml_set_comment_before_after_key(key, before=body, indent=indent)


def insert_key(mapping: CommentedMap, position: int, key: str, value: Any, eol: str = "") -> None:
    """Insert ``key`` at ``position`` with an end-of-line comment; comments after the previous
    last key keep following the mapping's end when the key is appended."""
    keys = list(mapping.keys())
    moved = take_trailing(mapping, keys[-1]) if keys and position >= len(keys) else ""
    mapping.insert(position, key, value)
    if eol and not isinstance(value, CommentedMap | CommentedSeq):
        _set(mapping, key, eol + "\n")
    give_trailing(mapping, key, moved)
