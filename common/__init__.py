"""What the agent and the fleet both use: the strict manifest model base and its error paths,
Kubernetes name rules, durations and schedules, AMI selector terms, safe YAML, reading manifest
documents and their findings, bearer tokens, the JSON error body and trace middleware of the
HTTP APIs, tracer providers, the documents both sides speak (:mod:`common.wire`), and the port
for reading secrets.

It imports neither the agent, the fleet, the workers nor the composition root.
"""
