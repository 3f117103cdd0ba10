"""The Kubernetes adapter of the Cluster port: the official client against a real API server.

:mod:`.rest` makes the requests (kubeconfig or in-cluster credentials, typed errors),
:mod:`.resources` maps the agent's models to REST paths, :mod:`.convert` reads API objects into
the models and turns changes into merge patches, :mod:`.informer` lists and watches one kind
into a cache, :mod:`.cluster` is the port (:class:`~agent.kube.real.cluster.KubeCluster`) and
:mod:`.leader` elects one active replica through a Lease.
"""
