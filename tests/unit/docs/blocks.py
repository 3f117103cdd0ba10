"""The fenced code blocks of the README and ``docs/*.md``, each with the marker that says how
the documentation tests run it.

A marker is an HTML comment on the line right before the fence (blank lines between are
allowed)::

    <!-- example: not run — needs a real EKS cluster and AWS credentials -->
    <!-- example: run by tests/e2e/test_demo.py -->
    <!-- example: setup rollout -->
    <!-- example: setup fleet; exit 1 -->

``not run`` must give its reason; ``run by`` names the test file that runs the block (it must
exist); ``setup NAME`` runs the block after that set-up (``fleet``: the example Fleet applied;
``rollout``: a rollout of the example Release started, its id in ``$ID``; ``approval``: a
rollout waiting for the approval of ring ``prod``, its id in ``$ID``); ``exit N`` is the exit
code the block must end with (default 0). A block whose info string is ``text`` is a diagram or
printed output, not an example.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)(?P<info>[^`]*)$")
MARKER = re.compile(r"^\s*<!--\s*example:\s*(?P<body>.*?)\s*-->\s*$")
SETUPS = ("fleet", "rollout", "approval")


class MarkerError(ValueError):
    """A marker that says nothing the tests understand; the message names the block."""


@dataclass(frozen=True)
class Marker:
    """What a block's ``<!-- example: ... -->`` comment asks for."""

    not_run: str | None = None
    run_by: str | None = None
    setup: str | None = None
    exit_code: int = 0


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it is, its language, its text and its marker."""

    path: Path
    line: int
    lang: str
    text: str
    marker: Marker = field(default_factory=Marker)

    @property
    def where(self) -> str:
        """``docs/x.md:12``, for messages and test ids."""
        return f"{_shown(self.path)}:{self.line}"


def parse_marker(body: str, where: str) -> Marker:
    """The :class:`Marker` of a comment's text after ``example:``; raises MarkerError."""
    not_run = re.fullmatch(r"not run\s*[—:-]+\s*(?P<why>.+)", body)
    if not_run:
        return Marker(not_run=not_run.group("why").strip())
    if body.startswith("not run"):
        raise MarkerError(f"{where}: 'not run' needs its reason: not run — WHY")
    run_by = re.fullmatch(r"run by\s+(?P<path>\S+)", body)
    if run_by:
        return Marker(run_by=run_by.group("path"))
    setup: str | None = None
    exit_code = 0
    for part in (p.strip() for p in body.split(";")):
        words = part.split()
        if len(words) == 2 and words[0] == "setup" and words[1] in SETUPS:
            setup = words[1]
        elif len(words) == 2 and words[0] == "exit" and words[1].isdigit():
            exit_code = int(words[1])
        else:
            raise MarkerError(
                f"{where}: marker part {part!r} is none of: not run — WHY, run by PATH, "
                f"setup {'|'.join(SETUPS)}, exit N"
            )
    return Marker(setup=setup, exit_code=exit_code)


def blocks_of(path: Path) -> list[Block]:
    """Every fenced block of one Markdown file, with its marker."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        fence, indent = opening.group("fence"), len(opening.group("indent"))
        lang = opening.group("info").strip().split(" ")[0] if opening.group("info") else ""
        end = index + 1
        while end < len(lines) and lines[end].strip() != fence:
            end += 1
        body = "\n".join(line[indent:] for line in lines[index + 1 : end])
        where = f"{_shown(path)}:{index + 1}"
        found.append(Block(path, index + 1, lang, body + "\n", _marker_before(lines, index, where)))
        index = end + 1
    return found


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _marker_before(lines: list[str], index: int, where: str) -> Marker:
    before = index - 1
    while before >= 0 and not lines[before].strip():
        before -= 1
    if before < 0:
        return Marker()
    match = MARKER.match(lines[before])
    return parse_marker(match.group("body"), where) if match else Marker()


def all_blocks() -> list[Block]:
    """The blocks of the README and of every page under ``docs/``."""
    return [block for path in DOCS for block in blocks_of(path)]
