"""The local cluster's ports on 127.0.0.1: the API server's and etcd's, and every other one at a fixed offset from
them, so that a second cluster (the MultiKueue worker, a test's, the simulator's) moves all of its ports by setting
two (docs/local-cluster.md lists them)."""

from __future__ import annotations

import socket
from dataclasses import dataclass

APISERVER_PORT_ENV = "LOCAL_CLUSTER_APISERVER_PORT"
ETCD_PORT_ENV = "LOCAL_CLUSTER_ETCD_PORT"
DEFAULT_APISERVER_PORT = 16443
DEFAULT_ETCD_PORT = 23790
# `local-cluster worker ...`: the second, independent cluster a MultiKueue manager dispatches to.
WORKER_APISERVER_PORT = 17443
WORKER_ETCD_PORT = 23890


class PortError(ValueError):
    """A port setting that is not a port number."""


def parse_port(name: str, value: str | int) -> int:
    """VALUE of the setting NAME as a port number, or PortError naming the setting and the valid range."""
    try:
        port = int(value)
    except (TypeError, ValueError):
        raise PortError(f"{name}={value!r} is not a port number (1-65535)") from None
    if not 1 <= port <= 65535:
        raise PortError(f"{name}={port} is not a port number (1-65535)")
    return port


@dataclass(frozen=True)
class Ports:
    """Every port of one cluster. Offsets from the API server's: +1..+3 Kueue's webhook, health and metrics, +4 KWOK,
    +5 kube-scheduler, +6 and +7 Karpenter's metrics and health, +8 to +19 the workload controllers' (their own
    offsets, localcluster/workloads.py), +20 Prometheus, +21 the GPU telemetry, +22 and +23 the real node's kubelet
    and its health; etcd's peer port is its client port + 10."""

    apiserver: int = DEFAULT_APISERVER_PORT
    etcd: int = DEFAULT_ETCD_PORT

    @property
    def etcd_peer(self) -> int:
        return self.etcd + 10

    @property
    def kueue_webhook(self) -> int:
        return self.apiserver + 1

    @property
    def kueue_health(self) -> int:
        return self.apiserver + 2

    @property
    def kueue_metrics(self) -> int:
        return self.apiserver + 3

    @property
    def kwok(self) -> int:
        return self.apiserver + 4

    @property
    def scheduler(self) -> int:
        return self.apiserver + 5

    @property
    def karpenter_metrics(self) -> int:
        return self.apiserver + 6

    @property
    def karpenter_health(self) -> int:
        return self.apiserver + 7

    @property
    def prometheus(self) -> int:
        return self.apiserver + 20

    @property
    def gpu_telemetry(self) -> int:
        return self.apiserver + 21

    @property
    def kubelet(self) -> int:
        return self.apiserver + 22

    @property
    def kubelet_healthz(self) -> int:
        return self.apiserver + 23

    @property
    def server(self) -> str:
        """The API server's URL."""
        return f"https://127.0.0.1:{self.apiserver}"

    def checked_at_start(self, real_node: bool) -> list[int]:
        """The ports a start refuses to begin with when something already listens there (the kubelet's only when
        a real node starts); the workload controllers' are left to their own start."""
        ports = [self.apiserver, self.etcd, self.etcd_peer, self.kueue_webhook, self.kueue_health, self.kueue_metrics,
                 self.kwok, self.scheduler, self.karpenter_metrics, self.karpenter_health, self.prometheus,
                 self.gpu_telemetry]
        return ports + ([self.kubelet, self.kubelet_healthz] if real_node else [])


def in_use(port: int, host: str = "127.0.0.1") -> bool:
    """Something accepts connections on HOST:PORT."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1)
        return s.connect_ex((host, port)) == 0
