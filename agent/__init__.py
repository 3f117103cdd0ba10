"""The per-cluster agent: a Karpenter-class node manager (API models, catalog, controllers)."""
