"""``driftwave agent simulate``: a whole cluster and cloud on a virtual clock."""
