"""Manifest models (Karpenter v1, the Kubernetes objects the agent reads), status conditions,
checks, migration."""
