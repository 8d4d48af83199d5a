"""The control plane's processes, each started and waited for until it serves: etcd, kube-apiserver,
kube-controller-manager and kube-scheduler; then what the cluster holds before Kueue, KWOK and Karpenter start (the
reference CRDs, Kueue's chart objects, the simulated nodes)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Mapping

from . import nodes, probe
from .context import Context
from .state import CLUSTER_NAME, SERVICE_CIDR
from .supervise import StartError, log
from .toolcache import REFERENCE_CRDS
from .tools import binary

ADMISSION_PLUGINS = ",".join((
    "NamespaceLifecycle", "LimitRanger", "ServiceAccount", "NodeRestriction", "TaintNodesByCondition", "PodSecurity",
    "Priority", "DefaultTolerationSeconds", "ExtendedResourceToleration", "DefaultStorageClass",
    "StorageObjectInUseProtection", "PersistentVolumeClaimResize", "RuntimeClass", "CertificateApproval",
    "CertificateSigning", "ClusterTrustBundleAttest", "CertificateSubjectRestriction", "DefaultIngressClass",
    "MutatingAdmissionWebhook", "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook", "ResourceQuota"))


def start_etcd(ctx: Context) -> None:
    pki, port, peer = ctx.paths.pki, ctx.ports.etcd, ctx.ports.etcd_peer
    ctx.sup.launch("etcd", [
        str(binary("etcd")), "--name=local", f"--data-dir={ctx.paths.state / 'etcd-data'}",
        f"--listen-client-urls=https://127.0.0.1:{port}", f"--advertise-client-urls=https://127.0.0.1:{port}",
        f"--listen-peer-urls=http://127.0.0.1:{peer}", f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
        f"--initial-cluster=local=http://127.0.0.1:{peer}",
        "--client-cert-auth", f"--trusted-ca-file={pki / 'ca.crt'}",
        f"--cert-file={pki / 'etcd-server.crt'}", f"--key-file={pki / 'etcd-server.key'}",
        "--snapshot-count=10000", "--quota-backend-bytes=2147483648", "--log-level=warn",
    ])

    def healthy() -> bool:
        body = probe.get(f"https://127.0.0.1:{port}/health", ca=pki / "ca.crt", cert=pki / "apiserver-etcd-client.crt",
                         key=pki / "apiserver-etcd-client.key")
        return body is not None and b'"health":"true"' in body

    ctx.sup.wait("etcd", healthy, ctx.timeout, f"etcd not healthy after {ctx.timeout:g}s")


# --kubelet-preferred-address-types: kubeadm's (k8s.io/kubernetes v1.33.13 cmd/kubeadm/app/phases/controlplane/
# manifests.go). The API server's default tries Hostname first, which names a node, not an address this machine
# resolves: `kubectl logs` of a pod on the real node reaches its kubelet at the node's InternalIP.
def start_apiserver(ctx: Context) -> None:
    state, pki = ctx.paths.state, ctx.paths.pki
    ctx.files("audit-policy", *ctx.stack_file_args(), "--out", str(state / "audit-policy.yaml"))
    ctx.paths.logs.mkdir(parents=True, exist_ok=True)
    ctx.sup.launch("kube-apiserver", [
        str(binary("kube-apiserver")),
        "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={ctx.ports.apiserver}",
        f"--etcd-servers=https://127.0.0.1:{ctx.ports.etcd}", f"--etcd-cafile={pki / 'ca.crt'}",
        f"--etcd-certfile={pki / 'apiserver-etcd-client.crt'}", f"--etcd-keyfile={pki / 'apiserver-etcd-client.key'}",
        f"--client-ca-file={pki / 'ca.crt'}", f"--tls-cert-file={pki / 'apiserver.crt'}",
        f"--tls-private-key-file={pki / 'apiserver.key'}",
        f"--kubelet-client-certificate={pki / 'apiserver-kubelet-client.crt'}",
        f"--kubelet-client-key={pki / 'apiserver-kubelet-client.key'}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={pki / 'sa.pub'}", f"--service-account-signing-key-file={pki / 'sa.key'}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--authorization-mode=Node,RBAC", f"--enable-admission-plugins={ADMISSION_PLUGINS}",
        "--allow-privileged=true", "--enable-bootstrap-token-auth=true", "--profiling=false",
        "--endpoint-reconciler-type=none",
        "--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
        f"--audit-policy-file={state / 'audit-policy.yaml'}", f"--audit-log-path={ctx.paths.audit_log}",
        "--audit-log-format=json", "--audit-log-maxsize=100", "--audit-log-maxbackup=3",
    ])
    ctx.sup.wait("kube-apiserver", lambda: ctx.admin_ok(f"{ctx.server}/readyz"), ctx.timeout)


def start_controller_manager(ctx: Context) -> None:
    # Every controller a cluster runs by default: node lifecycle and taint eviction act on the simulated nodes as on
    # real ones (KWOK heartbeats them; a failed one stops, localcluster/kwok.py).
    kubeconfig, pki = ctx.paths.state / "controller-manager.kubeconfig", ctx.paths.pki
    ctx.sup.launch("kube-controller-manager", [
        str(binary("kube-controller-manager")), f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1", "--secure-port=0", "--leader-elect=false", "--controllers=*",
        "--use-service-account-credentials=true",
        f"--service-account-private-key-file={pki / 'sa.key'}", f"--root-ca-file={pki / 'ca.crt'}",
        f"--cluster-signing-cert-file={pki / 'ca.crt'}", f"--cluster-signing-key-file={pki / 'ca.key'}",
        f"--service-cluster-ip-range={SERVICE_CIDR}", f"--cluster-name={CLUSTER_NAME}",
    ])
    # the service account controller creating default/default shows the controllers are working
    ctx.sup.wait("kube-controller-manager", lambda: ctx.kubectl.ok("-n", "default", "get", "serviceaccount", "default"),
                 ctx.timeout, f"no default service account after {ctx.timeout:g}s")


def start_scheduler(ctx: Context) -> None:
    state, port = ctx.paths.state, ctx.ports.scheduler
    kubeconfig = state / "scheduler.kubeconfig"
    ctx.files("scheduler-config", "--kubeconfig", str(kubeconfig), "--out", str(state / "scheduler.yaml"))
    ctx.sup.launch("kube-scheduler", [
        str(binary("kube-scheduler")), f"--config={state / 'scheduler.yaml'}",
        f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1", f"--secure-port={port}", f"--cert-dir={ctx.paths.run / 'scheduler-certs'}",
    ])
    ctx.wait_http("kube-scheduler", f"https://127.0.0.1:{port}/healthz", insecure=True)


def install_crds(ctx: Context) -> None:
    """The reference CRDs (the GPU Operator's, the Prometheus Operator's, Karpenter's for AWS: GPU_PLATFORM_CRDS, by
    default the tool cache's copy when scripts/tools/reference.sh has fetched it for the tests; the stacks a local
    cluster runs need none of them, so a start never fetches them). Kueue's come from its chart (install_kueue), with
    their conversion webhooks."""
    setting = os.environ.get("GPU_PLATFORM_CRDS", "")
    if setting == "none":
        log("GPU_PLATFORM_CRDS=none: installing no reference CRDs")
        return
    if not setting and not REFERENCE_CRDS.is_dir():
        log(f"no reference CRDs in {REFERENCE_CRDS} (scripts/tools/reference.sh fetches them for the tests; "
            "GPU_PLATFORM_CRDS names another directory): installing none")
        return
    root = Path(setting) if setting else REFERENCE_CRDS
    if not root.is_dir():
        raise StartError(f"GPU_PLATFORM_CRDS={setting} is not a directory")
    files = sorted(p for p in root.glob("*/**/*") if p.is_file() and p.suffix in (".yaml", ".yml")
                   and not any(part.startswith("kueue-") for part in p.relative_to(root).parts))
    if not files:
        log(f"warning: no CRD yaml files under {root}")
        return
    ctx.kubectl.apply_crds("crds", files, ctx.paths.state, ctx.timeout)
    ctx.clock.step(f"{len(files)} CRDs from {root} Established")


def install_kueue(ctx: Context) -> None:
    """Kueue's chart, rendered with the stack's values: CRDs (conversion webhooks on loopback), RBAC, webhook
    configurations on loopback, Kueue's namespace and its certificate Secret; and its Configuration."""
    d, pki, ports = ctx.paths.state / "kueue", ctx.paths.pki, ctx.ports
    (d / "certs").mkdir(parents=True, exist_ok=True)
    ctx.files("kueue-objects", *ctx.stack_file_args(), "--helm", str(binary("helm")), "--chart",
              str(ctx.core.kueue_chart), "--kube-version", ctx.core.kube_version, "--webhook-port",
              str(ports.kueue_webhook), "--pki", str(pki), "--out", str(d), failure="rendering the Kueue chart failed")
    ctx.kubectl.apply_crds("kueue-crds", [d / "kueue-crds.json"], ctx.paths.state, ctx.timeout)
    if not ctx.kubectl.apply("-f", str(d / "kueue-objects.json")):
        raise StartError("applying Kueue's chart objects failed")
    # In a pod the kubelet mounts the Secret at certDir; here the same files are written there.
    shutil.copyfile(pki / "kueue-webhook.crt", d / "certs" / "tls.crt")
    shutil.copyfile(pki / "kueue-webhook.key", d / "certs" / "tls.key")
    os.chmod(d / "certs" / "tls.key", 0o600)
    ctx.files("kueue-config", *ctx.stack_file_args(), "--health-port", str(ports.kueue_health), "--metrics-port",
              str(ports.kueue_metrics), "--webhook-port", str(ports.kueue_webhook), "--cert-dir", str(d / "certs"),
              "--pods-ready-timeout", ctx.settings.pods_ready_timeout,
              "--worker-lost-timeout", ctx.settings.worker_lost_timeout, "--out", str(d / "config.yaml"))
    ctx.clock.step(f"Kueue chart objects applied (webhooks on https://127.0.0.1:{ports.kueue_webhook})")


