"""``driftwave demo``: a rollout across simulated clusters on the embedded default."""
