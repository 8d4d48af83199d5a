"""Karpenter as a pool provisioner: per `provisioner: karpenter` pool a NodePool and an EC2NodeClass, and
once per cluster the controller (Helm releases, IAM through EKS Pod Identity, the nodes' role and access
entry, the interruption queue and its EventBridge rules).

Every label, taint, capacity and reservation comes from the plan (plan.PoolPlan and
gpu_platform/karpenter.py); this module only knows how Karpenter and AWS spell them. Sources are the
github.com/aws/karpenter-provider-aws v1.15.2 Go module (paths inside it) and, for IAM and the queue, the
getting-started CloudFormation template of the same repository
(website/content/en/preview/getting-started/getting-started-with-karpenter/cloudformation.yaml).
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from gpu_platform import conventions as cv
from gpu_platform.karpenter import KarpenterPlan
from gpu_platform.plan import Plan, PoolPlan

from .kube_object import KubeObject, object_metadata
from .node_pools.aws_names import IMDS_HOP_LIMIT, NODE_ROLE_POLICIES
from .node_pools.cluster import ClusterAccess
from .node_pools.network_interfaces import efa_interface_layout

# The charts are published only as OCI artifacts at the release version (hack/release/common.sh sets
# Chart.yaml version and the controller image tag when publishing; the module's Chart.yaml lags behind).
CHART = "oci://public.ecr.aws/karpenter/karpenter"
CRD_CHART = "oci://public.ecr.aws/karpenter/karpenter-crd"
# The nodes' role carries what managed node groups' roles carry plus SSM, as the CloudFormation's
# KarpenterNodeRole does (AmazonEC2ContainerRegistryPullOnly there; ReadOnly, a superset, is what the
# platform's node role already uses).
KARPENTER_NODE_ROLE_POLICIES: dict[str, str] = {
    **NODE_ROLE_POLICIES,
    "ssm": aws.iam.ManagedPolicy.AMAZON_SSM_MANAGED_INSTANCE_CORE,
}
# EKS access entry type of Linux nodes, AL2023 and Bottlerocket alike (EKS API reference, CreateAccessEntry.type).
NODE_ACCESS_ENTRY_TYPE = "EC2_LINUX"
# Controller requests and limits, as the getting-started Helm command sets them (step08-apply-helm-chart.sh).
CONTROLLER_RESOURCES = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
# Interruption queue (CloudFormation KarpenterInterruptionQueue): messages live 5 minutes, SSE by SQS.
QUEUE_RETENTION_SECONDS = 300
# EventBridge rules feeding the queue (CloudFormation ScheduledChangeRule ... CapacityReservationInterruptionRule),
# by the short name their AWS names end in (conventions.karpenter_rule_name).
INTERRUPTION_EVENTS: Mapping[str, tuple[str, str]] = cv.KARPENTER_INTERRUPTION_RULES


def node_pool(pool: PoolPlan) -> dict[str, Any]:
    """The NodePool: the pool's node labels and taints on every node it launches, requirements that pin the
    instance type, zone and capacity type (and the reservation), limits at `capacity.max` nodes, and the
    pool's disruption."""
    k = pool.karpenter
    assert k is not None
    return {
        "apiVersion": cv.KARPENTER_NODEPOOL_API_VERSION,
        "kind": "NodePool",
        "metadata": object_metadata(k.nodepool, labels=pool.labels),
        "spec": {
            "template": {
                "metadata": {"labels": dict(pool.node_labels)},
                "spec": {
                    "nodeClassRef": {"group": cv.KARPENTER_NODECLASS_GROUP, "kind": cv.KARPENTER_NODECLASS_KIND,
                                     "name": k.nodeclass},
                    "requirements": [r.to_k8s() for r in k.requirements],
                    "taints": [t.to_k8s() for t in pool.taints],
                    "expireAfter": k.expire_after,
                },
            },
            "limits": k.limits,
            "disruption": {
                "consolidationPolicy": k.consolidation_policy,
                "consolidateAfter": k.consolidate_after,
                "budgets": [b.to_k8s() for b in k.budgets],
            },
        },
    }


