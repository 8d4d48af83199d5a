"""Elastic capacity: how many nodes each pool runs and who changes that, the Cluster Autoscaler's part of the
plan, and which Kueue flavors get the ProvisioningRequest admission check. Pure (no pulumi import):
components/autoscaler.py, components/node_pools and components/queues only spell what is decided here.

What a capacity type means (docs/node-pools.md, "Capacity: reserved and elastic"):
- Reserved capacity (capacity-block, capacity-reservation) is paid for whole from its start, so the pool runs
  its reservation (capacity.max nodes) while it is active and nothing scales it down. An on-demand capacity
  reservation is active from the start: its node group is pinned at min = max = desired. A capacity block is
  active only in its window: its node group is created at desiredSize max, which EKS launches as soon as the
  block becomes active, and EKS itself scales it to 0 forty minutes before the block ends with a scheduled
  action of its own (EKS user guide, capacity-blocks-mng.html: "If you specify a non-zero desiredSize ...
  the ASG will be scaled up to the desiredSize" once the reservation is active; "Amazon EKS will setup a
  scheduled scale down on the node group 40 minutes prior to their reservation end"), so its group keeps
  min 0 (that action and EKS's upgrades, which need desired size 0, must be able to reach 0).
- Elastic capacity (on-demand, spot) scales between capacity.min and capacity.max: on `eks` the Cluster
  Autoscaler scales managed node groups (addons.clusterAutoscaler) and Karpenter its own pools.

Sources: kubernetes/autoscaler at tag cluster-autoscaler-1.33.6 (cluster-autoscaler/cloudprovider/aws/README.md,
cloudprovider/aws/aws_manager.go, FAQ.md "How can I use ProvisioningRequest to run batch workloads") and
kubernetes-sigs/kueue at tag v0.19.2, unless a comment says otherwise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Mapping

from .. import conventions as cv
from ..karpenter import partition
from ..spec import Platform, Pool
from .pools import PoolPlan

# The ProvisioningRequest CRD (autoscaling.x-k8s.io v1), from the autoscaler release the chart runs: neither
# the chart nor the autoscaler installs it (FAQ.md, "Enabling ProvisioningRequest Support", step 5: "Deploy the
# ProvisioningRequest CRD"; the chart has no crds/ and no template for it at cluster-autoscaler-chart-9.51.0).
PROVISIONING_REQUEST_CRD_URL = (
    "https://raw.githubusercontent.com/kubernetes/autoscaler/cluster-autoscaler-{version}/cluster-autoscaler/apis/"
    "config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml"
)
# How long after it is Ready a GPU node may still advertise no GPU, its device plugin not yet registered: "allocatable
# GPU may be equal to 0 up to 15 minutes after node registers as ready" (core/static_autoscaler.go, citing
# kubernetes/kubernetes#54959). With the autoscaler's own bound on registration (--max-node-provision-time: "Cluster
# Autoscaler expects requested nodes to appear within 15 minutes", FAQ.md; the spec's
# addons.clusterAutoscaler.maxNodeProvisionTime), the longest a scaled GPU node takes to be usable.
GPU_ALLOCATABLE_AFTER_READY_SECONDS = 15 * 60
# How long the autoscaler books the capacity of a Provisioned request before it marks it BookingExpired
# (processors/provreq/processor.go defaultReservationTime, not configurable in 1.33.6).
PROVISIONING_BOOKING_SECONDS = 10 * 60
# Kueue's ProvisioningRequest retries (apis/kueue/v1beta2/provisioningrequestconfig_types.go
# ProvisioningRequestRetryStrategy; its defaults are backoffLimitCount 3, backoffBaseSeconds 60, backoffMaxSeconds
# 1800). The n-th retry waits backoffBaseSeconds * 2^(n-1), at most backoffMaxSeconds (pkg/workload/
# admissionchecks.go UpdateAdmissionCheckRequeueState; pkg/util/wait/backoff.go, jitter 0.0001). The plan keeps
# Kueue's base and cap and sets the count (plan_provisioning).
PROVISIONING_RETRY_BASE_SECONDS = 60
PROVISIONING_RETRY_MAX_SECONDS = 1800
# A Go duration (time.ParseDuration) as the spec accepts it (spec/limits.py GO_DURATION): seconds per unit.
_GO_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)")
_GO_DURATION_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}


@dataclass(frozen=True, slots=True)
class PoolCapacity:
    """How many nodes a pool runs and who changes that (PoolPlan carries these)."""

    semantics: str  # conventions.CAPACITY_RESERVED | CAPACITY_ELASTIC
    scaler: str  # conventions.SCALER_*
    # Nodes paid for whether they run or not: the reservation (capacity.max) of reserved pools, else 0.
    reserved_nodes: int
    # The managed node group's scalingConfig (eks, managed-node-group pools).
    group_min: int
    group_desired: int


def cluster_autoscaler_on(spec: Platform) -> bool:
    return spec.cluster.provider == "eks" and spec.addons.clusterAutoscaler.install


def pool_capacity(pool: Pool, spec: Platform) -> PoolCapacity:
    cap = pool.capacity
    desired = cap.desired if cap.desired is not None else cap.min
    if cap.type in cv.RESERVED_CAPACITY_TYPES:
        if spec.cluster.provider != "eks":
            return PoolCapacity(cv.CAPACITY_RESERVED, cv.SCALER_EXTERNAL, cap.max, cap.min, desired)
        if pool.provisioner == cv.PROVISIONER_KARPENTER:
            return PoolCapacity(cv.CAPACITY_RESERVED, cv.SCALER_KARPENTER, cap.max, 0, 0)
        group_min = 0 if cap.type == "capacity-block" else cap.max
        return PoolCapacity(cv.CAPACITY_RESERVED, cv.SCALER_RESERVATION, cap.max, group_min, cap.max)
    if spec.cluster.provider != "eks":
        scaler = cv.SCALER_EXTERNAL
    elif pool.provisioner == cv.PROVISIONER_KARPENTER:
        scaler = cv.SCALER_KARPENTER
    elif cluster_autoscaler_on(spec):
        scaler = cv.SCALER_CLUSTER_AUTOSCALER
    else:
        scaler = cv.SCALER_NONE
    return PoolCapacity(cv.CAPACITY_ELASTIC, scaler, 0, cap.min, desired)


def autoscaler_node_labels(pool: PoolPlan) -> dict[str, str]:
    """The labels a node of a pool the Cluster Autoscaler scales carries beyond the pool's own: on whole-GPU
    pools, the autoscaler's GPU label (conventions.CLUSTER_AUTOSCALER_GPU_LABEL), so a node that is Ready before
    its device plugin has registered its GPUs counts as still starting, not as a node with no GPU that calls
    for another scale-up. Only where the node advertises nvidia.com/gpu: a MIG (mixed strategy) or time-sliced
    (renameByDefault) node keeps nvidia.com/gpu at 0, and the label would mark it unready for good
    (gpu_processor.go FilterOutNodesWithUnreadyResources checks nvidia.com/gpu alone). Karpenter pools need no
    such label: Karpenter keeps a node it launched for GPU pods uninitialized until every extended resource it
    was launched for is allocatable (kubernetes-sigs/karpenter pkg/controllers/nodeclaim/lifecycle/
    initialization.go RequestedResourcesRegistered), and counts it at the capacity its instance type promises
    until then (pkg/controllers/state/statenode.go Allocatable)."""
    if pool.scaler != cv.SCALER_CLUSTER_AUTOSCALER or pool.resource_name != cv.GPU_RESOURCE:
        return {}
    return {cv.CLUSTER_AUTOSCALER_GPU_LABEL: cv.cluster_autoscaler_gpu_type(pool.accelerator)}


def for_cluster_autoscaler(pool: PoolPlan) -> PoolPlan:
    """A pool the Cluster Autoscaler scales, with its Auto Scaling group tags (autoscaler_tags); any other pool
    as it is. Its extra node label is PoolPlan.group_labels, derived from the scaler: the pool's own labels
    (node_labels, flavor, quota) stay the same whoever makes its nodes."""
    if pool.scaler != cv.SCALER_CLUSTER_AUTOSCALER:
        return pool
    labelled = replace(pool, autoscaler_labels=autoscaler_node_labels(pool))
    return replace(labelled, autoscaler_tags=autoscaler_tags(labelled))


def autoscaler_tags(pool: PoolPlan) -> dict[str, str]:
    """The tags the platform adds to an elastic group's Auto Scaling group: CAPACITY_TAG=elastic, which makes it
    the autoscaler's (discovery_tags), and the node it would add when it has none (README "Auto-Discovery
    Setup": label/, taint/ and resources/ tags; the autoscaler reads them in aws_manager.go
    buildNodeFromTemplate, extractLabelsFromAsg, extractTaintsFromAsg, extractAllocatableResourcesFromAsg). EKS
    copies none of a node group's own tags to its Auto Scaling group (aws/containers-roadmap#608), and reads
    labels and taints from the node group's API only while it has never had a node (README,
    "eks:DescribeNodegroup"), so the group itself carries them.

    Not the two standard discovery tags (k8s.io/cluster-autoscaler/enabled and .../<cluster>): EKS puts them on
    every managed node group's Auto Scaling group itself ("Amazon EKS tags managed node group resources so that
    they are configured to use the Kubernetes Cluster Autoscaler", EKS user guide, managed-node-groups.html), and
    a stack that declared them too would delete EKS's own tags with its resources.

    Resources: the pool's schedulable units under their resource name (MIG slices, time-sliced replicas or
    whole GPUs) and its EFA devices; the autoscaler otherwise assumes nvidia.com/gpu at the instance type's GPU
    count, which a MIG (mixed strategy) or time-sliced (renameByDefault) node never advertises, so that is 0
    there. CPU and memory come from the instance type."""
    tags = {cv.CAPACITY_TAG: cv.CAPACITY_ELASTIC}
    for key, value in pool.group_labels.items():
        tags[cv.CLUSTER_AUTOSCALER_LABEL_TAG + key] = value
    for t in pool.taints:
        tags[cv.CLUSTER_AUTOSCALER_TAINT_TAG + t.key] = f"{t.value}:{t.effect}"
    resources = {pool.resource_name: pool.units_per_node}
    if pool.resource_name != cv.GPU_RESOURCE:
        resources[cv.GPU_RESOURCE] = 0
    if pool.efa_interfaces:
        resources[cv.EFA_RESOURCE] = pool.efa_interfaces
    for name, count in resources.items():
        tags[cv.CLUSTER_AUTOSCALER_RESOURCES_TAG + name] = str(count)
    return tags


def discovery_tags(cluster: str) -> tuple[str, ...]:
    """`--node-group-auto-discovery=asg:tag=...`: the two standard keys and CAPACITY_TAG=elastic, so only the
    groups the plan calls elastic are the autoscaler's (EKS puts the standard two on every managed group, the
    platform the third: autoscaler_tags)."""
    return (cv.CLUSTER_AUTOSCALER_ENABLED_TAG, cv.cluster_autoscaler_cluster_tag(cluster),
            f"{cv.CAPACITY_TAG}={cv.CAPACITY_ELASTIC}")


@dataclass(frozen=True, slots=True)
class ClusterAutoscalerPlan:
    """The autoscaler on an `eks` cluster: made when addons.clusterAutoscaler.install is on."""

    chart_version: str
    image_tag: str
    cluster: str
    region: str | None
    partition: str
    namespace: str
    release: str
    service_account: str
    role: str
    discovery_tags: tuple[str, ...]
    # Untainted system nodes when the cluster has a system pool (every GPU node is tainted either way).
    node_selector: Mapping[str, str]
    scale_down_unneeded_time: str
    scale_down_delay_after_add: str
    max_node_provision_time: str
    provisioning_requests: bool
    manage_pod_identity_agent: bool
    # The node groups it scales: the elastic managed node groups, whose Auto Scaling groups alone it may resize.
    node_groups: tuple[str, ...]

    @property
    def provisioning_request_crd(self) -> str:
        return PROVISIONING_REQUEST_CRD_URL.format(version=self.image_tag.removeprefix("v"))

    @property
    def args(self) -> dict[str, str]:
        """Flags beyond the chart's own (config/flags/flags.go at the image's tag). ProvisioningRequests need
        JSON from the API client (FAQ.md, step 3: `--kube-api-content-type application/json`)."""
        out = {
            "scale-down-unneeded-time": self.scale_down_unneeded_time,
            "scale-down-delay-after-add": self.scale_down_delay_after_add,
            "max-node-provision-time": self.max_node_provision_time,
        }
        if self.provisioning_requests:
            out["enable-provisioning-requests"] = "true"
            out["kube-api-content-type"] = "application/json"
        return out


def plan_cluster_autoscaler(spec: Platform, region: str | None, pools: tuple[PoolPlan, ...],
                            pod_identity_agent_elsewhere: bool) -> ClusterAutoscalerPlan | None:
    if not cluster_autoscaler_on(spec):
        return None
    c, addon = spec.cluster, spec.addons.clusterAutoscaler
    return ClusterAutoscalerPlan(
        chart_version=addon.version,
        image_tag=addon.imageTag,
        cluster=c.name,
        region=region,
        partition=partition(region),
        namespace=cv.CLUSTER_AUTOSCALER_NAMESPACE,
        release=cv.CLUSTER_AUTOSCALER_RELEASE_NAME,
        service_account=cv.CLUSTER_AUTOSCALER_SERVICE_ACCOUNT,
        role=cv.cluster_autoscaler_role_name(c.name),
        discovery_tags=discovery_tags(c.name),
        node_selector={cv.NODE_ROLE: cv.SYSTEM_NODE_ROLE} if c.systemPool is not None else {},
        scale_down_unneeded_time=addon.scaleDownUnneededTime,
        scale_down_delay_after_add=addon.scaleDownDelayAfterAdd,
        max_node_provision_time=addon.maxNodeProvisionTime,
        provisioning_requests=addon.provisioningRequests,
        manage_pod_identity_agent=addon.managePodIdentityAgent and not pod_identity_agent_elsewhere,
        node_groups=tuple(cv.node_group_name(c.name, p.name) for p in pools
                          if p.scaler == cv.SCALER_CLUSTER_AUTOSCALER),
    )


@dataclass(frozen=True, slots=True)
class ProvisioningPlan:
    """Kueue's ProvisioningRequest admission check: on (and on which flavors) or off, and why. A job on one of
    `flavors` is admitted only after the autoscaler has asked for all of its nodes in one request; on a
    topology-aware flavor Kueue assigns the topology after that, from the nodes that came (kueue
    site/content/en/docs/concepts/topology_aware_scheduling.md, "ClusterAutoscaler support").

    On AWS that request is not atomic and "provisioned" does not mean the nodes exist: the AWS provider's
    AtomicIncreaseSize returns ErrNotImplemented (cloudprovider/aws/aws_cloud_provider.go), the scale-up falls
    back to one IncreaseSize (core/scaleup/orchestrator/executor.go increaseSize), and best-effort-atomic marks
    the request Provisioned as soon as that call succeeds (provisioningrequest/besteffortatomic/
    provisioning_class.go). The booking expires 10 minutes later (PROVISIONING_BOOKING_SECONDS), and a job on a
    topology-aware flavor that has no Ready nodes for its topology by then is sent back with its request retried
    (kueue pkg/controller/admissionchecks/provisioning/controller.go syncCheckStates, BookingExpired) until
    `retry_limit` retries are spent; then the check is Rejected and the workload deactivated. So the retries'
    backoffs together cover `node_boot_seconds` (plan_provisioning)."""

    enabled: bool
    reason: str
    admission_check: str = cv.PROVISIONING_CHECK_NAME
    config: str = cv.PROVISIONING_CONFIG_NAME
    provisioning_class: str = cv.PROVISIONING_CLASS_BEST_EFFORT_ATOMIC
    # Only pod sets that ask for one of these go into the ProvisioningRequest (the pools' GPU resources:
    # a pod set without GPUs is never given one of these flavors anyway).
    managed_resources: tuple[str, ...] = ()
    flavors: tuple[str, ...] = ()
    # The longest a scaled GPU node takes to be usable: registered within maxNodeProvisionTime (or the
    # autoscaler gives it up), then its GPUs allocatable within GPU_ALLOCATABLE_AFTER_READY_SECONDS.
    node_boot_seconds: int = 0
    # The ProvisioningRequestConfig's retryStrategy: backoffLimitCount, backoffBaseSeconds, backoffMaxSeconds.
    retry_limit: int = 0
    retry_base_seconds: int = PROVISIONING_RETRY_BASE_SECONDS
    retry_max_seconds: int = PROVISIONING_RETRY_MAX_SECONDS

    @property
    def retry_backoffs(self) -> tuple[int, ...]:
        """The wait before each retry, as Kueue computes it (UpdateAdmissionCheckRequeueState)."""
        return retry_backoffs(self.retry_limit, self.retry_base_seconds, self.retry_max_seconds)

    def team_flavors(self, quota_flavors: tuple[str, ...] | list[str]) -> tuple[str, ...]:
        """The team's flavors that get the check (ClusterQueue admissionChecksStrategy onFlavors)."""
        return tuple(f for f in self.flavors if f in quota_flavors) if self.enabled else ()


