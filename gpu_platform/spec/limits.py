"""Limits and forms set outside this project that the spec is checked against (AWS, Karpenter, VPC CNI)."""

from __future__ import annotations

import re



# The VPC CNI enforces NetworkPolicy from v1.14 on (EKS user guide, cni-network-policy.html: "Version 1.14
# or later of the Amazon VPC CNI plugin for Kubernetes").
VPC_CNI_MIN_NETWORK_POLICY = (1, 14, 0)
# Karpenter: the minor release the NodePools and EC2NodeClasses are written for, and the NodePool CRD's own
# patterns for durations and budget node counts (github.com/aws/karpenter-provider-aws v1.15.2,
# charts/karpenter-crd/templates/karpenter.sh_nodepools.yaml: disruption.consolidateAfter, budgets[].nodes).
KARPENTER_MINOR = ("1", "15")
KARPENTER_DURATION = re.compile(r"^(([0-9]+(s|m|h))+|Never)$")
KARPENTER_BUDGET_NODES = re.compile(r"^((100|[0-9]{1,2})%|[0-9]+)$")
# AMI alias versions per AMI family: "al2023@v20240625" or "bottlerocket@v1.10.0", or latest
# (pkg/apis/v1/ec2nodeclass.go, AMISelectorTerm.Alias).
KARPENTER_AMI_VERSION: dict[str, re.Pattern[str]] = {
    "AL2023_x86_64_NVIDIA": re.compile(r"^v\d{8}$"),
    "BOTTLEROCKET_x86_64_NVIDIA": re.compile(r"^v\d+\.\d+\.\d+$"),
}
KARPENTER_AMI_VERSION_FORM = {"AL2023_x86_64_NVIDIA": "v20240807", "BOTTLEROCKET_x86_64_NVIDIA": "v1.46.0"}
# What each capacity type becomes in karpenter.sh/capacity-type, and the fallbacks a pool may add.
KARPENTER_CAPACITY_TYPES: dict[str, tuple[str, ...]] = {
    "on-demand": ("on-demand",),
    "spot": ("spot",),
    "capacity-reservation": ("reserved",),
    "capacity-block": ("reserved",),
}
KARPENTER_CAPACITY_FALLBACKS: dict[str, tuple[str, ...]] = {
    "on-demand": (),
    "spot": ("on-demand",),
    "capacity-reservation": ("on-demand",),
    # A capacity block is paid for up front and its instances exist only inside it: an on-demand p5 launched
    # beside it would be a second bill for the same job.
    "capacity-block": (),
}
# IAM role names are at most 64 characters (IAM API reference, CreateRole.RoleName).
IAM_ROLE_NAME_MAX = 64
# The Cluster Autoscaler's duration flags are Go durations (flag.Duration, time.ParseDuration: a sequence of
# decimal numbers with a unit, "300ms", "1.5h", "2h45m"; kubernetes/autoscaler cluster-autoscaler/config/flags/
# flags.go at tag cluster-autoscaler-1.33.6).
GO_DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$")
# The autoscaler's image tags are its releases, vMAJOR.MINOR.PATCH (registry.k8s.io/autoscaling/cluster-autoscaler,
# the chart's image.tag), and its minor is the Kubernetes minor it is built for (cluster-autoscaler/README.md,
# "Releases": "We recommend using Cluster Autoscaler with the Kubernetes control plane version for which it was
# meant").
CLUSTER_AUTOSCALER_IMAGE_TAG = re.compile(r"^v(\d+)\.(\d+)\.(\d+)$")
