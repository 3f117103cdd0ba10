"""``driftwave validate`` checks a Scenario whole, as ``driftwave agent simulate`` reads it: a
scale event naming a missing Deployment, an AMI with an invalid ``created`` date, a 300-character
zone name, an invalid inline manifest. Each is an error naming the field in both commands (exit
1), and neither ever fails with a traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from driftwave.cli import app

runner = CliRunner()
DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        },
    },
}


def scenario(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "driftwave.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "s"},
        "spec": {"cluster": {"name": "c"}, "manifests": [DEPLOYMENT], "until": "2m", **spec},
    }


AMI = {"id": "ami-0abc12", "name": "custom", "created": "2025-12-02"}
CASES = [
    (
        {"events": [{"at": "1m", "scale": {"kind": "Deployment", "name": "nope", "replicas": 2}}]},
        "spec.events[0].scale.name: no Deployment default/nope exists at 1m",
    ),
    ({"amis": [{**AMI, "created": "2025-13-45"}]}, "spec.amis[0].created: '2025-13-45' is not"),
    (
        {"events": [{"at": "1m", "publishAmi": {**AMI, "created": "yesterday"}}]},
        "spec.events[0].publishAmi.created: 'yesterday' is not a date",
    ),
    (
        {"cluster": {"name": "c", "zones": ["us-east-1" + "a" * 291]}},
        "spec.cluster.zones[0]: must be at most 63 characters long",
    ),
    ({"manifests": [{**DEPLOYMENT, "spec": {"replicas": "two"}}]}, "spec.manifests[0].spec"),
    (
        {"events": [{"at": "1m", "fault": {"faultyAmi": "ami-0fff"}}]},
        "spec.events[0].fault.faultyAmi: no such AMI at that time",
    ),
    ({"amis": [AMI, AMI]}, "spec.amis: the catalog already has an AMI ami-0abc12"),
    (
        {"events": [{"at": "1m", "apply": {"apiVersion": "v1", "kind": "Pod"}}]},
        "spec.events[0].apply.metadata.name: required field is missing",
    ),
    (
        {"events": [{"at": "1m", "fault": {"insufficientCapacity": {"zone": "us-east-1z"}}}]},
        "spec.events[0].fault.insufficientCapacity.zone: zone us-east-1z is not one of the "
        "cluster's zones (us-east-1a, us-east-1b, us-east-1c) (rule: a fault names a zone "
        "of spec.cluster.zones)",
    ),
    (
        {"events": [{"at": "1m", "kubernetesVersion": "1.29"}]},
        "spec.events[0].kubernetesVersion: 1.29 at 1m would downgrade the control plane from "
        "1.30 (rule: an EKS control plane is never downgraded",
    ),
    (  # in time order: the upgrade at 1m comes first, the event at 90s goes back
        {
            "events": [
                {"at": "90s", "kubernetesVersion": "1.30"},
                {"at": "1m", "kubernetesVersion": "1.31"},
            ]
        },
        "spec.events[0].kubernetesVersion: 1.30 at 90s would downgrade the control plane from 1.31",
    ),
]


@pytest.mark.parametrize(("spec", "message"), CASES)
def test_validate_and_simulate_refuse_the_same_scenario(
    tmp_path: Path, spec: dict[str, Any], message: str
) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario(**spec)))
    for args in (["validate", str(path)], ["agent", "simulate", str(path)]):
        result = runner.invoke(app, args)
        output = result.stdout + result.stderr
        assert result.exit_code == 1, (args, output)
        assert isinstance(result.exception, SystemExit), (args, repr(result.exception))
        assert message in output, (args, output)


def test_a_valid_scenario_with_a_scale_event_passes_both(tmp_path: Path) -> None:
    events = [{"at": "1m", "scale": {"kind": "Deployment", "name": "web", "replicas": 2}}]
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario(events=events, amis=[AMI])))
    assert runner.invoke(app, ["validate", str(path)]).exit_code == 0
    result = runner.invoke(app, ["agent", "simulate", "--json", str(path)])
    assert result.exit_code == 0, result.output


def test_upgrades_and_a_repeated_version_pass(tmp_path: Path) -> None:
    path = tmp_path / "scenario.yaml"
    events = [
        {"at": "30s", "kubernetesVersion": "1.30"},
        {"at": "1m", "kubernetesVersion": "1.31"},
        {"at": "90s", "fault": {"insufficientCapacity": {"zone": "us-east-1b", "for": "10s"}}},
    ]
    path.write_text(yaml.safe_dump(scenario(events=events)))
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 0, result.stdout + result.stderr