def go_duration_seconds(value: str) -> float:
    """A Go duration the spec accepted (spec/limits.py GO_DURATION: 15m, 1h30m, 90s) in seconds."""
    parts = _GO_DURATION_PART.findall(value)
    if not parts or "".join(n + u for n, u in parts) != value:
        raise ValueError(f"{value!r} is not a Go duration such as 30s, 10m or 1h30m")
    return sum(float(n) * _GO_DURATION_SECONDS[u] for n, u in parts)


def retry_backoffs(limit: int, base_seconds: int, max_seconds: int) -> tuple[int, ...]:
    """Kueue's wait before the n-th of `limit` retries: base * 2^(n-1), at most max (pkg/workload/
    admissionchecks.go UpdateAdmissionCheckRequeueState)."""
    return tuple(min(base_seconds * 2 ** n, max_seconds) for n in range(limit))


def retry_limit_covering(seconds: float, base_seconds: int = PROVISIONING_RETRY_BASE_SECONDS,
                         max_seconds: int = PROVISIONING_RETRY_MAX_SECONDS) -> int:
    """The fewest retries whose backoffs add up to at least `seconds` (at least Kueue's default 3). The
    10-minute booking of every attempt comes on top, as margin."""
    limit = 3
    while sum(retry_backoffs(limit, base_seconds, max_seconds)) < seconds:
        limit += 1
    return limit


