"""Every relative link of the README and ``docs/`` reaches a file that exists and, when it names
an anchor, a heading of that file (anchors as GitHub makes them from headings)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.unit.docs.blocks import DOCS, ROOT

LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(?P<title>.+?)\s*$")


def anchor(title: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = title.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors_of(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings (outside fenced blocks)."""
    found: set[str] = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        match = None if fenced else HEADING.match(line)
        if match:
            found.add(anchor(match.group("title")))
    return found


def links_of(path: Path) -> list[str]:
    """The relative link targets of a Markdown file (not http, mailto or in-code)."""
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    return [
        m.group("target")
        for m in LINK.finditer(text)
        if not re.match(r"[a-z]+:", m.group("target"))
    ]


def test_anchors_follow_githubs_rule() -> None:
    assert anchor("Runbook: a rollout does not move") == "runbook-a-rollout-does-not-move"
    assert anchor("`spec.accounts[]`") == "specaccounts"
    assert anchor("Several agents: `--config`") == "several-agents---config"


@pytest.mark.parametrize("page", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken: list[str] = []
    for target in links_of(page):
        file_part, _, fragment = target.partition("#")
        goal = (page.parent / file_part).resolve() if file_part else page
        if not goal.exists():
            broken.append(f"{target}: no such file")
        elif fragment and goal.suffix == ".md" and fragment not in anchors_of(goal):
            broken.append(f"{target}: no heading with anchor #{fragment}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)
