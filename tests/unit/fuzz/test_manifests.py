"""Fuzzing the manifest readers: random YAML-ish text and structured mutations of the example
manifests (``examples/``, ``fleet/examples/``) through the YAML loader, ``validate``'s reader,
``migrate``, and Fleet, Release and Scenario parsing. The only outcomes allowed are a result or
the project's typed error, every input is read within a few seconds (no hang), and a Scenario
that ``validate`` passes loads and runs (a simulated minute) without an error.

Bounded: a fixed number of examples per target, derandomized, so ``make test`` stays quick."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.api.kinds import agent_kinds
from agent.api.migration import migrate_text
from agent.api.scenario import Scenario
from agent.api.validate import validate_paths
from agent.sim.scenario_check import scenario_objects
from agent.sim.scenario_run import ScenarioError, build_world, load_scenario, run
from common.documents import ManifestSyntaxError, load_documents
from fleet.domain.errors import ManifestError
from fleet.domain.fleet import Fleet
from fleet.domain.manifests import fleet_kinds, parse_one
from fleet.domain.release import Release

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted(
    p
    for folder in (ROOT / "agent" / "examples", ROOT / "fleet" / "examples")
    for p in folder.rglob("*.yaml")
)
FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
PIECES = [
    ":",
    " ",
    "\n",
    "- ",
    "  ",
    "---\n",
    "&a ",
    "*a",
    "<<: *a\n",
    "!!float ",
    "!!int ",
    "!!binary ",
    "!!set ",
    "!foo ",
    "? ",
    "[",
    "]",
    "{",
    "}",
    ",",
    "'",
    '"',
    "\\0",
    "\\ud800",
    "#",
    "|\n",
    ">\n",
    "%YAML 1.1\n",
    "apiVersion: ",
    "kind: ",
    "metadata:\n",
    "name: ",
    "spec:\n",
    "karpenter.sh/v1",
    "karpenter.sh/v1beta1",
    "driftwave.io/v1alpha1",
    "NodePool",
    "Fleet",
    "Release",
    "Scenario",
    "List",
    "items:\n",
    "2024-13-45",
    "1e309",
    "yes",
    "~",
    "\t",
    "\x85",
]
yamlish = st.lists(st.sampled_from(PIECES) | st.text(max_size=8), max_size=40).map("".join)
leaf = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)


def within_a_second(read: Any, *args: Any) -> None:
    started = time.monotonic()
    read(*args)
    assert time.monotonic() - started < 5.0


def mutate(data: Any, choices: st.DataObject) -> Any:
    """``data`` with one place changed: a value replaced, a key dropped or a list emptied."""
    if isinstance(data, dict) and data:
        key = choices.draw(st.sampled_from(sorted(data, key=str)))
        action = choices.draw(st.sampled_from(["replace", "drop", "descend", "descend"]))
        if action == "drop":
            return {k: v for k, v in data.items() if k != key}
        value = mutate(data[key], choices) if action == "descend" else choices.draw(leaf)
        return {**data, key: value}
    if isinstance(data, list) and data:
        index = choices.draw(st.integers(0, len(data) - 1))
        return [*data[:index], mutate(data[index], choices), *data[index + 1 :]]
    return choices.draw(
        leaf | st.lists(leaf, max_size=2) | st.dictionaries(st.text(max_size=5), leaf)
    )


def mutated_example(choices: st.DataObject) -> str:
    path = choices.draw(st.sampled_from(EXAMPLES))
    documents = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    changed = [mutate(d, choices) for d in documents]
    return yaml.safe_dump_all(changed, sort_keys=False, allow_unicode=True)


def read_all(text: str, tmp: Path) -> None:
    """Every reader on ``text``: each returns or raises the project's typed error."""
    with contextlib.suppress(ManifestSyntaxError):
        load_documents(text, "fuzz")
    with contextlib.suppress(ManifestSyntaxError):
        migrate_text(text, "fuzz")
    with contextlib.suppress(ManifestError):
        parse_one(text, "fuzz", Fleet)
    with contextlib.suppress(ManifestError):
        parse_one(text, "fuzz", Release)
    path = tmp / "fuzz.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    kinds = {**agent_kinds(), **fleet_kinds()}
    report = validate_paths([path], kinds, scenarios=scenario_objects)
    assert report.files == 1
    str(report.summary()), report.as_json(), [str(f) for f in report.findings]
    scenarios = [obj for obj in report.objects if isinstance(obj, Scenario)]
    if len(scenarios) == 1 and not report.errors:
        try:
            scenario, objects = load_scenario(path)
        except (ScenarioError, ManifestSyntaxError) as exc:
            raise AssertionError(f"validate passed what simulate refuses: {exc}") from exc
        run(build_world(scenario, objects), scenario, until=60.0)  # validate passed: it runs


@FUZZ
@given(text=yamlish)
def test_yamlish_text_gives_a_result_or_a_typed_error(tmp_path_factory: Any, text: str) -> None:
    within_a_second(read_all, text, tmp_path_factory.mktemp("fuzz"))


@FUZZ
@given(choices=st.data())
def test_mutated_examples_give_a_result_or_a_typed_error(
    tmp_path_factory: Any, choices: st.DataObject
) -> None:
    text = mutated_example(choices)
    within_a_second(read_all, text, tmp_path_factory.mktemp("fuzz"))