def plan_provisioning(spec: Platform, pools: tuple[PoolPlan, ...], multikueue_manager: bool) -> ProvisioningPlan:
    """On exactly where an autoscaler that implements ProvisioningRequest scales the pool: an admission check
    whose controller is inactive keeps its ClusterQueue from admitting anything (kueue v0.19.2
    pkg/cache/scheduler/clusterqueue.go updateWithAdmissionChecks: an inactive check makes the queue inactive),
    so a cluster without one (an `existing` cluster such as the live local one) must not get it."""
    ca = spec.addons.clusterAutoscaler
    scaled = [p for p in pools if p.scaler == cv.SCALER_CLUSTER_AUTOSCALER]
    if spec.cluster.provider != "eks":
        reason = ("cluster.provider is 'existing': the stack deploys no autoscaler there, and a ProvisioningRequest "
                  "check nobody answers would keep every queue that has it from admitting anything")
    elif not ca.install:
        reason = "addons.clusterAutoscaler.install is false: nothing would answer a ProvisioningRequest"
    elif not ca.provisioningRequests:
        reason = "addons.clusterAutoscaler.provisioningRequests is false"
    elif multikueue_manager:
        reason = "a MultiKueue manager: its jobs run on the workers, which provision their own nodes"
    elif not scaled:
        reason = ("no pool is scaled by the Cluster Autoscaler (reserved pools run their reservation, Karpenter "
                  "pools are Karpenter's)")
    else:
        boot = int(go_duration_seconds(ca.maxNodeProvisionTime)) + GPU_ALLOCATABLE_AFTER_READY_SECONDS
        return ProvisioningPlan(
            enabled=True,
            reason=(f"Kueue asks the Cluster Autoscaler for all of a job's nodes on "
                    f"{', '.join(p.name for p in scaled)} in one request before it admits the job "
                    "(best-effort-atomic-scale-up; on AWS one non-atomic increase of the node group, marked "
                    "provisioned once requested, before the nodes exist)"),
            managed_resources=tuple(sorted({p.resource_name for p in scaled})),
            flavors=tuple(p.flavor for p in scaled),
            node_boot_seconds=boot,
            retry_limit=retry_limit_covering(boot),
        )
    return ProvisioningPlan(enabled=False, reason=reason)


