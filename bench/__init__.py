"""Benchmarks that print measured figures (run with make bench)."""
