"""A real Kubernetes control plane on loopback, for the tests and for ``make controlplane``.

The binaries come from ``make tools`` (``.tools/bin``, built from the official Go modules at the
versions pinned under ``tools/``): etcd, kube-apiserver, kube-controller-manager, kube-scheduler
and kwok. :func:`start` runs them in a state directory, wires them together and writes an admin
kubeconfig:

* etcd on a loopback port, its data in ``<root>/etcd``;
* kube-apiserver with TLS from a throwaway CA, RBAC and Node authorization, a service-account
  issuer whose tokens (TokenRequest) it signs, and the admission plugins EKS enables;
* kube-controller-manager, so ReplicaSets, garbage collection, service-account tokens and
  PodDisruptionBudget status are the real controllers' work;
* kube-scheduler, which binds pending pods;
* kwok, the fake kubelets: every Node becomes Ready, renews its Lease every 10 s and reports its
  status every 10 minutes (kwokctl's default, as a kubelet renews its Lease every 10 s and
  reports an unchanged status every 5 minutes), every pod bound to one runs (and is made Ready
  again if its Node's lapsed heartbeat had it marked not Ready), and a deleted pod goes away
  after its grace period. A Node labelled
  :data:`FAULTY_KUBELET` is left alone (kwok manages the Nodes without that label): it stays
  NotReady, as the Node of an instance whose image's kubelet never starts.

Then it installs the agent chart's CRDs and waits until they are served. Every server runs in a
process group of its own, on record in the state directory's ``pids`` file before it runs
(:mod:`tests.support.groups`). ``python -m tests.support.controlplane up|down`` is what ``make
controlplane`` and ``make controlplane-down`` run (:mod:`tests.support.controlplane_cli`); the
pytest fixture ``controlplane`` (``tests/conftest.py``) starts one per test process, lazily.
"""

from __future__ import annotations

import json
import shutil
import socket
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from agent.kube.port import ClusterError, NotFound
from agent.kube.real.rest import KubeREST
from common.ports import free_ports
from tests.support.groups import ProcessGroups, Started
from tests.support.pki import write_pki

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / ".tools" / "bin"
CRDS = ROOT / "deploy" / "helm" / "driftwave-agent" / "crds"
KWOK_STAGES = ROOT / ".tools" / "kwok-stages.yaml"
KWOK_READY_AGAIN = Path(__file__).with_name("kwok-pod-ready-again.yaml")
"""A stage of our own: a running pod marked not Ready (its Node's heartbeat lapsed under load) is
made Ready again, as a live kubelet would."""
FAULTY_KUBELET = "driftwave.test/faulty-kubelet"
"""The label of a Node no kubelet runs for: kwok does not manage it, so it never becomes Ready
(:class:`tests.support.instancenodes.InstanceNodes` sets it for faulty images)."""
NODE_LEASE_SECONDS = 40
"""The duration of each Node's Lease, which kwok renews every quarter of it (a kubelet's default);
with kwok's ``node-heartbeat-with-lease`` stage a Node's status is written every 10 minutes, not
every 20 to 25 s: at 2,000 Nodes those writes (90 a second, each sent to every watcher of
Nodes) outran kwok on a 2-core machine, and Nodes whose heartbeat lapsed were marked not
Ready."""
TOOLS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
ADMIN_TOKEN = "driftwave-test-admin"
SERVICE_CIDR = "10.96.0.0/16"
# The admission plugins an EKS control plane enables (its documentation's list), beyond the
# API server's defaults.
ADMISSION = (
    "NamespaceLifecycle,LimitRanger,ServiceAccount,DefaultStorageClass,"
    "DefaultTolerationSeconds,MutatingAdmissionWebhook,ValidatingAdmissionWebhook,"
    "ResourceQuota,NodeRestriction,PodSecurity,Priority,StorageObjectInUseProtection,"
    "PersistentVolumeClaimResize,RuntimeClass,CertificateApproval,CertificateSigning,"
    "CertificateSubjectRestriction,DefaultIngressClass,TaintNodesByCondition,"
    "ExtendedResourceToleration,ValidatingAdmissionPolicy"
)


DEFAULT_SA = "/api/v1/namespaces/default/serviceaccounts/default"


class ControlPlaneError(RuntimeError):
    """The control plane could not be started (a tool missing, a server that never answered)."""


class _PortTaken(ControlPlaneError):
    """A server exited because a port picked for it was taken before it bound it."""