def _usd(nodes: int, pool: PoolPlan) -> str:
    return f"${nodes * pool.usd_per_node_hour:,.2f}/h"


def capacity_warnings(spec: Platform, pools: tuple[PoolPlan, ...], provisioning: ProvisioningPlan) -> list[str]:
    """What the capacity semantics cannot do for a spec: reserved nodes left idle, pools nothing scales, and
    topology-aware pools that cannot grow (the ones that cannot start at all are refused in spec/capacity_checks.py)."""
    out: list[str] = []
    by_name = {p.name: p for p in spec.pools}
    for p in pools:
        cap = by_name[p.name].capacity
        kind = "capacity block" if p.capacity_type == "capacity-block" else "capacity reservation"
        if p.scaler == cv.SCALER_RESERVATION and (cap.min < p.reserved_nodes
                                                  or (cap.desired is not None and cap.desired < p.reserved_nodes)):
            field, asked = ("min", cap.min) if cap.min < p.reserved_nodes else ("desired", cap.desired)
            idle = p.reserved_nodes - int(asked or 0)
            out.append(f"pool {p.name!r} is a {kind} of {p.reserved_nodes} nodes, paid for whole while it is active: "
                       f"capacity.{field} {asked} would leave {idle} of them ({_usd(idle, p)}) idle, so the node group "
                       f"runs all {p.reserved_nodes}; set capacity.{field} to {p.reserved_nodes} to say so")
        if p.scaler == cv.SCALER_KARPENTER and p.reserved_nodes:
            out.append(f"pool {p.name!r} is a {kind} of {p.reserved_nodes} nodes, paid for whole while it is active, "
                       f"and Karpenter launches nodes only for pending pods: while no job runs there, "
                       f"{p.reserved_nodes} reserved nodes ({_usd(p.reserved_nodes, p)}) are paid for and idle")
        if p.scaler == cv.SCALER_KARPENTER and p.topology:
            out.append(f"pool {p.name!r} is topology-aware and provisioned by Karpenter, which implements no "
                       "ProvisioningRequest (kubernetes-sigs/karpenter#742): Kueue places such jobs only on Ready "
                       "nodes, so with none no job is admitted, no pod is Pending and Karpenter launches nothing; "
                       "use provisioner 'managed-node-group' with addons.clusterAutoscaler for it")
        if p.scaler == cv.SCALER_NONE:
            out.append(f"pool {p.name!r} is {p.capacity_type} ({cap.min}..{cap.max} nodes) but "
                       "addons.clusterAutoscaler.install is false: nothing scales it, it stays at "
                       f"{p.desired_nodes} nodes until someone changes its node group's desired size")
        if (p.capacity_semantics == cv.CAPACITY_ELASTIC and p.topology and p.scaler != cv.SCALER_KARPENTER
                and p.flavor not in provisioning.flavors and p.scaler != cv.SCALER_EXTERNAL and cap.min > 0):
            out.append(f"pool {p.name!r} is topology-aware and elastic without ProvisioningRequest "
                       f"({provisioning.reason}): Kueue places its jobs only on Ready nodes, so it admits no job "
                       f"larger than its {cap.min} running nodes and never grows")
    return out



