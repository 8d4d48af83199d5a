"""The configuration files of the real node's processes: containerd's, the CNI bridge network's and the
KubeletConfiguration (pure functions of the node's Layout, pool and reserves)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .node import POD_SUBNET, Layout, Reserves, node_taints

if TYPE_CHECKING:
    from gpu_platform.plan import Plan, PoolPlan


def containerd_config(layout: Layout, runc: str, cni: Path, pause_image: str, lower_oom_score: bool = True) -> str:
    """containerd 1.6's configuration (version 2): every path under the node's directory, the CRI plugin with
    runc under cgroupfs, the CNI network of `cni_config`, and the kubelet's sandbox image. Without LOWER_OOM_SCORE
    (no CAP_SYS_RESOURCE) runc cannot give a sandbox the kubelet's -998 and the pod never starts ("failed to update
    /proc/self/oom_score_adj: Permission denied"), so containerd keeps every score at its own or above
    (restrict_oom_score_adj, containerd v1.6.20 pkg/cri/config/config.go RestrictOOMScoreAdj: "useful when the
    containerd does not have permission to decrease OOMScoreAdj")."""
    d = layout.dir
    cri = '[plugins."io.containerd.grpc.v1.cri"]'
    return "\n".join([
        "version = 2",
        f'root = "{d / "containerd" / "root"}"',
        f'state = "{d / "containerd" / "state"}"',
        # Not containerd's: they would only log errors on this machine (no btrfs, zfs, devmapper or aufs).
        'disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", '
        '"io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]',
        "[grpc]",
        f'  address = "{layout.socket}"',
        '[plugins."io.containerd.internal.v1.opt"]',
        f'  path = "{d / "opt"}"',
        cri,
        # The kubelet's default sandbox image at its version (scripts/tools/node-images.sh), not containerd 1.6's
        # pause:3.6: the image the kubelet's image garbage collection keeps.
        f'  sandbox_image = "{pause_image}"',
        # Network namespaces are mounts under the state directory, not /var/run/netns: cleanup finds them there.
        "  netns_mounts_under_state_dir = true",
        # EKS's AMIs run no AppArmor; loading containerd's profile would need apparmor_parser and change the host.
        "  disable_apparmor = true",
        f"  restrict_oom_score_adj = {'false' if lower_oom_score else 'true'}",
        f"{cri[:-1]}.containerd]",
        '  snapshotter = "overlayfs"',
        '  default_runtime_name = "runc"',
        f'{cri[:-1]}.containerd.runtimes.runc]',
        '  runtime_type = "io.containerd.runc.v2"',
        f'{cri[:-1]}.containerd.runtimes.runc.options]',
        f'  BinaryName = "{runc}"',
        f'  Root = "{d / "runc"}"',
        "  SystemdCgroup = false",
        f"{cri[:-1]}.cni]",
        f'  bin_dir = "{cni}"',
        f'  conf_dir = "{d / "cni"}"',
        "",
    ])


def cni_config(layout: Layout) -> dict[str, Any]:
    """The bridge network: the bridge holds the gateway address (the node's), pods get an address of POD_SUBNET
    and no route but the subnet's own (isGateway without isDefaultGateway), nothing is masqueraded; host-local
    keeps its leases under the node's directory; portmap serves hostPort."""
    return {
        "cniVersion": "1.0.0",
        "name": layout.network,
        "plugins": [
            {"type": "bridge", "bridge": layout.bridge, "isGateway": True, "isDefaultGateway": False,
             "ipMasq": False, "hairpinMode": True,
             "ipam": {"type": "host-local", "ranges": [[{"subnet": str(POD_SUBNET), "gateway": layout.node_ip}]],
                      "dataDir": str(layout.dir / "cni-state" / "ipam")}},
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }


def kubelet_config(layout: Layout, plan: Plan, pool: PoolPlan, reserves: Reserves, port: int, healthz_port: int,
                   ca_file: Path, lower_oom_score: bool = True) -> dict[str, Any]:
    """The KubeletConfiguration (kubelet.config.k8s.io/v1beta1 at v1.33). Without LOWER_OOM_SCORE the kubelet keeps
    its own oom_score_adj (0) instead of its default -999, which it could not set."""
    own = {} if lower_oom_score else {"oomScoreAdj": 0}
    return own | {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": layout.node_ip,
        "port": port,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": healthz_port,
        # The API server's kubelet client authenticates with its certificate and is authorized by the API server.
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True},
                           "x509": {"clientCAFile": str(ca_file)}},
        "authorization": {"mode": "Webhook"},
        "containerRuntimeEndpoint": f"unix://{layout.socket}",
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": layout.cgroup_root,
        # cgroup v1 is in maintenance at 1.33 and still allowed (failCgroupV1 defaults to false: k8s.io/kubernetes
        # v1.33.13 pkg/kubelet/apis/config/v1beta1/defaults.go); said explicitly, as this machine kind runs v1.
        "failCgroupV1": False,
        "failSwapOn": True,
        "maxPods": reserves.max_pods,
        "kubeReserved": {"cpu": f"{reserves.kube_cpu_millis}m", "memory": f"{reserves.kube_memory_mib}Mi"},
        "systemReserved": {"cpu": f"{reserves.system_cpu_millis}m", "memory": f"{reserves.system_memory_mib}Mi"},
        "evictionHard": {"memory.available": f"{reserves.eviction_memory_mib}Mi"},
        # The other hard thresholds keep the kubelet's defaults (pkg/kubelet/apis/config/types.go
        # MergeDefaultEvictionSettings; without it a partial evictionHard drops them).
        "mergeDefaultEvictionSettings": True,
        "registerWithTaints": node_taints(plan, pool),
        "podLogsDir": str(layout.dir / "pod-logs"),
        "volumePluginDir": str(layout.dir / "kubelet-volume-plugins"),
        "shutdownGracePeriod": "0s",
        "rotateCertificates": False,
        "serverTLSBootstrap": False,
    }
