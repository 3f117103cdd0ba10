"""The agent's view of a Kubernetes cluster: the ``Cluster`` port and its adapters."""
