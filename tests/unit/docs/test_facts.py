"""Every command-line option, port and size limit the README and ``docs/`` name is the code's:
options against the real typer commands' parameters, ports against the defaults in code (or
the port the same section starts the process on), limits against the constants that enforce
them. A page that says ``:8080/ui/`` beside ``driftwave api --port 8088`` fails here."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import pytest
import yaml

from common.yamlsafe import LIMITS
from fleet.api.bodies import MAX_BODY
from fleet.api.rollouts import LimitQuery
from fleet.domain.fleet import EXTERNAL_ID
from tests.unit.docs.blocks import DOCS, ROOT
from tests.unit.docs.facts import (
    Invocation,
    Text,
    all_texts,
    cli_options,
    invocations,
    port_defaults,
    prose,
)

FOREIGN_OPTIONS = {"--skip-crds": "helm's (uninstall keeps the CRDs)"}
"""Options the prose names that belong to another tool, with the tool."""

LOCAL = re.compile(r"(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1\]):(\d{2,5})(/[^\s`)\"'|,;]*)?")
API_ROUTES = ("/ui", "/v1/rollouts", "/v1/fleets", "/v1/whoami", "/v1/plans", "/openapi.json")
"""Paths only the fleet API serves (``driftwave api``): a URL with one of them names its port."""
AGENT_ROUTES = ("/v1/status", "/v1/waves", "/v1/preview", "/v1/events")
"""Paths only an agent serves (``driftwave agent serve``)."""
PORT_OPTIONS = frozenset({"--port", "--metrics-port"})


@cache
def options() -> dict[tuple[str, ...], frozenset[str]]:
    return cli_options()


@cache
def pieces() -> list[Text]:
    return all_texts()


@cache
def command_lines() -> list[Invocation]:
    tree: dict[tuple[str, ...], Any] = dict.fromkeys(options())
    return [i for p in pieces() if p.kind in ("shell", "code") for i in invocations(p, tree)]


def is_option(word: str) -> bool:
    return len(word) > 1 and word.startswith("-") and not re.fullmatch(r"-[\d.]+", word)


def test_every_option_on_a_driftwave_command_line_is_one_the_command_takes() -> None:
    wrong: list[str] = []
    for line in command_lines():
        if not line.command and line.args and not is_option(line.args[0]):
            wrong.append(f"{line.at.where}: no command driftwave {line.args[0]}")
            continue
        known = options()[line.command]
        for word in line.args:
            if word == "--":
                break
            name = word.partition("=")[0]
            if is_option(word) and name not in known:
                shown = " ".join(("driftwave", *line.command))
                wrong.append(f"{line.at.where}: {shown} has no option {name}")
    assert not wrong, "\n".join(wrong)
    assert len(command_lines()) > 100  # the docs' command lines were found


def bench_options() -> frozenset[str]:
    """The options of the benchmark scripts (``python -m bench.NAME``), from their parsers."""
    found: set[str] = set()
    for script in (ROOT / "bench").glob("*.py"):
        text = script.read_text(encoding="utf-8")
        found.update(re.findall(r"add_argument\(\s*\"(--[a-z][a-z-]*)\"", text))
    return frozenset(found)


def test_every_option_named_in_prose_is_a_driftwave_or_benchmark_option() -> None:
    every = frozenset().union(*options().values(), bench_options())
    wrong = [
        f"{p.where}: {p.text.split()[0]} is no option of driftwave nor of a benchmark"
        for p in pieces()
        if p.kind == "code"
        and is_option(p.text)
        and "driftwave" not in p.text
        and p.text.split()[0].partition("=")[0] not in every
        and p.text.split()[0] not in FOREIGN_OPTIONS
    ]
    assert not wrong, "\n".join(wrong)


def known_ports() -> set[int]:
    """The ports the code listens on by default or is deployed on: port options' defaults,
    the compose file's published ports, the test services', the example agents' and the Helm
    chart's."""
    ports = {p for defaults in port_defaults().values() for p in defaults.values()}
    compose = (ROOT / "docker-compose.yml").read_text(encoding="utf-8")
    ports.update(int(p) for p in re.findall(r'"127\.0\.0\.1:(\d+):\d+"', compose))
    services = (ROOT / ".ci" / "services").read_text(encoding="utf-8")
    ports.update(int(p) for p in re.findall(r"PORT:-(\d+)", services))
    agents = yaml.safe_load((ROOT / "examples" / "fleet" / "agents.yaml").read_text())
    ports.update(int(a["port"]) for a in agents)
    chart = yaml.safe_load((ROOT / "deploy/helm/driftwave-agent/values.yaml").read_text())
    ports.update({int(chart["port"]), int(chart["service"]["port"])})
    return ports


def started(lines: list[Invocation], command: tuple[str, ...]) -> tuple[set[int], bool]:
    """The ports ``lines`` start ``command`` on with a port option, and whether one starts it
    without (on its default)."""
    ports: set[int] = set()
    bare = False
    for line in lines:
        if line.command == command and line.at.kind == "shell":
            given = line.option_values(frozenset({"--port"}))
            ports.update(int(p) for p in given if p.isdigit())
            bare |= not given
    return ports, bare


