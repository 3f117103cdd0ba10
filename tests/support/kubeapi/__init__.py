"""A loopback Kubernetes API server for the Kubernetes adapter's tests (no kube-apiserver here).

:mod:`.store` keeps objects with the API server's versioning, subresource and finalizer rules;
:mod:`.eviction` serves the Eviction API and pod binding; :mod:`.server` serves the REST paths
over HTTP. Use :func:`kube_api_server` for a started server.
"""

from tests.support.kubeapi.server import TOKEN, KubeAPIServer, kube_api_server

__all__ = ["TOKEN", "KubeAPIServer", "kube_api_server"]
