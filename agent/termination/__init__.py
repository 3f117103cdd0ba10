"""Termination: drain a node Karpenter-style (taint, evict under PodDisruptionBudgets with
backoff, honour ``terminationGracePeriod``), then terminate its instance and release the objects."""
