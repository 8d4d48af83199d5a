"""The Cluster Autoscaler: its release, the Auto Scaling group tags it discovers groups and scales from zero
by, its GPU label and its IAM role."""

from __future__ import annotations

from .labels import PREFIX
from .namespaces import KUBE_SYSTEM_NAMESPACE


# ==== The Cluster Autoscaler ================================================================================
# The Cluster Autoscaler (kubernetes/autoscaler, cluster-autoscaler/cloudprovider/aws/README.md at tag
# cluster-autoscaler-1.33.6). Its release, namespace and service account (the chart's ClusterRole grants its
# leader-election lease by the name cluster-autoscaler, templates/clusterrole.yaml), in kube-system as the
# README's examples install it.
CLUSTER_AUTOSCALER_NAMESPACE = KUBE_SYSTEM_NAMESPACE
CLUSTER_AUTOSCALER_RELEASE_NAME = "cluster-autoscaler"
CLUSTER_AUTOSCALER_SERVICE_ACCOUNT = "cluster-autoscaler"
# Auto-discovery ("Auto-Discovery Setup"): an Auto Scaling group is the autoscaler's when it carries every
# listed tag key (and the value, where one is given). EKS tags every managed node group's group with the two
# standard keys (EKS user guide, managed-node-groups.html: "automatically tagged for auto-discovery by the
# Kubernetes Cluster Autoscaler"), reserved ones included, so the platform adds a third, CAPACITY_TAG=elastic,
# to the groups the autoscaler may scale, and only to those.
CLUSTER_AUTOSCALER_ENABLED_TAG = "k8s.io/cluster-autoscaler/enabled"
CAPACITY_TAG = f"{PREFIX}/capacity"
# Scale-up from zero: the node a group would add, described by tags on its Auto Scaling group ("When scaling
# up from 0 nodes, the Cluster Autoscaler reads ASG tags"): label/<key>: <value>, taint/<key>:
# <value>:<effect>, resources/<resource>: <quantity>.
CLUSTER_AUTOSCALER_LABEL_TAG = "k8s.io/cluster-autoscaler/node-template/label/"
CLUSTER_AUTOSCALER_TAINT_TAG = "k8s.io/cluster-autoscaler/node-template/taint/"
CLUSTER_AUTOSCALER_RESOURCES_TAG = "k8s.io/cluster-autoscaler/node-template/resources/"


def cluster_autoscaler_cluster_tag(cluster: str) -> str:
    return f"k8s.io/cluster-autoscaler/{cluster}"


# The label that tells the autoscaler on AWS a node has GPUs before its device plugin has advertised them
# (cloudprovider/aws/aws_cloud_provider.go GPULabel; README "Special note on GPU instances": "Cluster Autoscaler
# >= 1.15: k8s.amazonaws.com/accelerator=<gpu-type>"). A node that carries it with no allocatable nvidia.com/gpu
# counts as unready, not as a finished node without GPUs (processors/customresources/gpu_processor.go
# FilterOutNodesWithUnreadyResources), so it never triggers a second scale-up; the value is the GPU type its
# --gpu-total limits name (the README's example: nvidia-tesla-k80).
CLUSTER_AUTOSCALER_GPU_LABEL = "k8s.amazonaws.com/accelerator"


def cluster_autoscaler_gpu_type(accelerator: str) -> str:
    """The GPU type of a catalog accelerator in the README's form: nvidia-<model> (nvidia-h100-80gb)."""
    return f"nvidia-{accelerator}"


def cluster_autoscaler_role_name(cluster: str) -> str:
    """The autoscaler's IAM role (EKS Pod Identity): cluster.name is checked so this fits IAM's 64."""
    return f"{cluster}-cluster-autoscaler"
