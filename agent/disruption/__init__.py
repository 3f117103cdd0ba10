"""Disruption: candidates, budgets, one module per method (emptiness, drift, consolidation),
the orchestration queue, drift halts and the controller."""
