"""A loopback stand-in for the Kubernetes API server, kept for two faults only.

The Kubernetes adapter's tests run against a real kube-apiserver
(:mod:`tests.support.controlplane`); this stand-in serves
:mod:`tests.integration.kube.test_faults` the two faults a real API server cannot be made to
give on demand: an object the agent's models reject (the CRDs keep such objects out; a cluster
whose CRDs are older or newer than the agent's can hold one) and a watch whose history is
compacted at the moment the test chooses (410, then a relist).

:mod:`.store` keeps objects with the API server's versioning, subresource and finalizer rules;
:mod:`.eviction` serves the Eviction API and pod binding; :mod:`.server` serves the REST paths
over HTTP. Use :func:`kube_api_server` for a started server.
"""

from tests.support.kubeapi.server import TOKEN, KubeAPIServer, kube_api_server

__all__ = ["TOKEN", "KubeAPIServer", "kube_api_server"]
