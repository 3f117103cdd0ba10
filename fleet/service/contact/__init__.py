"""Contact with the clusters' agents: probes of ``/v1/status`` and each cluster's health."""