# The autoscaler's IAM (cloudprovider/aws/README.md at tag cluster-autoscaler-1.33.6, "Full Cluster Autoscaler
# Features Policy (Recommended)": what auto-discovery and the dynamic EC2 instance list need). Read-only actions
# on every resource, as there; the two that change a group only on the elastic groups' Auto Scaling groups (the
# README: "only the second block of actions should be updated to restrict the resources"), so the autoscaler
# can never resize a reserved or system group.
CLUSTER_AUTOSCALER_READ_ACTIONS: tuple[str, ...] = (
    "autoscaling:DescribeAutoScalingGroups",
    "autoscaling:DescribeAutoScalingInstances",
    "autoscaling:DescribeLaunchConfigurations",
    "autoscaling:DescribeScalingActivities",
    "ec2:DescribeImages",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeLaunchTemplateVersions",
    "ec2:GetInstanceTypesFromInstanceRequirements",
)
# The labels and taints of a managed node group with no node yet (README: "allows Cluster Autoscaler to pull
# labels and taints from the EKS DescribeNodegroup API"): the one read that takes a resource, so it gets the
# elastic groups' ARNs rather than the README's "*".
CLUSTER_AUTOSCALER_NODEGROUP_ACTIONS: tuple[str, ...] = ("eks:DescribeNodegroup",)
CLUSTER_AUTOSCALER_SCALE_ACTIONS: tuple[str, ...] = (
    "autoscaling:SetDesiredCapacity",
    "autoscaling:TerminateInstanceInAutoScalingGroup",
)
# EKS Pod Identity's service principal and the actions its trust policy allows (EKS user guide,
# pod-id-role.html).
POD_IDENTITY_PRINCIPAL = "pods.eks.amazonaws.com"
POD_IDENTITY_TRUST_ACTIONS: tuple[str, ...] = ("sts:AssumeRole", "sts:TagSession")


