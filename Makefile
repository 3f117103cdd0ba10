# driftwave: two commands on a fresh machine.
#   make demo   creates the virtual environment, installs, runs the main job (no servers needed)
#   make test   ruff, mypy --strict, import-linter contracts, pytest
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
UV     := $(VENV)/bin/uv
STAMP  := $(VENV)/.installed

.PHONY: install demo test lint typecheck contracts pytest bench schemas lock clean services services-down \
	tools controlplane controlplane-down

install: $(STAMP)

$(STAMP): requirements.lock pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@awk '/^uv==/{p=1; print; next} p && /^ +--hash/{print; next} {p=0}' requirements.lock \
		> $(VENV)/uv-requirement.txt
	@$(PY) -m pip install --quiet --disable-pip-version-check --require-hashes \
		-r $(VENV)/uv-requirement.txt
	$(UV) pip sync --quiet --compile-bytecode --python $(PY) --require-hashes requirements.lock
	$(UV) pip install --quiet --compile-bytecode --python $(PY) --no-deps -e .
	@touch $(STAMP)

demo: install
	$(VENV)/bin/driftwave demo

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: install
	$(VENV)/bin/mypy

contracts: install
	$(VENV)/bin/lint-imports

# Three workers on two cores: one of them spends its first ~14 minutes waiting on Karpenter's
# wall-clock pacing (the tests grouped in tests/conftest.py), the other two run the rest.
pytest: install tools
	$(VENV)/bin/pytest -q -n 3 --dist loadgroup --durations=20

test: lint typecheck contracts pytest

# Every benchmark (startup, manifests, scheduling beside Karpenter's own, disruption, fleet, and
# live: Karpenter's controller beside the native agent on real clusters, about an hour);
# the fleet benchmark runs against PostgreSQL and Redis, started as for the tests.
bench: install tools
	@eval "$$(bash .ci/services start)" && $(PY) -m bench

schemas: install
	$(PY) -c "from pathlib import Path; from agent.api.schemas import write_schemas; write_schemas(Path('deploy/schemas'))"
	$(PY) -c "from pathlib import Path; from agent.api.crds import write_crds; write_crds(Path('deploy/helm/driftwave-agent/crds'))"

# The test tools from the Go modules pinned under tools/ (control plane, etcd, kwok, helm, the
# Karpenter oracle) into .tools/bin; each is rebuilt only when its pins change. Without Go the
# tests that need them skip (CI, with DRIFTWAVE_REQUIRE_SERVICES=1, fails instead).
tools:
	@bash tools/build

# A real control plane on loopback (etcd, kube-apiserver, controller-manager, scheduler, kwok)
# with the chart's CRDs installed; prints the KUBECONFIG to export.
controlplane: install tools
	@$(PY) -m tests.support.controlplane up

# Stops everything started in .tools/controlplane (a start still under way too): SIGTERM, then
# SIGKILL after 10 s; says "control plane stopped" only when nothing is left, else names what
# survived and fails (docs/development.md).
controlplane-down: install
	@$(PY) -m tests.support.controlplane down

# PostgreSQL, Redis and Chromium for the integration and browser tests (Debian's packages, loopback).
services:
	@bash .ci/services start

services-down:
	@bash .ci/services stop

# Re-resolve the pinned, hashed dependency set after editing pyproject.toml.
lock: install
	$(UV) pip compile pyproject.toml --extra dev --generate-hashes --python-version 3.11 \
		--quiet -o requirements.lock

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .tools