def register_nodes(ctx: Context) -> None:
    """The stack's simulated nodes: 1. the objects; 2. their status through the status subresource (capacity,
    allocatable, Ready); 3. the objects again: TaintNodesByCondition taints every new node not-ready, which the node
    lifecycle controller lifts once it sees the node Ready; spec.taints is an atomic list owned by this field
    manager, so re-applying sets it back to exactly the listed taints at once. Then the nodes registered earlier
    that the stack no longer has go."""
    kubectl = ctx.kubectl
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        ctx.files("nodes", *ctx.stack_file_args(), "--kube-version", ctx.core.kube_version or "v0.0.0", "--out",
                  str(d), failure=f"building the simulated nodes of stack {ctx.settings.stack} failed")
        names = (d / "names").read_text().split()
        if names:
            if not kubectl.apply("-f", str(d / "nodes.json")):
                raise StartError("creating the simulated nodes failed")
            if not kubectl.apply("--subresource=status", "-f", str(d / "status.json"), manager="local-cluster-status"):
                raise StartError("setting the status of the simulated nodes failed")
            if not kubectl.apply("-f", str(d / "nodes.json")):
                raise StartError("updating the simulated nodes failed")
    listed = kubectl.run("get", "nodes", "-o", "json")
    for name in nodes.stale(json.loads(listed.stdout), set(names)) if listed.returncode == 0 else []:
        if kubectl.ok("delete", "node", name):
            log(f"removed stale node {name}")
    ctx.clock.step(f"registered {len(names)} simulated nodes (stack {ctx.settings.stack})")


