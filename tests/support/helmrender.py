"""A renderer for the subset of Helm's Go templates the agent's chart uses (no helm binary here).

Supported: text with ``{{ }}`` actions and ``{{-`` / ``-}}`` whitespace trimming; ``define`` /
``include``; ``if`` / ``else if`` / ``else`` / ``end``; ``range`` over a list (``.`` is the item);
pipelines (``a | f b``); field paths from the root (``.Values.x.y``, ``.Release.Name``,
``.Release.Namespace``, ``.Chart.Name``, ``.Chart.Version``, ``.Chart.AppVersion``) or from
``.`` (inside ``range``); string, number and boolean literals; the functions ``include``,
``toYaml``, ``nindent``, ``indent``, ``quote``, ``default``, ``eq``, ``ne``, ``not``, ``and``,
``or``, ``trunc``, ``trimSuffix``, ``printf`` (``%s`` only) and ``required``. Anything else is a
:class:`TemplateError` naming the template and the action, never a silent guess.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ACTION = re.compile(r"\{\{(-?)\s*(.*?)\s*(-?)\}\}", re.S)


class TemplateError(ValueError):
    """A template uses something this renderer does not support, or a required value is missing."""


@dataclass
class Node:
    """A parsed template: text, an output action, or a block with children."""

    kind: str  # text | out | if | range | define
    value: str = ""
    children: list[Node] = field(default_factory=list)
    branches: list[tuple[str | None, list[Node]]] = field(default_factory=list)


def _tokens(source: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    for match in ACTION.finditer(source):
        text = source[pos : match.start()]
        if match.group(1):
            text = text.rstrip()
        if out and out[-1][0] == "trim":
            text = text.lstrip()
            out.pop()
        out.append(("text", text))
        out.append(("action", match.group(2)))
        if match.group(3):
            out.append(("trim", ""))
        pos = match.end()
    tail = source[pos:]
    if out and out[-1][0] == "trim":
        tail = tail.lstrip()
        out.pop()
    out.append(("text", tail))
    return out


def parse(source: str, name: str) -> tuple[list[Node], dict[str, list[Node]]]:
    """The nodes of a template and the templates it defines."""
    defines: dict[str, list[Node]] = {}
    root: list[Node] = []
    stack: list[tuple[Node, list[Node]]] = []
    current = root
    for kind, text in _tokens(source):
        if kind == "text":
            if text:
                current.append(Node("text", text))
            continue
        if text.startswith("/*"):
            continue
        word = text.split(" ", 1)[0]
        rest = text[len(word) :].strip()
        if word in ("if", "range", "define"):
            node = Node(word, rest)
            if word == "if":
                node.branches.append((rest, []))
                body = node.branches[-1][1]
            else:
                body = node.children
            current.append(node)
            stack.append((node, current))
            current = body
        elif word == "else":
            if not stack or stack[-1][0].kind != "if":
                raise TemplateError(f"{name}: else outside if")
            node = stack[-1][0]
            condition = rest[3:].strip() if rest.startswith("if ") else None
            node.branches.append((condition, []))
            current = node.branches[-1][1]
        elif word == "end":
            if not stack:
                raise TemplateError(f"{name}: end without a block")
            node, current = stack.pop()
            if node.kind == "define":
                current.remove(node)
                defines[shlex.split(node.value)[0]] = node.children
        else:
            current.append(Node("out", text))
    if stack:
        raise TemplateError(f"{name}: {stack[-1][0].kind} without end")
    return root, defines


class Chart:
    """A chart folder, rendered with values like ``helm template``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.meta = yaml.safe_load((folder / "Chart.yaml").read_text())
        self.defaults = yaml.safe_load((folder / "values.yaml").read_text()) or {}
        self.defines: dict[str, list[Node]] = {}
        self.templates: dict[str, list[Node]] = {}
        for path in sorted((folder / "templates").iterdir()):
            nodes, defines = parse(path.read_text(), path.name)
            self.defines.update(defines)
            if path.suffix == ".yaml":
                self.templates[path.name] = nodes

    def render(self, values: dict[str, Any] | None = None, *, release: str = "driftwave-agent",
               namespace: str = "driftwave") -> dict[str, str]:  # fmt: skip
        """Template name → rendered text."""
        merged = _merge(self.defaults, values or {})
        root = {
            "Values": merged,
            "Release": {"Name": release, "Namespace": namespace, "Service": "Helm"},
            "Chart": {"Name": self.meta["name"], "Version": self.meta["version"],
                      "AppVersion": self.meta.get("appVersion", "")},
        }  # fmt: skip
        return {name: self._run(nodes, root, root, name) for name, nodes in self.templates.items()}

    def objects(self, values: dict[str, Any] | None = None, **kw: str) -> list[dict[str, Any]]:
        """Every object the chart renders (templates' documents, then the CRDs)."""
        docs: list[dict[str, Any]] = []
        for text in self.render(values, **kw).values():
            docs += [d for d in yaml.safe_load_all(text) if d]
        for path in sorted((self.folder / "crds").glob("*.yaml")):
            docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
        return docs

    def _run(self, nodes: list[Node], root: Any, dot: Any, name: str) -> str:
        out = []
        for node in nodes:
            if node.kind == "text":
                out.append(node.value)
            elif node.kind == "out":
                out.append(_text(self._eval(node.value, root, dot, name)))
            elif node.kind == "if":
                for condition, body in node.branches:
                    if condition is None or _truthy(self._eval(condition, root, dot, name)):
                        out.append(self._run(body, root, dot, name))
                        break
            elif node.kind == "range":
                items = self._eval(node.value, root, dot, name) or []
                if not isinstance(items, list):
                    raise TemplateError(f"{name}: range over a non-list: {node.value}")
                out += [self._run(node.children, root, item, name) for item in items]
        return "".join(out)

    def _eval(self, expression: str, root: Any, dot: Any, name: str) -> Any:
        value: Any = None
        for index, command in enumerate(expression.split(" | ")):
            words = shlex.split(command, posix=False)
            args = [self._atom(w, root, dot, name) for w in words[1:]]
            if index:
                args.append(value)
            head = words[0]
            if head in FUNCTIONS or head == "include":
                if head == "include":
                    value = self._run(self.defines[str(args[0])], root, args[1], name)
                else:
                    value = FUNCTIONS[head](*args)
            elif len(words) == 1 and not index:
                value = self._atom(head, root, dot, name)
            else:
                raise TemplateError(f"{name}: unsupported action {{{{ {expression} }}}}")
        return value

    def _atom(self, word: str, root: Any, dot: Any, name: str) -> Any:
        if word.startswith('"') and word.endswith('"'):
            return word[1:-1]
        if word in ("true", "false"):
            return word == "true"
        if re.fullmatch(r"-?\d+", word):
            return int(word)
        if word == ".":
            return dot
        if word == "$":
            return root
        if word.startswith("."):
            value = root if word.split(".")[1] in ("Values", "Release", "Chart") else dot
            for part in word.split(".")[1:]:
                value = value.get(part) if isinstance(value, dict) else None
            return value
        raise TemplateError(f"{name}: unsupported word {word!r}")


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        nested = isinstance(value, dict) and isinstance(out.get(key), dict)
        out[key] = _merge(out[key], value) if nested else value
    return out