def missing_tools() -> list[str]:
    """The tools ``make tools`` has not built yet."""
    missing = [name for name in TOOLS if not (BIN / name).is_file()]
    if not KWOK_STAGES.is_file():
        missing.append(KWOK_STAGES.name)
    return missing


@dataclass(frozen=True)
class ControlPlane:
    """A running control plane: where its state lives and how to reach it as its admin."""

    root: Path
    server: str
    kubeconfig: Path

    def rest(self) -> KubeREST:
        """A new admin client (close it when done)."""
        return KubeREST.from_kubeconfig(str(self.kubeconfig))

    def audit(self) -> list[dict[str, Any]]:
        """The API server's audit events so far (one per request; empty where there is no log)."""
        path = self.root / "audit.log"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def apply_crds(self, folder: Path = CRDS) -> None:
        """Create (or replace) the CRDs in ``folder`` (the agent chart's by default) and wait
        until each is Established."""
        base = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        rest = self.rest()
        try:
            names = []
            for path in sorted(folder.glob("*.yaml")):
                crd = yaml.safe_load(path.read_text())
                name = crd["metadata"]["name"]
                names.append(name)
                try:
                    current = rest.request("GET", f"{base}/{name}")
                except NotFound:
                    rest.request("POST", base, body=crd)
                else:
                    crd["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
                    rest.request("PUT", f"{base}/{name}", body=crd)
            for name in names:
                _wait(lambda n=name: _established(rest, f"{base}/{n}"), 60, f"CRD {name}")
        finally:
            rest.close()


def _established(rest: KubeREST, path: str) -> bool:
    # a CRD just created has no conditions yet (null, not an empty list)
    conditions = (rest.request("GET", path).get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


def _wait(check: Any, seconds: float, what: str, servers: Sequence[Started] = ()) -> None:
    """Wait until ``check()`` holds; raise as soon as one of ``servers`` has exited (naming
    it, with its log's end; :class:`_PortTaken` when it could not bind its port)."""
    deadline = time.monotonic() + seconds
    last: Exception | None = None
    while time.monotonic() < deadline:
        for server in servers:
            _raise_if_exited(server)
        try:
            if check():
                return
        except (OSError, ClusterError, ValueError) as exc:
            last = exc
        time.sleep(0.2)
    tails = "".join(f"\n--- {s.name}.log ---\n{s.said()}" for s in servers)
    raise ControlPlaneError(f"timed out after {seconds:.0f}s waiting for {what}: {last}{tails}")


def _raise_if_exited(server: Started) -> None:
    if server.exited():
        kind = _PortTaken if server.port_taken() else ControlPlaneError
        raise kind(
            f"{server.name} exited {server.child.returncode} before it served:\n{server.said()}"
        )


def _audit_policy(root: Path) -> Path:
    """Every request at the Metadata level, as EKS's control-plane audit log has them."""
    path = root / "audit-policy.yaml"
    policy = {
        "apiVersion": "audit.k8s.io/v1",
        "kind": "Policy",
        "omitStages": ["RequestReceived"],
        "rules": [{"level": "Metadata"}],
    }
    path.write_text(yaml.safe_dump(policy))
    return path


def _kubeconfig(server: str, ca: Path, token: str) -> dict[str, Any]:
    cluster = {"server": server, "certificate-authority": str(ca)}
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "driftwave-test", "cluster": cluster}],
        "users": [{"name": "admin", "user": {"token": token}}],
        "contexts": [{"name": "admin", "context": {"cluster": "driftwave-test", "user": "admin"}}],
        "current-context": "admin",
    }