def _region(ca: ClusterAutoscalerPlan) -> str:
    """The region an ARN names. A stack document without one is refused before this (spec.loading
    load_stack_platform); a plan built without one must fail here rather than grant on "arn:...:None:..."."""
    if not ca.region:
        raise ValueError(f"the AWS region of cluster {ca.cluster!r} is unknown: set {cv.AWS_REGION_CONFIG} (or "
                         f"{' / '.join(cv.AWS_REGION_ENV_VARS)}) before the autoscaler's IAM policy can name its "
                         "groups")
    return ca.region


def autoscaling_group_arn(ca: ClusterAutoscalerPlan, account: str, group: str) -> str:
    """An Auto Scaling group by name, whatever its id (Service Authorization Reference, Amazon EC2 Auto Scaling:
    arn:${Partition}:autoscaling:${Region}:${Account}:autoScalingGroup:${GroupId}:autoScalingGroupName/${Name})."""
    return f"arn:{ca.partition}:autoscaling:{_region(ca)}:{account}:autoScalingGroup:*:autoScalingGroupName/{group}"


def nodegroup_arn(ca: ClusterAutoscalerPlan, account: str, node_group: str) -> str:
    """An EKS managed node group by name (Service Authorization Reference, Amazon EKS:
    arn:${Partition}:eks:${Region}:${Account}:nodegroup/${ClusterName}/${NodegroupName}/${UUID})."""
    return f"arn:{ca.partition}:eks:{_region(ca)}:{account}:nodegroup/{ca.cluster}/{node_group}/*"


