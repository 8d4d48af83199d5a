"""Where one local cluster keeps its state, and what it was started with.

The state directory (LOCAL_CLUSTER_DIR, default <repo>/.local/cluster) holds the PKI, etcd's data, the logs, the
pid files, the kubeconfigs and `cluster.env`: the ports, stack and components a running cluster was started with,
which win over the environment for every later command (a `status` in another shell asks the running cluster, not
the shell's settings). Every process of the cluster names the state directory on its command line, which is how
a process is told to be the cluster's (localcluster/supervise.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from .ports import APISERVER_PORT_ENV, DEFAULT_APISERVER_PORT, DEFAULT_ETCD_PORT, ETCD_PORT_ENV, Ports, parse_port

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_STATE = ROOT / ".local" / "cluster"
DEFAULT_WORKER_STATE = ROOT / ".local" / "worker"
CLUSTER_NAME = "gpu-platform-local"
SERVICE_CIDR = "10.96.0.0/16"
SERVICE_IP = "10.96.0.1"   # first address of SERVICE_CIDR: the kubernetes Service

CORE_COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kueue", "kwok",
                   "karpenter-kwok")
# The workload controllers (localcluster/workloads.py): those the stack installs run after the core, unless
# LOCAL_CLUSTER_WORKLOADS names others ("none": none).
WORKLOAD_COMPONENTS = ("jobset-controller", "lws-controller", "trainer-controller-manager", "kuberay-operator")
# Prometheus and the simulated nodes' GPU telemetry (localcluster/prometheus.py, telemetry.py): on unless
# LOCAL_CLUSTER_PROMETHEUS=0. Last in the list, so stop takes them down first.
MONITORING_COMPONENTS = ("gpu-telemetry", "prometheus")
# The real node (localcluster/realnode), when LOCAL_CLUSTER_REAL_NODE names a pool: after the core, so stop takes
# it down before the API server (and then removes what its containers left: realnode cleanup).
REAL_NODE_COMPONENTS = ("containerd", "kubelet", "gpu-device-plugin")
# What stop looks for, in start order (stop goes backwards).
ALL_COMPONENTS = CORE_COMPONENTS + REAL_NODE_COMPONENTS + WORKLOAD_COMPONENTS + MONITORING_COMPONENTS


def state_dir(value: str | None, cwd: Path) -> Path:
    """LOCAL_CLUSTER_DIR as an absolute path (relative to CWD), without trailing slashes; the default when unset."""
    if not value:
        return DEFAULT_STATE
    return Path(os.path.normpath(cwd / value)) if not os.path.isabs(value) else Path(os.path.normpath(value))


@dataclass(frozen=True)
class Paths:
    """The files of one cluster under its state directory."""

    state: Path

    @property
    def pki(self) -> Path:
        return self.state / "pki"

    @property
    def run(self) -> Path:
        return self.state / "run"

    @property
    def logs(self) -> Path:
        return self.state / "logs"

    @property
    def users(self) -> Path:
        return self.state / "users"

    @property
    def real_node(self) -> Path:
        return self.state / "real-node"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.state / "admin.kubeconfig"

    @property
    def audit_log(self) -> Path:
        """The API server's audit log: job submissions, secret access, exec/attach and admin operations, as the
        stack's audit policy (gpu_platform/audit.py) selects them."""
        return self.logs / "audit.log"

    @property
    def cluster_env(self) -> Path:
        return self.state / "cluster.env"

    @property
    def lock(self) -> Path:
        return self.state / ".lock"

    def pid_file(self, component: str) -> Path:
        return self.run / f"{component}.pid"

    def log(self, component: str) -> Path:
        return self.logs / f"{component}.log"

    def looks_like_state(self) -> bool:
        """What `reset` deletes only when it is there: a directory a start wrote (its PKI or cluster.env)."""
        return not self.state.exists() or (self.pki.is_dir() or self.cluster_env.is_file())