def _truthy(value: Any) -> bool:
    return bool(value)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _required(message: str, value: Any) -> Any:
    if value in (None, ""):
        raise TemplateError(message)
    return value


def _to_yaml(value: Any) -> str:
    if value == {}:
        return "{}"
    if value == []:
        return "[]"
    return str(yaml.safe_dump(value, sort_keys=False, default_flow_style=False)).rstrip("\n")


def _indent(n: int, value: Any) -> str:
    return "\n".join(" " * n + line if line else line for line in str(value).split("\n"))


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "toYaml": _to_yaml,
    "nindent": lambda n, v: "\n" + _indent(n, v),
    "indent": _indent,
    "quote": lambda v: '"' + _text(v).replace("\\", "\\\\").replace('"', '\\"') + '"',
    "default": lambda d, v=None: v if v not in (None, "", [], {}) else d,
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "not": lambda v: not _truthy(v),
    "and": lambda *vs: all(_truthy(v) for v in vs),
    "or": lambda *vs: any(_truthy(v) for v in vs),
    "trunc": lambda n, v: str(v)[:n],
    "trimSuffix": lambda s, v: str(v)[: -len(s)] if s and str(v).endswith(s) else str(v),
    "printf": lambda fmt, *vs: fmt.replace("%s", "{}").format(*vs),
    "required": _required,
}
