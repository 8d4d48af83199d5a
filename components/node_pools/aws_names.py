"""How AWS spells what the plan decided: EKS capacity types and taint effects, volumes, IMDS, IAM policies.

Each value cites the AWS page it comes from; the node group, launch template and cluster modules only look
them up here.
"""

from __future__ import annotations

import pulumi_aws as aws

# EKS CreateNodegroup capacityType. A capacity reservation is on-demand capacity that instances land in
# through the launch template's reservation target; a capacity block has its own type (EKS user guide,
# "Create a managed node group with Capacity Blocks for ML").
EKS_CAPACITY_TYPE: dict[str, str] = {
    "on-demand": "ON_DEMAND",
    "spot": "SPOT",
    "capacity-reservation": "ON_DEMAND",
    "capacity-block": "CAPACITY_BLOCK",
}

# Kubernetes taint effects as the EKS API spells them (EKS API reference, Taint.effect).
EKS_TAINT_EFFECT: dict[str, str] = {
    "NoSchedule": "NO_SCHEDULE",
    "NoExecute": "NO_EXECUTE",
    "PreferNoSchedule": "PREFER_NO_SCHEDULE",
}

# The block device that holds images and pod data. AL2023 has one root volume; Bottlerocket boots from a
# small OS volume (/dev/xvda) and keeps containers on its data volume (/dev/xvdb) (Bottlerocket README,
# "Storage").
DATA_VOLUME_DEVICE: dict[str, str] = {
    "AL2023_x86_64_NVIDIA": "/dev/xvda",
    "BOTTLEROCKET_x86_64_NVIDIA": "/dev/xvdb",
}

# Containers that call IMDSv2 sit one network hop behind the node, so the PUT response needs a hop limit
# of 2 (EKS user guide, "Customize managed nodes with launch templates").
IMDS_HOP_LIMIT = 2

# A security group rule for every protocol and port (EC2 API reference, IpPermission.IpProtocol: "-1").
ALL_PROTOCOLS = "-1"

# Launched instances, their volumes and network interfaces carry the cost tags (EKS user guide, "Tagging
# Amazon EC2 instances" via the launch template's TagSpecification).
TAGGED_RESOURCE_TYPES: tuple[str, ...] = ("instance", "volume", "network-interface")

# Node role policies (EKS user guide, "Amazon EKS node IAM role").
NODE_ROLE_POLICIES: dict[str, str] = {
    "worker": aws.iam.ManagedPolicy.AMAZON_EKS_WORKER_NODE_POLICY,
    "cni": aws.iam.ManagedPolicy.AMAZON_EK_S_CN_I_POLICY,
    "ecr-read": aws.iam.ManagedPolicy.AMAZON_EC2_CONTAINER_REGISTRY_READ_ONLY,
}
CLUSTER_ROLE_POLICY = aws.iam.ManagedPolicy.AMAZON_EKS_CLUSTER_POLICY

# CreateAddon/UpdateAddon resolveConflicts. A cluster created here starts with a self-managed aws-node
# (EKS API reference, CreateCluster.bootstrapSelfManagedAddons, default true: the unmanaged vpc-cni,
# kube-proxy and CoreDNS are installed at creation); OVERWRITE lets the managed add-on take its fields
# over, and keeps the platform's configuration authoritative on later updates (CreateAddon.resolveConflicts).
ADDON_RESOLVE_CONFLICTS = "OVERWRITE"
