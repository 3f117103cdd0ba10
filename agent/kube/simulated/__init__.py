"""An in-memory Kubernetes cluster for simulations and tests (the Cluster port's fake)."""
