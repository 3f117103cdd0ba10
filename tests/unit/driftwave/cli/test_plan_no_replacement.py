"""``agent plan`` agrees with ``agent simulate`` on drift under ``terminationGracePeriod``: a node
none of whose pods will be evicted (a ``maxUnavailable: 0`` PDB, a ``do-not-disrupt`` pod) is
deleted when its grace period ends with no replacement; the others are replaced."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from driftwave.cli import app

runner = CliRunner()
SCENARIO = """
apiVersion: driftwave.io/v1alpha1
kind: Scenario
metadata: {name: grace}
spec:
  cluster: {name: demo, zones: [us-east-1a, us-east-1b], kubernetesVersion: "1.30"}
  manifests:
  - apiVersion: karpenter.sh/v1
    kind: NodePool
    metadata: {name: grace}
    spec:
      template:
        spec:
          nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
          terminationGracePeriod: 20m
          requirements:
          - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
          - {key: node.kubernetes.io/instance-type, operator: In, values: [m6i.xlarge]}
      disruption:
        consolidateAfter: Never
        budgets: [{nodes: "100%"}]
  - apiVersion: karpenter.k8s.aws/v1
    kind: EC2NodeClass
    metadata: {name: default}
    spec:
      amiSelectorTerms: [{alias: al2023@latest}]
      role: KarpenterNodeRole-demo
      subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
      securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  - apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web}
    spec:
      replicas: 2
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec:
          containers: [{name: web, image: nginx, resources: {requests: {cpu: "3"}}}]
  - apiVersion: apps/v1
    kind: Deployment
    metadata: {name: db}
    spec:
      replicas: 1
      selector: {matchLabels: {app: db}}
      template:
        metadata: {labels: {app: db}}
        spec:
          containers: [{name: db, image: pg, resources: {requests: {cpu: "3"}}}]
  - apiVersion: policy/v1
    kind: PodDisruptionBudget
    metadata: {name: db-pdb}
    spec:
      maxUnavailable: 0
      selector: {matchLabels: {app: db}}
  - apiVersion: batch/v1
    kind: Job
    metadata: {name: train}
    spec:
      template:
        metadata:
          labels: {app: train}
          annotations: {karpenter.sh/do-not-disrupt: "true"}
        spec:
          restartPolicy: Never
          containers: [{name: t, image: trainer, resources: {requests: {cpu: "3"}}}]
  events:
  - at: 10m
    kubernetesVersion: "1.31"
  until: 45m
"""


def test_plan_deletes_without_replacement_what_simulate_deletes(tmp_path: Path) -> None:
    path = tmp_path / "grace.yaml"
    path.write_text(SCENARIO)
    plan = runner.invoke(app, ["agent", "plan", str(path), "--json"])
    assert plan.exit_code == 0, plan.output
    body = json.loads(plan.stdout)
    actions = {row["node"]: row["action"] for row in body["drifted"]}
    assert (body["replace"], body["delete"], body["held"]) == (2, 2, 0)
    deleted = [row for row in body["drifted"] if row["action"] == "delete"]
    notes = " ".join(row["deleteNote"] for row in deleted)
    assert "pdb db-pdb prevents pod evictions" in notes
    assert "karpenter.sh/do-not-disrupt" in notes
    assert all("terminationGracePeriod 20m ends" in row["deleteNote"] for row in deleted)
    assert all(row["drainWaitSeconds"] == 1200 for row in deleted)

    simulated = runner.invoke(app, ["agent", "simulate", str(path), "--json"])
    assert simulated.exit_code == 0, simulated.output
    commands = [
        event["reason"]
        for event in json.loads(simulated.stdout)["timeline"]
        if event["type"] == "DisruptionStarted"
    ]
    for node, action in actions.items():
        (command,) = [c for c in commands if node in c]
        assert f"via drift {action}," in command, (node, command)

    tables = runner.invoke(app, ["agent", "plan", str(path)], env={"COLUMNS": "250"})
    assert "2 to replace, 2 to delete without replacement, 0 held" in tables.output
