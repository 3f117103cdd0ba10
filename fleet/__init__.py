"""The fleet control plane: rings, waves, gates, rollback, and the driftwave command line."""
