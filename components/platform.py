"""GpuPlatform: wires every component from one plan. It decides nothing itself."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform import conventions as cv
from gpu_platform.plan import Plan

from .admission import Admission
from .autoscaler import ClusterAutoscaler, provisioning_request_crd
from .efa import EfaDevicePlugin
from .foundation import CiRoles, ClusterNetwork
from .gpu_operator import GpuOperator
from .karpenter import Karpenter
from .monitoring import Monitoring
from .observability import Observability
from .node_pools import EksCluster
from .queues import Queues
from .storage import Storage
from .tenancy import Tenancy
from .workload_controllers import WorkloadControllers


# The provider's own client-side limiter (pulumi-kubernetes provider/pkg/provider/provider.go: 50 QPS,
# burst 120 unless set) paced every create, dry run and read of a 1000-object stack: `up` and `preview`
# spent ~27 of their ~30 s waiting on it (docs/performance.md). The engine already bounds how many
# operations are in flight (`--parallel`, 8 by default) and the API server has its own priority and
# fairness, so the limiter is set high enough never to be the bottleneck.
KUBE_CLIENT_QPS = 500.0
KUBE_CLIENT_BURST = 1000

# Every object the platform applies takes its fields back from any other server-side-apply manager
# (pulumi-kubernetes provider/pkg/await/await.go patchForce: the annotation makes the apply forced), so an
# object a killed `up` created is adopted by the next one without a field conflict (see docs/architecture.md,
# "Every apply is forced").
PATCH_FORCE_ANNOTATION = "pulumi.com/patchForce"


def force_apply(args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult | None:
    """Annotate every Kubernetes object the platform declares (Helm releases have no metadata of their own)."""
    if not args.type_.startswith("kubernetes:") or args.type_.startswith("kubernetes:helm.sh/"):
        return None
    meta = args.props.get("metadata")
    if isinstance(meta, dict):
        annotations = {**(meta.get("annotations") or {}), PATCH_FORCE_ANNOTATION: "true"}
        meta = {**meta, "annotations": annotations}
    elif isinstance(meta, k8s.meta.v1.ObjectMetaArgs):
        meta = copy.copy(meta)
        pulumi.set(meta, "annotations", {**(pulumi.get(meta, "annotations") or {}), PATCH_FORCE_ANNOTATION: "true"})
    else:
        raise TypeError(f"{args.type_} {args.name}: metadata of type {type(meta).__name__} cannot be annotated")
    return pulumi.ResourceTransformationResult({**args.props, "metadata": meta}, args.opts)


def aws_cluster_arn(name: str, parent: pulumi.Resource) -> pulumi.Output[str]:
    """An attached EKS cluster's ARN, as EKS reports it."""
    import pulumi_aws as aws

    return aws.eks.get_cluster_output(name=name, opts=pulumi.InvokeOutputOptions(parent=parent)).arn


@dataclass(frozen=True)
class KubeAccess:
    """How the Kubernetes provider reaches the cluster. All None: the ambient KUBECONFIG."""

    kubeconfig: pulumi.Input[str] | None = None
    context: str | None = None
    # Write manifests to this directory instead of applying them (GitOps hand-off, offline runs).
    render_yaml_to_directory: str | None = None


def kube_provider(kube: KubeAccess, kubeconfig: pulumi.Input[str] | None, opts: pulumi.ResourceOptions) -> k8s.Provider:
    """The one Kubernetes provider of a stack (a split environment's tenant stacks make theirs the same way)."""
    return k8s.Provider(
        "k8s",
        kubeconfig=kubeconfig,
        context=kube.context,
        render_yaml_to_directory=kube.render_yaml_to_directory,
        enable_server_side_apply=True,
        kube_client_settings=k8s.KubeClientSettingsArgs(qps=KUBE_CLIENT_QPS, burst=KUBE_CLIENT_BURST),
        opts=opts,
    )


