"""Manifest models (Karpenter v1 and the Kubernetes objects the agent reads), validation, migration."""