KUEUE_LOG_LEVEL_ENV = "LOCAL_CLUSTER_KUEUE_LOG_LEVEL"
KUEUE_LOG_LEVELS = ("info", "debug", "error")


def kueue_log_level(env: Mapping[str, str]) -> str:
    """LOCAL_CLUSTER_KUEUE_LOG_LEVEL: Kueue's --zap-log-level, info (default), debug, error or a verbosity 1-9.
    At 3 Kueue logs why each workload was or was not admitted ("Workload evaluated for admission", with the
    reason: kubernetes-sigs/kueue v0.19.2 pkg/scheduler/logging.go), which the live tests keep for a failure."""
    value = (env.get(KUEUE_LOG_LEVEL_ENV) or "info").strip()
    if value in KUEUE_LOG_LEVELS or (value.isdigit() and 1 <= int(value) <= 9):
        return value
    raise ValueError(f"{KUEUE_LOG_LEVEL_ENV} {value!r} is not one of {', '.join(KUEUE_LOG_LEVELS)} or 1-9")


def start_kueue(ctx: Context) -> None:
    # Feature gates (VisibilityOnDemand off among them) are in the Configuration: Kueue refuses them on both the
    # command line and in the file.
    state = ctx.paths.state
    ctx.sup.launch("kueue", ["env", f"KUBECONFIG={state / 'kueue.kubeconfig'}", str(binary("kueue")),
                             f"--config={state / 'kueue' / 'config.yaml'}",
                             f"--zap-log-level={kueue_log_level(os.environ)}"])
    ctx.wait_http("kueue", f"http://127.0.0.1:{ctx.ports.kueue_health}/readyz")


