"""Every example in the README and ``docs/`` runs as written (see :mod:`tests.unit.docs.blocks`
for the markers): manifests validate, JSON parses, commands exit as the page says. A block the
tests cannot run must say so, and why, in its marker; those are counted and printed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.docs.blocks import DOCS, ROOT, Block, all_blocks, blocks_of, parse_marker
from tests.unit.docs.run import SHELLS, CannotRun, run_json, run_shell, run_yaml

BLOCKS = all_blocks()
EXAMPLES = [b for b in BLOCKS if b.lang != "text"]
RUNNABLE = [b for b in EXAMPLES if b.marker.not_run is None and b.marker.run_by is None]
MOST_NOT_RUN = 17
"""At most this many examples may be marked not run: each needs what no test machine has (a real
EKS cluster, a Kubernetes cluster with its database for the fleet's chart, a company's OIDC
provider, a PostgreSQL administrator, a collector) and names the test that runs its like. The
runbook moving a cluster between Karpenter and the agent holds two (one per direction)."""


def _id(block: Block) -> str:
    return block.where


def test_every_page_is_read() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in DOCS}
    for page in (
        "README.md",
        "docs/concepts.md",
        "docs/fleet-reference.md",
        "docs/cli-reference.md",
        "docs/api-reference.md",
        "docs/agent-reference.md",
        "docs/operations.md",
        "docs/karpenter-compatibility.md",
        "docs/benchmarks.md",
        "docs/notifications.md",
    ):
        assert page in names
    assert len(RUNNABLE) >= 20, "the docs' examples are run, not only marked"


@pytest.mark.parametrize("block", RUNNABLE, ids=_id)
def test_the_example_runs(block: Block, tmp_path: Path) -> None:
    if block.lang in ("yaml", "yml"):
        run_yaml(block, tmp_path)
    elif block.lang == "json":
        run_json(block)
    elif block.lang in SHELLS:
        run_shell(block, tmp_path)
    else:
        raise CannotRun(
            f"{block.where}: a {block.lang or 'plain'} block the tests cannot run: give it a "
            "language they run (yaml, json, sh), text for output or diagrams, or a marker "
            "<!-- example: not run — WHY -->"
        )


def test_blocks_run_elsewhere_name_a_test_that_exists() -> None:
    elsewhere = [b for b in EXAMPLES if b.marker.run_by is not None]
    assert elsewhere, "make demo and make test are run by named tests"
    for block in elsewhere:
        assert block.marker.run_by is not None
        path = ROOT / block.marker.run_by
        assert path.is_file(), f"{block.where}: {block.marker.run_by} does not exist"


def test_blocks_not_run_are_few_and_say_why(capsys: pytest.CaptureFixture[str]) -> None:
    not_run = [b for b in EXAMPLES if b.marker.not_run is not None]
    with capsys.disabled():
        print(f"\n{len(not_run)} documentation example(s) not run here:")
        for block in not_run:
            print(f"  {block.where}: {block.marker.not_run}")
    assert all(len(b.marker.not_run or "") > 10 for b in not_run)
    assert len(not_run) <= MOST_NOT_RUN, "keep the examples that cannot run here few"


def test_a_marker_without_a_reason_or_of_unknown_words_is_refused() -> None:
    with pytest.raises(ValueError, match="needs its reason"):
        parse_marker("not run", "x.md:1")
    with pytest.raises(ValueError, match="none of"):
        parse_marker("setup everything", "x.md:1")
    assert parse_marker("setup rollout; exit 1", "x.md:1").exit_code == 1


def test_the_extractor_finds_blocks_and_their_markers(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Intro.\n\n<!-- example: not run — needs a real EKS cluster -->\n\n"
        "```sh\ndriftwave agent serve --in-cluster\n```\n\n"
        '- a list item:\n\n  ```json\n  {"a": 1}\n  ```\n\n'
        "<!-- example: setup rollout; exit 1 -->\n```sh\ndriftwave rollout status x\n```\n"
    )
    first, second, third = blocks_of(page)
    assert (first.lang, first.line, first.marker.not_run) == ("sh", 5, "needs a real EKS cluster")
    assert json.loads(second.text) == {"a": 1}
    assert second.marker == parse_marker("exit 0", "x")
    assert (third.marker.setup, third.marker.exit_code) == ("rollout", 1)


def test_an_unmarked_block_that_cannot_run_fails(tmp_path: Path) -> None:
    block = Block(ROOT / "README.md", 1, "yaml", "just: a mapping\n")
    with pytest.raises(CannotRun):
        run_yaml(block, tmp_path)
    broken = Block(ROOT / "README.md", 1, "sh", "driftwave rollout status ro-nosuch\n")
    with pytest.raises(AssertionError, match="exit 1, expected 0"):
        run_shell(broken, tmp_path)
