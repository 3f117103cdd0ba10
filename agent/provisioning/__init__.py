"""Provisioning: pending pods become NodeClaims (batching, the solve, launching)."""