def test_every_local_port_is_one_the_code_or_the_same_section_uses() -> None:
    known = known_ports()
    defaults = port_defaults()
    wrong: list[str] = []
    for path in {p.path for p in pieces()}:
        page = [p for p in pieces() if p.path == path]
        lines = [line for line in command_lines() if line.at.path == path]
        chosen = {int(v) for line in lines for v in line.option_values(PORT_OPTIONS) if v.isdigit()}
        chosen.update(int(p) for p in re.findall(r"\bport: (\d+)", path.read_text()))
        chosen.update(int(p) for p in re.findall(r"\(\"127\.0\.0\.1\", (\d+)\)", path.read_text()))
        for piece in page:
            if piece.kind == "code":
                continue  # the prose line holding the span is read whole
            for match in LOCAL.finditer(piece.text):
                port, route = int(match.group(1)), match.group(2) or ""
                if port not in known | chosen:
                    wrong.append(f"{piece.where}: port {port} is no default nor set on the page")
                    continue
                for command, routes in ((("api",), API_ROUTES), (("agent", "serve"), AGENT_ROUTES)):
                    if not route.startswith(routes):
                        continue
                    section = [line for line in lines if line.at.section == piece.section]
                    ports, bare = started(section, command)
                    if not ports and not bare:  # not started here: its default, or the page's
                        ports, bare = started(lines, command)
                        bare = True
                    allowed = ports | ({defaults[command]["--port"]} if bare else set())
                    if port not in allowed:
                        shown = " ".join(("driftwave", *command))
                        wrong.append(
                            f"{piece.where}: {match.group(0)} is served by {shown}, which this "
                            f"page starts on port {', '.join(map(str, sorted(allowed)))}"
                        )
    assert not wrong, "\n".join(sorted(wrong))


def number(text: str) -> int:
    """``16 Mi`` / ``1 MiB`` / ``16,777,216`` as an integer."""
    value, _, unit = text.replace(",", "").partition(" ")
    return int(value) * {"": 1, "Mi": 1 << 20, "MiB": 1 << 20, "KiB": 1 << 10}[unit]


def query_max(query: Any) -> int:
    """The ``le`` of an ``Annotated[int, Query(le=...)]``."""
    return int(next(m.le for m in query.__metadata__[0].metadata if hasattr(m, "le")))


def external_id_max() -> int:
    """The longest ``externalId`` the Fleet's pattern allows."""
    found = re.search(r"\{\d+,(\d+)\}", EXTERNAL_ID)
    assert found is not None
    return int(found.group(1))


LIMITS_NAMED = [
    ("docs/cli-reference.md", r"over (16 Mi) characters", LIMITS.max_chars),
    ("docs/cli-reference.md", r"before the (16 Mi) characters", LIMITS.max_chars),
    ("docs/cli-reference.md", r"over 16 Mi characters\s+\(([\d,]+)\)", LIMITS.max_chars),
    ("docs/cli-reference.md", r"([\d,]+)\s+documents", LIMITS.max_documents),
    ("docs/cli-reference.md", r"nesting ([\d,]+) deep", LIMITS.max_depth),
    ("docs/cli-reference.md", r"([\d,]+) aliases", LIMITS.max_aliases),
    ("docs/cli-reference.md", r"expanding past\s+([\d,]+) nodes", LIMITS.max_alias_nodes),
    ("docs/cli-reference.md", r"body of at most (1 MiB)", MAX_BODY),
    ("docs/cli-reference.md", r"at most 1 MiB \(([\d,]+) bytes\)", MAX_BODY),
    ("docs/api-reference.md", r"body over (1 MiB)", MAX_BODY),
    ("docs/api-reference.md", r"over 1 MiB\s+\(([\d,]+) bytes\)", MAX_BODY),
    ("docs/api-reference.md", r"default 50, at most ([\d,]+)\)", query_max(LimitQuery)),
    ("docs/fleet-reference.md", r"2-(\d+) characters", external_id_max()),
]
"""Each size limit the docs name: the page, the words around the number, and the constant."""
SIZE = re.compile(r"\b\d[\d,]*\s+(?:Mi|MiB|KiB|GiB|bytes|characters)\b")


@pytest.mark.parametrize(("page", "pattern", "constant"), LIMITS_NAMED)
def test_each_limit_named_is_the_constant(page: str, pattern: str, constant: int) -> None:
    found = re.findall(pattern, (ROOT / page).read_text(encoding="utf-8"))
    assert found, f"{page} no longer says {pattern!r}"
    assert {number(f) for f in found} == {constant}, (page, pattern, found)


def test_every_size_limit_named_is_checked() -> None:
    """A size in words (``N bytes``, ``N Mi``, ``N characters``) is a limit unless it is a
    measurement: the benchmarks page measures, the others name limits, each in LIMITS_NAMED."""
    unchecked: list[str] = []
    for path in DOCS:
        if path.name == "benchmarks.md":
            continue
        text, page = prose(path), path.relative_to(ROOT).as_posix()
        covered = [
            found.span(1)
            for shown, pattern, _ in LIMITS_NAMED
            if shown == page
            for found in re.finditer(pattern, text)
        ]
        for match in SIZE.finditer(text):
            if not any(start <= match.start() < end for start, end in covered):
                line = text.count("\n", 0, match.start()) + 1
                unchecked.append(f"{page}:{line}: {match.group(0)!r} is in no LIMITS_NAMED entry")
    assert not unchecked, "\n".join(unchecked)