@dataclass
class Settings:
    """What a start runs with: the environment's LOCAL_CLUSTER_* settings, or a running cluster's cluster.env."""

    ports: Ports
    stack: str
    pods_ready_timeout: str = ""
    worker_lost_timeout: str = ""
    workloads: str | None = None          # LOCAL_CLUSTER_WORKLOADS (None: unset, the stack's)
    monitoring: bool = True               # LOCAL_CLUSTER_PROMETHEUS
    real_node: str = "none"               # LOCAL_CLUSTER_REAL_NODE
    # What the running cluster started (cluster.env), empty before a start decides it.
    started_workloads: list[str] = field(default_factory=list)
    started_monitoring: list[str] = field(default_factory=list)
    started_real_node: list[str] = field(default_factory=list)

    @property
    def components(self) -> list[str]:
        """The processes of this cluster, in start order."""
        return [*CORE_COMPONENTS, *self.started_real_node, *self.started_workloads, *self.started_monitoring]


def stack_setting(value: str | None, cwd: Path) -> str:
    """LOCAL_CLUSTER_STACK: a stack name as it is (default local), a stack file's path made absolute."""
    stack = value or "local"
    if "/" in stack or stack.endswith((".yaml", ".yml")):
        return stack if os.path.isabs(stack) else str(cwd / stack)
    return stack


def from_environment(env: Mapping[str, str], cwd: Path) -> Settings:
    """The settings a start would use: the environment's, with the defaults of docs/local-cluster.md."""
    return Settings(
        ports=Ports(parse_port(APISERVER_PORT_ENV, env.get(APISERVER_PORT_ENV) or DEFAULT_APISERVER_PORT),
                    parse_port(ETCD_PORT_ENV, env.get(ETCD_PORT_ENV) or DEFAULT_ETCD_PORT)),
        stack=stack_setting(env.get("LOCAL_CLUSTER_STACK"), cwd),
        pods_ready_timeout=env.get("LOCAL_CLUSTER_PODS_READY_TIMEOUT", ""),
        worker_lost_timeout=env.get("LOCAL_CLUSTER_WORKER_LOST_TIMEOUT", ""),
        workloads=env.get("LOCAL_CLUSTER_WORKLOADS"),
        monitoring=(env.get("LOCAL_CLUSTER_PROMETHEUS") or "1") != "0",
        real_node=env.get("LOCAL_CLUSTER_REAL_NODE") or "none",
    )


def read_cluster_env(path: Path) -> dict[str, str]:
    """cluster.env's KEY=VALUE lines (a value may be in double quotes)."""
    values = {}
    for line in path.read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip():
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] == '"':
                value = value[1:-1]
            values[key.strip()] = value
    return values


def with_running(settings: Settings, path: Path) -> Settings:
    """SETTINGS with a running cluster's cluster.env over them: its ports, stack and started components."""
    saved = read_cluster_env(path)
    return Settings(
        ports=Ports(parse_port("APISERVER_PORT", saved.get("APISERVER_PORT", settings.ports.apiserver)),
                    parse_port("ETCD_PORT", saved.get("ETCD_PORT", settings.ports.etcd))),
        stack=saved.get("STACK", settings.stack),
        pods_ready_timeout=saved.get("PODS_READY_TIMEOUT", settings.pods_ready_timeout),
        worker_lost_timeout=saved.get("WORKER_LOST_TIMEOUT", settings.worker_lost_timeout),
        workloads=settings.workloads,
        monitoring=settings.monitoring,
        real_node=saved.get("REAL_NODE", settings.real_node),
        started_workloads=saved.get("STARTED_WORKLOADS", "").split(),
        started_monitoring=saved.get("STARTED_MONITORING", "").split(),
        started_real_node=saved.get("STARTED_REAL_NODE", "").split(),
    )


def write_cluster_env(path: Path, settings: Settings) -> None:
    """What this start runs with, for the commands after it (and PROMETHEUS_PORT for localcluster/prometheus.py)."""
    lines = [
        f"APISERVER_PORT={settings.ports.apiserver}",
        f"ETCD_PORT={settings.ports.etcd}",
        f"STACK={settings.stack}",
        f"PODS_READY_TIMEOUT={settings.pods_ready_timeout}",
        f"WORKER_LOST_TIMEOUT={settings.worker_lost_timeout}",
        f'STARTED_WORKLOADS="{" ".join(settings.started_workloads)}"',
        f'STARTED_MONITORING="{" ".join(settings.started_monitoring)}"',
        f'REAL_NODE="{settings.real_node}"',
        f'STARTED_REAL_NODE="{" ".join(settings.started_real_node)}"',
    ]
    if settings.started_monitoring:
        lines.append(f"PROMETHEUS_PORT={settings.ports.prometheus}")
    path.write_text("".join(f"{line}\n" for line in lines))
