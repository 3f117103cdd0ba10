"""Differential tests: driftwave's answers against Karpenter's own (``karpenter-oracle``)."""
