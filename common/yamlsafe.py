"""Bounded YAML reading: the one home for turning YAML text into data.

Every YAML reader of driftwave (manifest files, ``migrate``, scenarios, ``agent serve --config``,
the API's tokens file, request bodies) goes through here, so a hostile file cannot hang a
command or exhaust a server. Before anything is built, the text is measured against
:class:`YamlLimits` (its size, then, walking the parser's events without building anything: the
number of documents, the nesting depth, the number of aliases and how many nodes they expand to,
and aliases that refer to a node containing them). A file over a limit is refused with
:class:`YamlError` naming the limit (``limit``) and the line.

Building the data then refuses a key twice in one mapping (as kubectl does), and turns a value
that cannot be built (an explicit ``!!float x``, ``!!int``, ``!!bool``, a date such as
``2024-13-45``) into a :class:`YamlError` naming the document, the line and the tag, never the
value. YAML is read with YAML 1.1 scalars, as kubectl reads it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:  # ruamel loads with the round trip (migrate), not to read plain data
    from ruamel.yaml import YAML


@dataclass(frozen=True)
class YamlLimits:
    """What one YAML text may hold."""

    max_chars: int = 16 << 20
    """Characters in the whole text (16 MiB)."""
    max_documents: int = 10_000
    """Documents (``---``) in one text."""
    max_depth: int = 100
    """Nesting of mappings and sequences."""
    max_aliases: int = 10_000
    """Aliases (``*name``, merge keys included) in one text."""
    max_alias_nodes: int = 100_000
    """Nodes the aliases add when expanded (what makes a billion-laughs bomb)."""


LIMITS = YamlLimits()
"""The limits every reader uses unless told otherwise."""


class YamlError(ValueError):
    """YAML text that cannot be read, or is over a limit (``limit`` names which, else None).

    ``reason`` never holds a value of the text (it may be a secret)."""

    def __init__(self, reason: str, limit: str | None = None) -> None:
        self.reason = reason
        self.limit = limit
        super().__init__(reason)


def _over(limit: str, what: str, mark: Any = None) -> YamlError:
    where = f"line {mark.line + 1}: " if mark is not None else ""
    return YamlError(f"over a limit: {where}{what} (limit: {limit})", limit)


def check_limits(text: str, limits: YamlLimits = LIMITS) -> None:
    """Refuse ``text`` when it is over one of ``limits`` (:class:`YamlError`), building nothing.

    Walks the parser's events once, counting each node as the number of nodes it stands for once
    its aliases are expanded."""
    if len(text) > limits.max_chars:
        raise _over("size", f"the text is over {limits.max_chars} characters")
    open_sizes: list[int] = []
    open_anchors: list[str | None] = []
    anchors: dict[str, int] = {}
    documents = aliases = alias_nodes = 0
    try:
        for event in yaml.parse(text, Loader=_PARSER):
            if isinstance(event, yaml.DocumentStartEvent):
                documents += 1
                anchors.clear()
                if documents > limits.max_documents:
                    raise _over("documents", f"more than {limits.max_documents} documents")
            elif isinstance(event, yaml.CollectionStartEvent):
                if len(open_sizes) >= limits.max_depth:
                    what = f"nested more than {limits.max_depth} levels deep"
                    raise _over("depth", what, event.start_mark)
                open_sizes.append(1)
                open_anchors.append(event.anchor)
            elif isinstance(event, yaml.CollectionEndEvent):
                _add(open_sizes, anchors, open_anchors.pop(), open_sizes.pop())
            elif isinstance(event, yaml.ScalarEvent):
                _add(open_sizes, anchors, event.anchor, 1)
            elif isinstance(event, yaml.AliasEvent):
                if event.anchor in open_anchors:
                    line = event.start_mark.line + 1 if event.start_mark else "?"
                    raise YamlError(
                        f"line {line}: alias *{event.anchor} refers to a node that contains it "
                        "(rule: no recursive aliases)"
                    )
                aliases += 1
                size = anchors.get(str(event.anchor), 1)
                alias_nodes += size
                if aliases > limits.max_aliases:
                    what = f"more than {limits.max_aliases} aliases"
                    raise _over("aliases", what, event.start_mark)
                if alias_nodes > limits.max_alias_nodes:
                    what = f"aliases expand to more than {limits.max_alias_nodes} nodes"
                    raise _over("alias expansion", what, event.start_mark)
                _add(open_sizes, anchors, None, size)
    except yaml.YAMLError as exc:
        raise YamlError(f"not valid YAML: {exc}") from exc


def _add(open_sizes: list[int], anchors: dict[str, int], anchor: str | None, size: int) -> None:
    if anchor:
        anchors[anchor] = size
    if open_sizes:
        open_sizes[-1] += size


_PARSER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def unbuildable(node: Any, document: int | None) -> str:
    """The reason for a node whose value cannot be built as its tag: where it is and the tag,
    never the value (it may be a secret)."""
    tag = str(node.tag).replace("tag:yaml.org,2002:", "!!")
    mark = node.start_mark
    where = f"document {document}, " if document else ""
    return (
        f"{where}line {mark.line + 1}, column {mark.column + 1}: the value cannot be read as "
        f"{tag} (rule: a value must fit its tag; quote it to make it a string)"
    )


class _BoundedLoader(_PARSER):  # type: ignore[misc]
    """The safe loader, refusing a key twice in one mapping and naming a value it cannot build."""

    document: int | None = None

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                twice = key != "<<" and key in seen
                seen.add(key)
            except TypeError:
                twice = False  # an unhashable key: the base class refuses it
            if twice:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (yaml.YAMLError, YamlError):
            raise
        except Exception as exc:  # a library constructor failing on a value it cannot build
            raise YamlError(unbuildable(node, self.document)) from exc


@dataclass(frozen=True)
class Located:
    """A document of a YAML text as plain data, and the lines where it stands (from 1)."""

    data: Any
    line: int
    """The line where the document's content starts (its first key, after ``---`` and
    comments): what a finding about the document points an editor at."""
    items: tuple[int, ...] = ()
    """The start line of each item of the document's top-level ``items`` list (``kind: List``)."""


