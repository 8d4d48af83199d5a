"""Karpenter: its API versions, the node labels its requirements select on, its release, and the AWS names
of its roles, interruption queue and rules."""

from __future__ import annotations

from .namespaces import KUBE_SYSTEM_NAMESPACE


# ==== Karpenter =============================================================================================
# Karpenter v1.15 (github.com/aws/karpenter-provider-aws v1.15.2): NodePool is karpenter.sh/v1 and
# EC2NodeClass karpenter.k8s.aws/v1 (charts/karpenter-crd/templates).
KARPENTER_NODEPOOL_API_VERSION = "karpenter.sh/v1"
KARPENTER_NODECLASS_GROUP = "karpenter.k8s.aws"
KARPENTER_NODECLASS_API_VERSION = f"{KARPENTER_NODECLASS_GROUP}/v1"
KARPENTER_NODECLASS_KIND = "EC2NodeClass"
# Well-known node labels Karpenter requirements select on (pkg/apis/v1/labels.go of the provider, and
# sigs.k8s.io/karpenter pkg/apis/v1 labels: capacity types on-demand | spot | reserved).
KARPENTER_CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
KARPENTER_CAPACITY_RESERVATION_ID_LABEL = "karpenter.k8s.aws/capacity-reservation-id"
KARPENTER_CAPACITY_RESERVATION_TYPE_LABEL = "karpenter.k8s.aws/capacity-reservation-type"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ZONE_LABEL = "topology.kubernetes.io/zone"
# The label Karpenter puts on every node it launches; the chart's default affinity keeps its controller off them.
KARPENTER_NODEPOOL_LABEL = "karpenter.sh/nodepool"
# Pod annotation that keeps Karpenter from voluntarily disrupting the pod's node (disruption.md, "Pod-Level Controls").
KARPENTER_DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
# The controller's Helm releases, namespace and service account. kube-system as Karpenter's getting-started
# guide installs it (KARPENTER_NAMESPACE=kube-system); the service account the Pod Identity association names.
KARPENTER_NAMESPACE = KUBE_SYSTEM_NAMESPACE
KARPENTER_RELEASE_NAME = "karpenter"
KARPENTER_CRD_RELEASE_NAME = "karpenter-crd"
KARPENTER_SERVICE_ACCOUNT = "karpenter"


def karpenter_nodepool_name(pool: str) -> str:
    return pool


def karpenter_nodeclass_name(pool: str) -> str:
    return pool


def karpenter_node_role_name(cluster: str) -> str:
    """The IAM role of Karpenter's nodes, named as Karpenter's getting-started CloudFormation names it."""
    return f"KarpenterNodeRole-{cluster}"


def karpenter_controller_role_name(cluster: str) -> str:
    return f"{cluster}-karpenter"


def karpenter_queue_name(cluster: str) -> str:
    """The SQS interruption queue (Karpenter's CloudFormation names it after the cluster; the suffix says whose it is)."""
    return f"{cluster}-karpenter"


# The EventBridge rules that feed the interruption queue, by the short name each rule's AWS name ends in, with
# the event source and detail-type they match (the getting-started CloudFormation's ScheduledChangeRule,
# SpotInterruptionRule, RebalanceRule, InstanceStateChangeRule, CapacityReservationInterruptionRule). Short,
# because a rule name is at most 64 characters (PutRule, botocore events model shape RuleName) and starts
# with the queue's name: cluster.name is checked against the longest (spec/karpenter_checks.py).
KARPENTER_INTERRUPTION_RULES: dict[str, tuple[str, str]] = {
    "health": ("aws.health", "AWS Health Event"),
    "spot": ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
    "rebalance": ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
    "state-change": ("aws.ec2", "EC2 Instance State-change Notification"),
    "reservation": ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
}


def karpenter_rule_name(cluster: str, rule: str) -> str:
    return f"{karpenter_queue_name(cluster)}-{rule}"