def start_kwok(ctx: Context) -> None:
    from gpu_platform import conventions as cv

    state = ctx.paths.state
    ctx.files("kwok-stages", "--out", str(state / "kwok-stages.yaml"))
    ctx.sup.launch("kwok", [
        str(binary("kwok")), f"--kubeconfig={state / 'kwok.kubeconfig'}", f"--config={state / 'kwok-stages.yaml'}",
        "--manage-all-nodes=false",
        f"--manage-nodes-with-annotation-selector={cv.KWOK_NODE_ANNOTATION}={cv.KWOK_NODE_ANNOTATION_VALUE}",
        f"--server-address=127.0.0.1:{ctx.ports.kwok}", "--cidr=10.128.0.0/12", "--node-lease-duration-seconds=0",
    ])
    ctx.wait_http("kwok", f"http://127.0.0.1:{ctx.ports.kwok}/healthz")


def start_karpenter(ctx: Context) -> None:
    """Karpenter's core with its KWOK cloud provider: it provisions a node of a scaling pool for pods that wait and
    removes the nodes it added once empty (localcluster/autoscaler.py writes its instance types and the pools'
    NodePools). Cluster admin here; on EKS its chart's RBAC."""
    d = ctx.paths.state / "karpenter"
    d.mkdir(parents=True, exist_ok=True)
    ctx.kubectl.apply_crds("karpenter-crds", sorted(ctx.core.karpenter_crds.glob("*.yaml")), ctx.paths.state,
                           ctx.timeout)
    ctx.files("autoscaler", *ctx.stack_file_args(), "--out", str(d),
              failure=f"building the autoscaler's objects of stack {ctx.settings.stack} failed")
    # Flags, not the environment: the state directory must be on the command line (localcluster/supervise.py).
    ctx.sup.launch("karpenter-kwok", [
        "env", f"KUBECONFIG={ctx.paths.admin_kubeconfig}", str(binary("karpenter-kwok")),
        f"--instance-types-file-path={d / 'instance-types.json'}", "--disable-leader-election",
        f"--metrics-port={ctx.ports.karpenter_metrics}", f"--health-probe-port={ctx.ports.karpenter_health}",
        "--log-level=info",
    ])
    ctx.wait_http("karpenter-kwok", f"http://127.0.0.1:{ctx.ports.karpenter_health}/readyz")
    if not ctx.kubectl.apply_list(d / "objects.json"):
        raise StartError("applying the autoscaler's NodePools failed")