def load_all(text: str, limits: YamlLimits = LIMITS) -> list[Any]:
    """Every document of ``text`` as plain data (an empty document is None).

    Raises :class:`YamlError` when the text is over a limit or cannot be read."""
    return [document.data for document in load_located(text, limits)]


def load_located(text: str, limits: YamlLimits = LIMITS) -> list[Located]:
    """Every document of ``text`` with its start line (:class:`Located`); as :func:`load_all`."""
    check_limits(text, limits)
    loader = _BoundedLoader(text)
    loaded: list[Located] = []
    try:
        while loader.check_node():
            loader.document = len(loaded) + 1
            node = loader.get_node()
            data = plain(loader.construct_document(node))
            loaded.append(Located(data, node.start_mark.line + 1, _item_lines(node)))
    except yaml.YAMLError as exc:
        where = f"document {len(loaded) + 1}: " if loaded else ""
        raise YamlError(f"not valid YAML: {where}{exc}") from exc
    finally:
        loader.dispose()
    return loaded


def _item_lines(node: yaml.Node) -> tuple[int, ...]:
    if not isinstance(node, yaml.MappingNode):
        return ()
    for key, value in node.value:
        if key.value == "items" and isinstance(value, yaml.SequenceNode):
            return tuple(item.start_mark.line + 1 for item in value.value)
    return ()


def load_single(text: str, limits: YamlLimits = LIMITS) -> Any:
    """The one document of ``text`` (None when empty); :class:`YamlError` when there are more."""
    documents = load_all(text, limits)
    if len(documents) > 1:
        raise YamlError(f"holds {len(documents)} YAML documents (rule: exactly one)")
    return documents[0] if documents else None


def load_round_trip(loader: YAML, text: str, limits: YamlLimits = LIMITS) -> list[Any]:
    """Every document of ``text`` read by ruamel ``loader`` (round trip: comments and order kept).

    The same limits and errors as :func:`load_all`."""
    from ruamel.yaml.error import MarkedYAMLError as RuamelMarkedError
    from ruamel.yaml.error import YAMLError as RuamelYAMLError

    from common.yamlsafe_roundtrip import RoundTripConstructor

    check_limits(text, limits)
    loader.Constructor = RoundTripConstructor
    documents: list[Any] = []
    try:
        for data in loader.load_all(text):
            documents.append(data)
    except YamlError as exc:
        raise YamlError(f"document {len(documents) + 1}, {exc.reason}") from exc
    except RuamelMarkedError as exc:
        raise YamlError(f"not valid YAML: document {len(documents) + 1}: {exc}") from exc
    except RuamelYAMLError as exc:
        raise YamlError(f"not valid YAML: {exc}") from exc
    return documents


def plain(value: Any) -> Any:
    """Loaded YAML as plain JSON-like data (timestamps become RFC 3339 strings)."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dt.datetime):
        text = value.isoformat()
        return text.replace("+00:00", "Z") if value.tzinfo else text + "Z"
    if isinstance(value, dt.date):
        return value.isoformat()
    return value