def launch(groups: ProcessGroups, root: Path) -> ControlPlane:
    """Start the servers in ``root`` through ``groups`` and wait until the plane serves; on an
    error or an interrupt the caller stops ``groups``."""
    pki = write_pki(root / "pki")
    etcd_port, api_port, peer_port, manager_port, scheduler_port, kwok_port = free_ports(6)
    etcd = f"http://127.0.0.1:{etcd_port}"
    etcd_server = _run(
        groups,
        "etcd",
        f"--data-dir={root / 'etcd'}",
        f"--listen-client-urls={etcd}",
        f"--advertise-client-urls={etcd}",
        f"--listen-peer-urls=http://127.0.0.1:{peer_port}",
        "--unsafe-no-fsync",
        "--log-level=warn",
    )
    server = f"https://127.0.0.1:{api_port}"
    tokens = root / "tokens.csv"
    tokens.write_text(f'{ADMIN_TOKEN},admin,admin,"system:masters"\n')
    api_server = _run(
        groups,
        "kube-apiserver",
        f"--etcd-servers={etcd}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={api_port}",
        f"--cert-dir={root / 'pki'}",
        f"--tls-cert-file={pki.serving_cert}",
        f"--tls-private-key-file={pki.serving_key}",
        f"--client-ca-file={pki.ca}",
        f"--requestheader-client-ca-file={pki.ca}",
        "--requestheader-allowed-names=front-proxy-client",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        f"--token-auth-file={tokens}",
        "--authorization-mode=Node,RBAC",
        f"--enable-admission-plugins={ADMISSION}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--service-account-issuer=https://kubernetes.default.svc",
        f"--service-account-key-file={pki.sa_public}",
        f"--service-account-signing-key-file={pki.sa_private}",
        "--api-audiences=https://kubernetes.default.svc",
        "--allow-privileged=true",
        f"--audit-policy-file={_audit_policy(root)}",
        f"--audit-log-path={root / 'audit.log'}",
        "--audit-log-format=json",
        "--v=0",
    )
    kubeconfig = root / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(_kubeconfig(server, pki.ca, ADMIN_TOKEN)))
    plane = ControlPlane(root=root, server=server, kubeconfig=kubeconfig)
    servers = (etcd_server, api_server)
    _wait(lambda: _answers(plane, "/readyz"), 90, "kube-apiserver /readyz", servers)
    common = [f"--kubeconfig={kubeconfig}", "--leader-elect=false", "--bind-address=127.0.0.1"]
    _run(
        groups,
        "kube-controller-manager",
        *common,
        f"--secure-port={manager_port}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        f"--service-account-private-key-file={pki.sa_private}",
        f"--root-ca-file={pki.ca}",
        "--use-service-account-credentials=false",
        "--controllers=*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller",
    )
    _run(
        groups,
        "kube-scheduler",
        *common,
        f"--secure-port={scheduler_port}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
    )
    _run(
        groups,
        "kwok",
        f"--kubeconfig={kubeconfig}",
        f"--config={KWOK_STAGES}",
        f"--config={KWOK_READY_AGAIN}",
        f"--manage-nodes-with-label-selector=!{FAULTY_KUBELET}",
        f"--server-address=127.0.0.1:{kwok_port}",
        f"--node-lease-duration-seconds={NODE_LEASE_SECONDS}",
        "--node-ip=10.0.0.1",
        "--cidr=10.64.0.0/12",
    )
    plane.apply_crds()
    _wait(lambda: _answers(plane, DEFAULT_SA), 60, "the default ServiceAccount")
    return plane


def _answers(plane: ControlPlane, path: str) -> bool:
    host, port = plane.server.removeprefix("https://").split(":")
    with socket.socket() as probe:
        if probe.connect_ex((host, int(port))) != 0:
            return False
    rest = plane.rest()
    try:
        rest.request("GET", path)
    except ClusterError:
        return False
    finally:
        rest.close()
    return True


def _run(groups: ProcessGroups, name: str, *args: str) -> Started:
    return groups.started(name, [str(BIN / name), *args])


@contextmanager
def control_plane(root: Path) -> Iterator[ControlPlane]:
    """Start a control plane in ``root`` (fresh state) and stop it, with whatever else started
    in ``root`` and is still running, when the block ends, also when the start fails or is
    interrupted half-way; if anything survives SIGKILL, the stop raises
    :class:`ControlPlaneError` naming it. Its servers die with the thread that
    started them (see :class:`~tests.support.groups.ProcessGroups`).

    A port is free when picked, not when a server binds it: another process may take it in
    between. The server then exits saying the address is in use, and the plane is started
    again on other ports (three tries)."""
    if missing := missing_tools():
        raise ControlPlaneError(f"not built: {', '.join(missing)} (run make tools; it needs Go)")
    root.mkdir(parents=True, exist_ok=True)
    for attempt in range(3):
        if attempt:
            shutil.rmtree(root / "etcd", ignore_errors=True)  # the stopped try's etcd
        groups = ProcessGroups(root, die_with_parent=True)
        try:
            try:
                plane = launch(groups, root)
            except _PortTaken:
                if attempt == 2:
                    raise
                continue
            yield plane
            return
        finally:
            # throwaway state: no need for a long graceful drain; what started beside the
            # plane in its directory (Karpenter) stops first
            report = groups.stop(grace=5, everyone=True)
            if not report.clean:
                raise ControlPlaneError(
                    f"the control plane in {root} did not stop: {report.describe()}"
                )


if __name__ == "__main__":
    from tests.support.controlplane_cli import main

    sys.exit(main(sys.argv[1:]))
