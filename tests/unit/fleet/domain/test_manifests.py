"""Reading Fleet and Release files: one object per file, every finding reported, cross-checks."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fleet.domain.errors import ManifestError
from fleet.domain.fleet import Fleet
from fleet.domain.manifests import (
    fleet_kinds,
    load_fleet,
    load_one,
    load_release,
    parse_one,
    release_fleet_findings,
)
from fleet.domain.model import fleet_info, release_info
from fleet.domain.release import Release
from tests.unit.agent.api.helpers import with_field
from tests.unit.fleet.domain.helpers import fleet, release


def write(tmp_path: Path, *docs: object, name: str = "m.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(list(docs), sort_keys=False))
    return path


def test_kinds_map_api_versions_to_models() -> None:
    assert fleet_kinds() == {
        ("driftwave.io/v1alpha1", "Fleet"): Fleet,
        ("driftwave.io/v1alpha1", "Release"): Release,
    }


def test_load_fleet_and_release(tmp_path: Path) -> None:
    assert load_fleet(write(tmp_path, fleet(), name="f.yaml")).name == "payments"
    assert load_release(write(tmp_path, release(), name="r.yaml")).name == "al2023-v20251216"


def test_loaded_carries_warnings_and_position(tmp_path: Path) -> None:
    data = with_field(release(), "spec.strategy.rings[0].soak", "0s")
    path = tmp_path / "r.yaml"
    path.write_text("---\n# an empty document\n---\n" + yaml.safe_dump(data))
    loaded = load_one(path, Release)
    assert loaded.document == 2
    assert loaded.line == 4  # the line of its first key: FILE:LINE opens it in an editor
    assert [w.path for w in loaded.warnings] == ["spec.strategy.rings[0].soak"]
    assert str(loaded.warnings[0]).startswith(f"{path}:4 Release/al2023-v20251216: warning: ")


def test_all_errors_are_reported_together(tmp_path: Path) -> None:
    data = with_field(fleet(), "spec.clusters[0].region", "nowhere")
    data = with_field(data, "spec.accounts[0].accountId", "12")
    with pytest.raises(ManifestError) as caught:
        load_fleet(write(tmp_path, data))
    paths = sorted(f.path for f in caught.value.findings)
    assert paths == ["spec.accounts[0].accountId", "spec.clusters[0].region"]
    assert "reading" in str(caught.value)


def test_a_second_object_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ManifestError) as caught:
        load_fleet(write(tmp_path, fleet(), fleet()))
    (finding,) = caught.value.findings
    assert finding.document == 2
    first = write(tmp_path, fleet(), name="one.yaml").read_text().count("\n")
    assert finding.line == first + 2  # after the first Fleet and the ``---`` line
    assert "exactly one Fleet" in finding.message


def test_other_kinds_in_the_file_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ManifestError) as caught:
        load_fleet(write(tmp_path, fleet(), release()))
    (finding,) = caught.value.findings
    assert (finding.document, finding.kind, finding.path) == (2, "Release", "kind")
    assert "expected a driftwave.io/v1alpha1 Fleet" in finding.message


def test_wrong_api_version_is_an_error(tmp_path: Path) -> None:
    data = with_field(release(), "apiVersion", "driftwave.io/v1")
    with pytest.raises(ManifestError) as caught:
        load_release(write(tmp_path, data))
    (finding,) = caught.value.findings
    assert finding.path == "apiVersion"
    assert "rule: apiVersion: driftwave.io/v1alpha1" in finding.message


def test_empty_unreadable_and_broken_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: Fleet\nspec: [unclosed\n")
    for path, needle in (
        (empty, "no Fleet in the file"),
        (broken, "not valid YAML"),
        (tmp_path / "missing.yaml", "cannot read"),
    ):
        with pytest.raises(ManifestError) as caught:
            load_fleet(path)
        assert needle in caught.value.findings[0].message, path


def test_parse_one_reads_text() -> None:
    loaded = parse_one(yaml.safe_dump(fleet()), "<request>", Fleet)
    assert loaded.source == "<request>"
    with pytest.raises(ManifestError) as caught:
        parse_one("a: [", "<request>", Fleet)
    assert caught.value.findings[0].source == "<request>"


def test_release_is_checked_against_its_fleet(tmp_path: Path) -> None:
    rings = [{"name": "prod"}, {"name": "canary"}, {"name": "staging"}]
    data = with_field(release(fleet="other"), "spec.strategy.rings", rings)
    loaded = load_one(write(tmp_path, data), Release)
    target = fleet_info(Fleet.model_validate(fleet()))
    found = release_fleet_findings(loaded, release_info(loaded.obj), target)
    assert [(f.path, f.severity) for f in found] == [
        ("spec.fleet", "error"),
        ("spec.strategy.rings[1].name", "error"),
        ("spec.strategy.rings[2].name", "error"),
    ]
    assert "listed after 'prod'" in found[1].message
    assert "not a ring of fleet 'payments'" in found[2].message
    assert str(found[0]).startswith(f"{loaded.source}:1 Release/al2023-v20251216: spec.fleet: ")


def test_selector_matching_nothing_is_an_error_the_release_would_roll_nothing(
    tmp_path: Path,
) -> None:
    loaded = load_one(write(tmp_path, release(clusters={"matchLabels": {"tier": "db"}})), Release)
    target = fleet_info(Fleet.model_validate(fleet()))
    (found,) = release_fleet_findings(loaded, release_info(loaded.obj), target)
    assert (found.path, found.severity) == ("spec.clusters.matchLabels", "error")
    assert "the release would roll nothing (rule: a release rolls at least one cluster)" in (
        found.message
    )