def cluster_autoscaler_policy(ca: ClusterAutoscalerPlan, account: str, groups: list[str] | tuple[str, ...]) -> dict:
    """The autoscaler's permissions, given the elastic node groups' Auto Scaling group names."""
    statements: list[dict] = [{"Sid": "DiscoverGroupsAndInstanceTypes", "Effect": "Allow",
                               "Action": list(CLUSTER_AUTOSCALER_READ_ACTIONS), "Resource": "*"}]
    if ca.node_groups:
        statements.append({"Sid": "DescribeElasticNodeGroups", "Effect": "Allow",
                           "Action": list(CLUSTER_AUTOSCALER_NODEGROUP_ACTIONS),
                           "Resource": [nodegroup_arn(ca, account, g) for g in sorted(ca.node_groups)]})
    if groups:
        statements.append({"Sid": "ScaleElasticGroups", "Effect": "Allow",
                           "Action": list(CLUSTER_AUTOSCALER_SCALE_ACTIONS),
                           "Resource": [autoscaling_group_arn(ca, account, g) for g in sorted(groups)]})
    return {"Version": "2012-10-17", "Statement": statements}


def pod_identity_trust_policy() -> dict:
    return {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": POD_IDENTITY_PRINCIPAL},
                                                   "Action": list(POD_IDENTITY_TRUST_ACTIONS)}]}