def network_interfaces(pool: PoolPlan) -> list[dict[str, Any]]:
    """The launch templates' EFA layout (node_pools.efa_interface_layout), as EC2NodeClass networkInterfaces:
    its CEL rules want the primary interface (card 0, device 0, 'interface') and at most one EFA-only
    interface per card (pkg/apis/v1/ec2nodeclass.go, NetworkInterfaces)."""
    return [{"networkCardIndex": card, "deviceIndex": device, "interfaceType": kind}
            for card, device, kind in efa_interface_layout(pool)]


def node_class(plan: Plan, pool: PoolPlan, node_role: pulumi.Input[str],
               security_group_id: pulumi.Input[str], efa_security_group_id: pulumi.Input[str] | None = None,
               subnet_ids: Sequence[pulumi.Input[str]] | None = None) -> dict[str, Any]:
    """The EC2NodeClass: AMI family and pinned alias, the cluster's subnets (the zone requirement picks among
    them) and security group, the reservation by id, IMDSv2, volumes, instance store RAID0, EFA interfaces and
    the pool's cost tags on every instance, volume and interface Karpenter launches. An EFA pool's nodes also
    get the cluster's EFA security group: the selector's groups go on every interface (EC2NodeClass
    securityGroupSelectorTerms), the EFA ones included, as on a managed pool's launch template."""
    k = pool.karpenter
    assert k is not None
    groups = [security_group_id]
    if pool.efa_interfaces and efa_security_group_id is not None:
        groups.append(efa_security_group_id)
    spec: dict[str, Any] = {
        "role": node_role,
        "amiFamily": k.ami_family,
        "amiSelectorTerms": [{"alias": k.ami_alias}],
        # cluster.subnetIds, or the private subnets of the VPC made here (ClusterAccess.subnet_ids)
        "subnetSelectorTerms": [{"id": s} for s in (plan.cluster.subnet_ids if subnet_ids is None else subnet_ids)],
        "securityGroupSelectorTerms": [{"id": g} for g in groups],
        "metadataOptions": {
            "httpEndpoint": "enabled",
            "httpProtocolIPv6": "disabled",
            "httpPutResponseHopLimit": IMDS_HOP_LIMIT,
            "httpTokens": "required",
        },
        "blockDeviceMappings": [
            {"deviceName": v.device, "rootVolume": v.root,
             "ebs": {"volumeSize": f"{v.size_gib}Gi", "volumeType": "gp3", "encrypted": True,
                     "deleteOnTermination": True}}
            for v in k.volumes
        ],
        "tags": plan.pool_tags(pool),
    }
    if pool.reservation_id:
        spec["capacityReservationSelectorTerms"] = [{"id": pool.reservation_id}]
    if pool.placement_group:
        spec["placementGroupSelector"] = {"name": cv.placement_group_name(plan.cluster.name, pool.name)}
    if k.instance_store_policy:
        spec["instanceStorePolicy"] = k.instance_store_policy
    interfaces = network_interfaces(pool)
    if interfaces:
        spec["networkInterfaces"] = interfaces
    return {
        "apiVersion": cv.KARPENTER_NODECLASS_API_VERSION,
        "kind": cv.KARPENTER_NODECLASS_KIND,
        "metadata": object_metadata(k.nodeclass, labels=pool.labels),
        "spec": spec,
    }


# Karpenter's node repair (Alpha, off by default: charts/karpenter/values.yaml settings.featureGates.nodeRepair,
# passed to the controller as FEATURE_GATES NodeRepair=..., templates/deployment.yaml). With it a node whose
# condition matches one of the provider's repair policies for long enough is replaced
# (pkg/cloudprovider/cloudprovider.go RepairPolicies): Ready False or Unknown for 30 min; the node monitoring
# agent's AcceleratedHardwareReady False for 10 min on the XIDs it knows (46, 48, 54, 62, 63, 95, 109, 110,
# 136, 140, 143, 155, 156, 158 reboot-clearable; 64, 74, 79, 119, 120 fatal), 30 min on any other reason;
# StorageReady, NetworkingReady, KernelReady, ContainerRuntimeReady False for 30 min. Repair stops in a
# NodePool with more than 20% of its nodes unhealthy (kubernetes-sigs/karpenter pkg/controllers/node/health/
# controller.go allowedUnhealthyPercent). Left off, all Alpha: awsFeatureGates.rebootForRepair (would reboot
# for the reboot-clearable XIDs instead, and needs ec2:RebootInstances, which the controller's policies
# below do not grant) and featureGates.terminateFirstRepair.
FEATURE_GATES: dict[str, bool] = {"nodeRepair": True}


