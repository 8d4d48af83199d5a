"""Launch template user data: the instance store as RAID0 for containers, in each AMI family's format."""

from __future__ import annotations

import base64
import json

import yaml

from gpu_platform.plan import PoolPlan

MIME_BOUNDARY = "==GPU-PLATFORM=="


def nodeadm_user_data(pool: PoolPlan) -> str | None:
    """AL2023: a MIME multi-part document with a nodeadm NodeConfig that stripes the instance store into
    RAID0 and puts containerd, kubelet and pod logs on it. EKS merges it with the NodeConfig that joins the
    node to the cluster, so nothing else belongs here (EKS user guide, "Amazon Linux 2023 user data";
    nodeadm API reference, LocalStorageOptions.strategy: RAID0 | RAID10 | Mount)."""
    if not pool.local_nvme:
        return None
    node_config = {
        "apiVersion": "node.eks.aws/v1alpha1",
        "kind": "NodeConfig",
        "spec": {"instance": {"localStorage": {"strategy": "RAID0"}}},
    }
    return (
        "MIME-Version: 1.0\n"
        f'Content-Type: multipart/mixed; boundary="{MIME_BOUNDARY}"\n'
        "\n"
        f"--{MIME_BOUNDARY}\n"
        "Content-Type: application/node.eks.aws\n"
        "\n"
        "---\n"
        f"{yaml.safe_dump(node_config, sort_keys=False)}"
        "\n"
        f"--{MIME_BOUNDARY}--\n"
    )


def bottlerocket_user_data(pool: PoolPlan) -> str | None:
    """Bottlerocket: TOML settings merged with EKS's. A bootstrap command initialises the instance store
    (one RAID0 array over all disks) and binds the container directories onto it (bottlerocket.dev,
    "Bootstrap Commands", use case "Configure ephemeral disks")."""
    if not pool.local_nvme:
        return None
    commands = [
        ["apiclient", "ephemeral-storage", "init"],
        ["apiclient", "ephemeral-storage", "bind", "--dirs", "/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods"],
    ]
    return (
        "[settings.bootstrap-commands.k8s-ephemeral-storage]\n"
        f"commands = {json.dumps(commands)}\n"
        "essential = true\n"
        'mode = "always"\n'
    )


def user_data(pool: PoolPlan) -> str | None:
    """The launch template's user data in the format the pool's AMI family reads, base64 as EC2 wants it."""
    text = bottlerocket_user_data(pool) if pool.ami_type.startswith("BOTTLEROCKET") else nodeadm_user_data(pool)
    return base64.b64encode(text.encode()).decode() if text is not None else None