class GpuPlatform(pulumi.ComponentResource):
    def __init__(self, name: str, plan: Plan, kube: KubeAccess, opts: pulumi.ResourceOptions | None = None,
                 tenant_namespaces: bool = True):
        super().__init__("gpu-platform:index:GpuPlatform", name, None, opts)
        self.plan = plan
        child = pulumi.ResourceOptions(parent=self)

        # A fresh account's VPC (cluster.vpc) first: the created cluster and its node groups go in its subnets.
        self.network = ClusterNetwork("network", plan, plan.cluster.vpc, opts=child) if plan.cluster.vpc else None
        self.eks_cluster = (EksCluster("node-pools", plan, opts=child, network=self.network)
                            if plan.cluster.provider == "eks" else None)
        # The GitHub Actions roles and their access entries (cluster.ci), once the cluster exists.
        self.ci: CiRoles | None = None
        if plan.cluster.ci is not None and self.eks_cluster is not None:
            self.ci = CiRoles("ci", plan, plan.cluster.ci, self.eks_cluster.access.name, self.eks_cluster.cluster_ready,
                              opts=child)
        kubeconfig = kube.kubeconfig
        if kubeconfig is None and self.eks_cluster is not None:
            kubeconfig = self.eks_cluster.kubeconfig
        self.k8s = kube_provider(kube, kubeconfig, child)
        kopts = pulumi.ResourceOptions(parent=self, providers={"kubernetes": self.k8s}, transformations=[force_apply])
        self.operator = GpuOperator("gpu-operator", plan, opts=kopts)
        # The ProvisioningRequest CRD comes before Kueue's controller, which looks for it only when it starts.
        ca = plan.cluster_autoscaler if self.eks_cluster is not None else None
        self.provisioning_crd = (provisioning_request_crd(ca, pulumi.ResourceOptions(parent=self, providers={"kubernetes": self.k8s}))
                                 if ca is not None and ca.provisioning_requests else None)
        self.queues = Queues("queues", plan, opts=kopts,
                             controller_after=[self.provisioning_crd] if self.provisioning_crd else [])
        self.tenancy = Tenancy("tenancy", plan, self.queues, opts=kopts, namespaces=tenant_namespaces)
        # The monitoring stack the stack installs (addons.monitoring.mode in-cluster or managed): its chart goes in
        # Monitoring's namespace and Monitoring's PrometheusRule and ServiceMonitors wait for it (after_stack).
        self.observability: Observability | None = None
        mopts = kopts
        if plan.addons.monitoring.installs_stack:
            eks = self.eks_cluster
            cluster_arn = None
            if eks is not None:
                cluster_arn = eks.cluster.arn if eks.cluster is not None else aws_cluster_arn(plan.cluster.name, self)
            self.observability = Observability("observability", plan, eks.access if eks else None, cluster_arn,
                                               eks.cluster_ready if eks else [], opts=kopts)
            mopts = pulumi.ResourceOptions(parent=self, providers={"kubernetes": self.k8s},
                                           transformations=[force_apply, self.observability.after_stack])
        self.monitoring = Monitoring("monitoring", plan, self.operator, opts=mopts)
        if self.observability is not None:
            self.observability.in_namespace([self.monitoring.namespace])
        self.admission = Admission("admission", plan, opts=kopts)
        self.efa = EfaDevicePlugin("efa-device-plugin", plan, opts=kopts) if plan.installs_efa_device_plugin else None
        # JobSet, Trainer, LeaderWorkerSet, KubeRay (eks stacks). No ordering against Kueue: Kueue sets up a
        # framework's controller once its CRD appears (v0.19.2 pkg/controller/jobframework/setup.go WaitForAPI).
        self.workload_controllers = WorkloadControllers("workload-controllers", plan, opts=kopts)
        self.karpenter: Karpenter | None = None
        if plan.karpenter is not None and self.eks_cluster is not None:
            self.karpenter = Karpenter("karpenter", plan, plan.karpenter, self.eks_cluster.access,
                                       self.eks_cluster.cluster_ready, opts=kopts)
        # The data path (docs/data-path.md): team buckets and roles, file systems, the storage add-ons.
        self.storage: Storage | None = None
        d = plan.data
        if d is not None and self.eks_cluster is not None and (d.enabled or d.addons):
            self.storage = Storage("storage", plan, d, self.eks_cluster.access, self.eks_cluster.cluster_ready,
                                   self.tenancy.namespaces, opts=kopts)
        # The Cluster Autoscaler last: its credentials come through the Pod Identity agent, which Karpenter's
        # controller or the data path may be the one to manage (the plan decides which).
        self.autoscaler: ClusterAutoscaler | None = None
        if ca is not None and self.eks_cluster is not None:
            agents = [a for a in (self.karpenter.pod_identity_agent if self.karpenter else None,
                                  self.storage.agent if self.storage else None) if a is not None]
            groups = {cv.node_group_name(plan.cluster.name, n): p.autoscaling_group_name
                      for n, p in self.eks_cluster.pools.items()}
            self.autoscaler = ClusterAutoscaler(
                "cluster-autoscaler", plan, ca, self.eks_cluster.access, self.eks_cluster.cluster_ready, groups,
                after=[*agents, *([self.provisioning_crd] if self.provisioning_crd else [])], opts=kopts)
        self.register_outputs({})

    def exports(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "environment": self.plan.environment,
            "cluster": self.plan.cluster.name,
            "pools": {p.name: {"capacityUnits": p.capacity_units, "resource": p.resource_name} for p in self.plan.pools},
            "teams": {t.name: {"namespaces": list(t.namespaces), "clusterQueue": t.cluster_queue} for t in self.plan.teams},
        }
        for part in (self.network, self.eks_cluster, self.ci, self.operator, self.queues, self.tenancy, self.monitoring,
                     self.admission,
                     self.efa, self.karpenter, self.storage, self.workload_controllers, self.autoscaler,
                     self.observability):
            if part is not None:
                out.update(part.exports())
        return out