def chart_values(plan: Plan, kp: KarpenterPlan) -> dict[str, Any]:
    """The controller on the system pool only: its label selects the nodes, no toleration lets it onto a GPU
    node (they are all tainted), and the chart's default affinity keeps it off nodes Karpenter launches
    (charts/karpenter/values.yaml affinity: karpenter.sh/nodepool DoesNotExist)."""
    return {
        "settings": {
            "clusterName": plan.cluster.name,
            "interruptionQueue": kp.queue or "",
            "featureGates": dict(FEATURE_GATES),
        },
        "serviceAccount": {"name": kp.service_account},
        "replicas": kp.replicas,
        "nodeSelector": {"kubernetes.io/os": "linux", cv.NODE_ROLE: cv.SYSTEM_NODE_ROLE},
        "tolerations": [],
        "controller": {"resources": CONTROLLER_RESOURCES},
    }


def _trust(service: str, actions: Sequence[str]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"Service": service}, "Action": list(actions)}]})


def controller_policies(kp: KarpenterPlan, cluster: str, region: str, account: str, node_role_arn: str,
                        queue_arn: str | None) -> dict[str, dict[str, Any]]:
    """The controller's permissions: the CloudFormation template's NodeLifecycle, IAMIntegration,
    EKSIntegration, Interruption and ResourceDiscovery policies, statement for statement (ZonalShift is left
    out: the chart's settings.enableZonalShift stays off)."""
    arn = f"arn:{kp.partition}"
    ec2 = f"{arn}:ec2:{region}"
    owned = {f"aws:ResourceTag/kubernetes.io/cluster/{cluster}": "owned"}
    request_owned = {f"aws:RequestTag/kubernetes.io/cluster/{cluster}": "owned", "aws:RequestTag/eks:eks-cluster-name": cluster}
    nodepool_tag = {"aws:ResourceTag/karpenter.sh/nodepool": "*"}
    request_nodepool_tag = {"aws:RequestTag/karpenter.sh/nodepool": "*"}
    launched = [f"{ec2}:*:{kind}/*" for kind in ("fleet", "instance", "volume", "network-interface", "launch-template",
                                                  "spot-instances-request")]
    profile = f"{arn}:iam::{account}:instance-profile/*"
    profile_tags = {f"aws:RequestTag/kubernetes.io/cluster/{cluster}": "owned", "aws:RequestTag/eks:eks-cluster-name": cluster,
                    "aws:RequestTag/topology.kubernetes.io/region": region}
    out: dict[str, dict[str, Any]] = {
        "node-lifecycle": {"Version": "2012-10-17", "Statement": [
            {"Sid": "AllowScopedEC2InstanceAccessActions", "Effect": "Allow",
             "Resource": [f"{ec2}::image/*", f"{ec2}::snapshot/*", f"{ec2}:*:security-group/*", f"{ec2}:*:subnet/*",
                          f"{ec2}:*:capacity-reservation/*", f"{ec2}:*:placement-group/*"],
             "Action": ["ec2:RunInstances", "ec2:CreateFleet"]},
            {"Sid": "AllowScopedEC2LaunchTemplateAccessActions", "Effect": "Allow",
             "Resource": f"{ec2}:*:launch-template/*", "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
             "Condition": {"StringEquals": owned, "StringLike": nodepool_tag}},
            {"Sid": "AllowScopedEC2InstanceActionsWithTags", "Effect": "Allow", "Resource": launched,
             "Action": ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"],
             "Condition": {"StringEquals": request_owned, "StringLike": request_nodepool_tag}},
            {"Sid": "AllowScopedResourceCreationTagging", "Effect": "Allow", "Resource": launched, "Action": "ec2:CreateTags",
             "Condition": {"StringEquals": {**request_owned,
                                            "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"]},
                           "StringLike": request_nodepool_tag}},
            {"Sid": "AllowScopedResourceTagging", "Effect": "Allow", "Resource": f"{ec2}:*:instance/*", "Action": "ec2:CreateTags",
             "Condition": {"StringEquals": owned, "StringLike": nodepool_tag,
                           "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": cluster},
                           "ForAllValues:StringEquals": {"aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]}}},
            {"Sid": "AllowScopedDeletion", "Effect": "Allow",
             "Resource": [f"{ec2}:*:instance/*", f"{ec2}:*:launch-template/*"],
             "Action": ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
             "Condition": {"StringEquals": owned, "StringLike": nodepool_tag}},
        ]},
        "iam-integration": {"Version": "2012-10-17", "Statement": [
            {"Sid": "AllowPassingInstanceRole", "Effect": "Allow", "Resource": node_role_arn, "Action": "iam:PassRole",
             "Condition": {"StringEquals": {"iam:PassedToService": ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"]}}},
            {"Sid": "AllowScopedInstanceProfileCreationActions", "Effect": "Allow", "Resource": profile,
             "Action": ["iam:CreateInstanceProfile"],
             "Condition": {"StringEquals": profile_tags, "StringLike": {"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"}}},
            {"Sid": "AllowScopedInstanceProfileTagActions", "Effect": "Allow", "Resource": profile,
             "Action": ["iam:TagInstanceProfile"],
             "Condition": {"StringEquals": {**owned, "aws:ResourceTag/topology.kubernetes.io/region": region, **profile_tags},
                           "StringLike": {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*",
                                          "aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"}}},
            {"Sid": "AllowScopedInstanceProfileActions", "Effect": "Allow", "Resource": profile,
             "Action": ["iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile", "iam:DeleteInstanceProfile"],
             "Condition": {"StringEquals": {**owned, "aws:ResourceTag/topology.kubernetes.io/region": region},
                           "StringLike": {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"}}},
        ]},
        "eks-integration": {"Version": "2012-10-17", "Statement": [
            {"Sid": "AllowAPIServerEndpointDiscovery", "Effect": "Allow",
             "Resource": f"{arn}:eks:{region}:{account}:cluster/{cluster}", "Action": "eks:DescribeCluster"},
        ]},
        "resource-discovery": {"Version": "2012-10-17", "Statement": [
            {"Sid": "AllowRegionalReadActions", "Effect": "Allow", "Resource": "*",
             "Action": ["ec2:DescribeCapacityReservations", "ec2:DescribeImages", "ec2:DescribeInstances",
                        "ec2:DescribeInstanceStatus", "ec2:DescribeInstanceTypeOfferings", "ec2:DescribeInstanceTypes",
                        "ec2:DescribeLaunchTemplates", "ec2:DescribePlacementGroups", "ec2:DescribeSecurityGroups",
                        "ec2:DescribeSpotPriceHistory", "ec2:DescribeSubnets"],
             "Condition": {"StringEquals": {"aws:RequestedRegion": region}}},
            {"Sid": "AllowSSMReadActions", "Effect": "Allow", "Resource": f"{arn}:ssm:{region}::parameter/aws/service/*",
             "Action": "ssm:GetParameter"},
            {"Sid": "AllowPricingReadActions", "Effect": "Allow", "Resource": "*", "Action": "pricing:GetProducts"},
            {"Sid": "AllowUnscopedInstanceProfileListAction", "Effect": "Allow", "Resource": "*",
             "Action": "iam:ListInstanceProfiles"},
            {"Sid": "AllowInstanceProfileReadActions", "Effect": "Allow", "Resource": profile,
             "Action": "iam:GetInstanceProfile"},
        ]},
    }
    if kp.queue is not None:
        out["interruption"] = {"Version": "2012-10-17", "Statement": [
            {"Sid": "AllowInterruptionQueueActions", "Effect": "Allow", "Resource": queue_arn,
             "Action": ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"]},
        ]}
    return out


def queue_policy(queue_arn: str) -> str:
    """EventBridge (and SQS) may send; nothing may use the queue without TLS (CloudFormation
    KarpenterInterruptionQueuePolicy)."""
    return json.dumps({"Id": "EC2InterruptionPolicy", "Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
         "Action": "sqs:SendMessage", "Resource": queue_arn},
        {"Sid": "DenyHTTP", "Effect": "Deny", "Action": "sqs:*", "Resource": queue_arn,
         "Condition": {"Bool": {"aws:SecureTransport": "false"}}, "Principal": "*"},
    ]})


class KarpenterNodePool(pulumi.ComponentResource):
    """One Karpenter pool: its EC2NodeClass and NodePool (after the CRDs), and its cluster placement group
    when the plan gives it one."""

    def __init__(self, name: str, plan: Plan, pool: PoolPlan, node_role: pulumi.Input[str],
                 security_group_id: pulumi.Input[str], crds: Sequence[pulumi.Resource],
                 opts: pulumi.ResourceOptions | None = None, efa_security_group_id: pulumi.Input[str] | None = None,
                 subnet_ids: Sequence[pulumi.Input[str]] | None = None):
        super().__init__("gpu-platform:karpenter:KarpenterNodePool", name, None, opts)
        self.pool = pool
        depends: list[pulumi.Resource] = list(crds)
        self.placement_group: aws.ec2.PlacementGroup | None = None
        if pool.placement_group:
            self.placement_group = aws.ec2.PlacementGroup(
                name, name=cv.placement_group_name(plan.cluster.name, pool.name), strategy="cluster",
                tags=plan.pool_tags(pool), opts=pulumi.ResourceOptions(parent=self),
            )
            depends.append(self.placement_group)
        self.node_class = KubeObject(
            f"{name}-nodeclass", node_class(plan, pool, node_role, security_group_id, efa_security_group_id, subnet_ids),
            opts=pulumi.ResourceOptions(parent=self, depends_on=depends),
        )
        self.node_pool = KubeObject(
            f"{name}-nodepool", node_pool(pool),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.node_class]),
        )
        self.register_outputs({})

    def exports(self) -> dict[str, Any]:
        p, k = self.pool, self.pool.karpenter
        assert k is not None
        return {
            "provisioner": cv.PROVISIONER_KARPENTER,
            "nodePool": k.nodepool,
            "ec2NodeClass": k.nodeclass,
            "instanceType": p.instance_type,
            "capacityType": p.capacity_type,
            "karpenterCapacityTypes": list(k.capacity_types),
            "capacityGpus": p.capacity_gpus,
            "limits": k.limits,
            "labels": dict(p.node_labels),
            "taints": [t.to_k8s() for t in p.taints],
        }


class Karpenter(pulumi.ComponentResource):
    """The controller and every Karpenter pool of the plan. AWS resources use the default AWS provider; the
    Kubernetes objects the provider this component is given."""

    def __init__(self, name: str, plan: Plan, kp: KarpenterPlan, cluster: ClusterAccess,
                 cluster_ready: Sequence[pulumi.Resource], opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:karpenter:Karpenter", name, None, opts)
        self.plan, self.kp = plan, kp
        c = plan.cluster
        child = pulumi.ResourceOptions(parent=self)
        tags = plan.platform_tags
        region = plan.region or ""
        account = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self)).account_id

        # Nodes: their own role (managed node groups get their role's access entry from EKS; Karpenter's
        # nodes need one made for them, EKS user guide "Create access entries", type EC2_LINUX).
        self.node_role = aws.iam.Role(
            "karpenter-node-role", name=kp.node_role, assume_role_policy=_trust("ec2.amazonaws.com", ["sts:AssumeRole"]),
            description=f"Nodes Karpenter launches in {c.name}", tags=tags, opts=child,
        )
        node_policies = [
            aws.iam.RolePolicyAttachment(f"karpenter-node-role-{key}", role=self.node_role.name, policy_arn=policy_arn, opts=child)
            for key, policy_arn in KARPENTER_NODE_ROLE_POLICIES.items()
        ]
        self.access_entry = aws.eks.AccessEntry(
            "karpenter-node-access", cluster_name=cluster.name, principal_arn=self.node_role.arn,
            type=NODE_ACCESS_ENTRY_TYPE, tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(cluster_ready)),
        )

        # Interruption queue and the EventBridge rules that feed it.
        self.queue: aws.sqs.Queue | None = None
        queue_arn: pulumi.Output[str] | None = None
        if kp.queue:
            self.queue = aws.sqs.Queue(
                "karpenter-interruption", name=kp.queue, message_retention_seconds=QUEUE_RETENTION_SECONDS,
                sqs_managed_sse_enabled=True, tags=tags, opts=child,
            )
            queue_arn = self.queue.arn
            aws.sqs.QueuePolicy("karpenter-interruption", queue_url=self.queue.id,
                                policy=self.queue.arn.apply(queue_policy), opts=child)
            for key, (source, detail_type) in INTERRUPTION_EVENTS.items():
                rule = aws.cloudwatch.EventRule(
                    f"karpenter-{key}", name=cv.karpenter_rule_name(c.name, key),
                    event_pattern=json.dumps({"source": [source], "detail-type": [detail_type]}),
                    tags=tags, opts=child,
                )
                aws.cloudwatch.EventTarget(f"karpenter-{key}", rule=rule.name, target_id="KarpenterInterruptionQueueTarget",
                                           arn=self.queue.arn, opts=child)

        # Controller: a role Pod Identity hands to the karpenter service account.
        self.controller_role = aws.iam.Role(
            "karpenter-controller-role", name=kp.controller_role,
            assume_role_policy=_trust("pods.eks.amazonaws.com", ["sts:AssumeRole", "sts:TagSession"]),
            description=f"Karpenter controller of {c.name} (EKS Pod Identity)", tags=tags, opts=child,
        )
        documents = pulumi.Output.all(account, self.node_role.arn, queue_arn).apply(
            lambda a: controller_policies(kp, c.name, region, a[0], a[1], a[2]))
        keys = ["node-lifecycle", "iam-integration", "eks-integration", "resource-discovery",
                *(["interruption"] if kp.queue else [])]
        attachments: list[pulumi.Resource] = []
        for key in keys:
            policy = aws.iam.Policy(
                f"karpenter-{key}", name=f"{kp.controller_role}-{key}",
                policy=documents.apply(lambda d, key=key: json.dumps(d[key])), tags=tags, opts=child,
            )
            attachments.append(aws.iam.RolePolicyAttachment(
                f"karpenter-{key}", role=self.controller_role.name, policy_arn=policy.arn, opts=child))
        self.pod_identity_agent: aws.eks.Addon | None = None
        if kp.manage_pod_identity_agent:
            self.pod_identity_agent = aws.eks.Addon(
                "karpenter-pod-identity-agent", cluster_name=cluster.name, addon_name=cv.POD_IDENTITY_AGENT_ADDON,
                resolve_conflicts_on_create="OVERWRITE", resolve_conflicts_on_update="OVERWRITE", tags=tags,
                opts=pulumi.ResourceOptions(parent=self, depends_on=list(cluster_ready)),
            )
        self.pod_identity = aws.eks.PodIdentityAssociation(
            "karpenter-controller", cluster_name=cluster.name, namespace=kp.namespace,
            service_account=kp.service_account, role_arn=self.controller_role.arn, tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(cluster_ready)),
        )

        # The CRDs from their own chart, so that upgrades update them (Helm installs a chart's crds/ only
        # once); the controller chart then skips its copy.
        self.crds = k8s.helm.v3.Release(
            kp.crd_release, name=kp.crd_release, chart=CRD_CHART, version=kp.version, namespace=kp.namespace,
            create_namespace=False, opts=child,
        )
        self.values = chart_values(plan, kp)
        ready = [*attachments, self.pod_identity, *([self.pod_identity_agent] if self.pod_identity_agent else [])]
        self.release = k8s.helm.v3.Release(
            kp.release, name=kp.release, chart=CHART, version=kp.version, namespace=kp.namespace,
            create_namespace=False, skip_crds=True, values=self.values,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.crds, *ready]),
        )
        self.pools: dict[str, KarpenterNodePool] = {
            pool.name: KarpenterNodePool(
                f"karpenter-{pool.name}", plan, pool, self.node_role.name, cluster.security_group_id,
                [self.crds, *node_policies, self.access_entry], opts=child,
                efa_security_group_id=cluster.efa_security_group_id,
                subnet_ids=list(cluster.subnet_ids),
            )
            for pool in plan.karpenter_pools
        }
        self.register_outputs({})

    def exports(self) -> dict[str, Any]:
        return {
            "karpenter": {
                "version": self.kp.version,
                "namespace": self.kp.namespace,
                "nodeRole": self.kp.node_role,
                "interruptionQueue": self.kp.queue,
                "pools": {n: p.exports() for n, p in self.pools.items()},
            }
        }
