"""The fleet control plane: rings, waves, gates, rollback (the scheduler and its services, the
database, the gateway to the agents) and its REST API and dashboard. The command line that
drives it is :mod:`driftwave.cli`."""
