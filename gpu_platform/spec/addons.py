"""`addons`: which cluster add-ons the platform installs, at which exact chart versions."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from .. import conventions as cv, workload_controllers as wc
from .fields import Strict, exact_version
from .limits import CLUSTER_AUTOSCALER_IMAGE_TAG, GO_DURATION, KARPENTER_MINOR, VPC_CNI_MIN_NETWORK_POLICY
# The observability layer's model has a module of its own (its modes, receivers and sizes).
from .monitoring import AddonMonitoring


class AddonGpuOperator(Strict):
    install: bool = Field(
        default=True,
        description="Helm release of the NVIDIA GPU Operator (its namespace and ConfigMaps are made either way)",
        examples=[True],
    )
    version: str = Field(
        default="v26.7.0",
        description=(
            "exact chart version: MAJOR.MINOR.PATCH, optional leading v and -prerelease; latest and "
            "ranges are rejected"
        ),
        examples=["v26.7.0"],
    )

    _version = field_validator("version")(lambda v: exact_version(v))
    # On EKS NVIDIA AMIs the driver and container toolkit ship in the image; elsewhere they may not.
    driver: bool = Field(
        default=False,
        description="let the operator install the NVIDIA driver (off on EKS NVIDIA AMIs, which ship it)",
        examples=[False],
    )
    toolkit: bool = Field(
        default=False,
        description="let the operator install the container toolkit (off on EKS NVIDIA AMIs, which ship it)",
        examples=[False],
    )


class AddonKueue(Strict):
    install: bool = Field(default=True, description="Helm release of Kueue", examples=[True])
    version: str = Field(
        default="0.19.2",
        description="exact Kueue chart version (as for gpuOperator.version)",
        examples=["0.19.2"],
    )
    integrations: list[str] = Field(
        default_factory=lambda: wc.default_frameworks({}),
        description=(
            "Kueue framework integrations to enable. Unset: batch/job, pod and deployment plus the frameworks of "
            "every installed workload controller (jobset, trainer, leaderWorkerSet, kuberay). A framework whose "
            "controller the platform installs but this stack does not is refused, never left for Kueue to wait "
            "on its CRD; one no platform add-on installs is warned about"
        ),
        examples=[["batch/job", "jobset.x-k8s.io/jobset", "pod"]],
    )

    requeueLimit: int = Field(
        default=10,
        ge=0,
        description=(
            "how many times Kueue requeues a job whose pods were not all Ready in time, over the job's life: "
            "after admission (waitForPodsReady.timeout) or after it lost a pod, to a failed node for example "
            "(recoveryTimeout). One more and the workload is deactivated (Evicted reason "
            "DeactivatedDueToRequeuingLimitExceeded) instead of cycling forever; 0 deactivates at the first. "
            "Kueue's waitForPodsReady.requeuingStrategy.backoffLimitCount"
        ),
        examples=[10],
    )

    _version = field_validator("version")(lambda v: exact_version(v))


class AddonVpcCni(Strict):
    """The EKS `vpc-cni` add-on, managed so that its network policy agent is on: the VPC CNI enforces no
    NetworkPolicy until `enableNetworkPolicy` is set, and the tenants' default-deny would do nothing."""

    manage: bool = Field(
        default=True,
        description=(
            "eks stacks: manage the cluster's vpc-cni EKS add-on with enableNetworkPolicy on. An add-on "
            "that already exists on an attached cluster must be imported into the stack first (README)."
        ),
        examples=[True],
    )
    version: str | None = Field(
        default=None,
        description=(
            "exact add-on version (v1.20.1-eksbuild.3 style, at least v1.14.0); none keeps the version "
            "EKS installed or picks for the cluster's Kubernetes version"
        ),
        examples=["v1.20.1-eksbuild.3"],
    )

    @field_validator("version")
    @classmethod
    def _version(cls, v: str | None) -> str | None:
        if v is None:
            return v
        m = cv.EKS_ADDON_VERSION.match(v)
        if not m:
            raise ValueError(f"{v!r} is not an EKS add-on version: write vMAJOR.MINOR.PATCH-eksbuild.N, e.g. v1.20.1-eksbuild.3")
        if tuple(int(x) for x in m.groups()) < VPC_CNI_MIN_NETWORK_POLICY:
            raise ValueError(f"{v!r} cannot enforce NetworkPolicy: the VPC CNI does from v1.14.0 on")
        return v


class AddonNodeMonitoringAgent(Strict):
    """The EKS node monitoring agent add-on: it turns GPU, kernel, network, storage and runtime faults found in
    a node's logs and in DCGM into node conditions (AcceleratedHardwareReady for GPUs, with the XID in the
    reason) that managed node group repair and Karpenter's node repair act on; without it they see Ready only
    (EKS user guide, node-health-nma.html; aws/eks-node-monitoring-agent docs/node-health-issues.adoc)."""

    manage: bool = Field(
        default=True,
        description=(
            "eks stacks: manage the eks-node-monitoring-agent EKS add-on. An add-on that already exists on an "
            "attached cluster must be imported into the stack first, like vpc-cni"
        ),
        examples=[True],
    )
    # The add-on versions are the agent's image tags (vMAJOR.MINOR.PATCH-eksbuild.N); v1.7.0-eksbuild.1 is the
    # tag the agent's own chart ships at its v1.7.0 release (aws/eks-node-monitoring-agent v1.7.0,
    # charts/eks-node-monitoring-agent/values.yaml nodeAgent.image.tag).
    version: str = Field(
        default="v1.7.0-eksbuild.1",
        description="exact add-on version (v1.7.0-eksbuild.1 style); `aws eks describe-addon-versions "
                    "--addon-name eks-node-monitoring-agent` lists them",
        examples=["v1.7.0-eksbuild.1"],
    )

    @field_validator("version")
    @classmethod
    def _version(cls, v: str) -> str:
        if not cv.EKS_ADDON_VERSION.match(v):
            raise ValueError(f"{v!r} is not an EKS add-on version: write vMAJOR.MINOR.PATCH-eksbuild.N, e.g. v1.7.0-eksbuild.1")
        return v


class AddonEfaDevicePlugin(Strict):
    """The AWS EFA Kubernetes device plugin: the EKS NVIDIA AMIs carry the EFA driver but do not run the
    plugin, so without it no node advertises `vpc.amazonaws.com/efa` and NCCL falls back to TCP."""

    install: bool = Field(default=True, description="Helm release on clusters with an EFA pool", examples=[True])
    version: str = Field(
        default="v0.5.30",
        description="exact aws-efa-k8s-device-plugin chart version",
        examples=["v0.5.30"],
    )

    _version = field_validator("version")(lambda v: exact_version(v))


class AddonKarpenter(Strict):
    """Karpenter's controller, made when a pool has `provisioner: karpenter`: its Helm releases (CRDs and
    controller), its IAM through EKS Pod Identity, the nodes' IAM role and access entry, and the SQS
    interruption queue with its EventBridge rules."""

    version: str = Field(
        default="1.15.2",
        description=(
            "exact karpenter and karpenter-crd chart version (1.15.x: the NodePool and EC2NodeClass "
            "fields rendered here are Karpenter 1.15's)"
        ),
        examples=["1.15.2"],
    )
    interruptionQueue: bool = Field(
        default=True,
        description=(
            "an SQS queue and EventBridge rules so Karpenter drains nodes before spot interruptions, "
            "scheduled maintenance and capacity reservation interruptions"
        ),
        examples=[True],
    )
    managePodIdentityAgent: bool = Field(
        default=True,
        description=(
            "manage the eks-pod-identity-agent EKS add-on the controller's credentials come through (an "
            "existing add-on on an attached cluster must be imported first, like vpc-cni)"
        ),
        examples=[True],
    )

    _version = field_validator("version")(lambda v: exact_version(v))

    @field_validator("version")
    @classmethod
    def _minor(cls, v: str) -> str:
        if v.lstrip("v").split(".")[:2] != list(KARPENTER_MINOR):
            raise ValueError(f"{v!r} is not a Karpenter {'.'.join(KARPENTER_MINOR)}.x release: the NodePools and "
                             "EC2NodeClasses are rendered for that API (networkInterfaces, capacityReservationSelectorTerms)")
        return v


class AddonClusterAutoscaler(Strict):
    """The Kubernetes Cluster Autoscaler on `eks` clusters: it scales the elastic managed node groups (pools of
    capacity type on-demand or spot) between capacity.min and capacity.max, from zero too, and asks for a
    multi-node job's nodes in one request before Kueue admits it (ProvisioningRequest; on AWS one non-atomic
    increase, marked provisioned before the nodes exist). Reserved pools run their reservation and Karpenter
    pools stay Karpenter's: it never touches either."""

    install: bool = Field(
        default=True,
        description=(
            "eks: the autoscaler's Helm release, its IAM role (EKS Pod Identity) and the ProvisioningRequest CRD; "
            "without it nothing scales the elastic node groups"
        ),
        examples=[True],
    )
    # Chart 9.51.0 is the last release of the chart whose appVersion is 1.33.0 (kubernetes/autoscaler, tag
    # cluster-autoscaler-chart-9.51.0, charts/cluster-autoscaler/Chart.yaml); 9.52.0 moves to 1.34.1.
    version: str = Field(
        default="9.51.0",
        description="exact cluster-autoscaler chart version (https://kubernetes.github.io/autoscaler)",
        examples=["9.51.0"],
    )
    # v1.33.6 is the newest 1.33 release, with two ProvisioningRequest fixes over the chart's v1.33.0 (git log
    # cluster-autoscaler-1.33.0..cluster-autoscaler-1.33.6: "Apply Provisioned condition with SSA", "use
    # application/json for ProvisioningRequest client").
    imageTag: str = Field(
        default="v1.33.6",
        description=(
            "the autoscaler release the chart runs (vMAJOR.MINOR.PATCH); its minor must be "
            "cluster.kubernetesVersion's, as the autoscaler is built for one Kubernetes minor"
        ),
        examples=["v1.33.6"],
    )
    scaleDownUnneededTime: str = Field(
        default="10m",
        description=(
            "how long an elastic node stays unneeded (no pod but daemons) before it is removed (a Go duration); "
            "the idle time a pool pays for after its last job"
        ),
        examples=["10m"],
    )
    scaleDownDelayAfterAdd: str = Field(
        default="10m",
        description="how long after a scale-up no node is removed (a Go duration)",
        examples=["10m"],
    )
    maxNodeProvisionTime: str = Field(
        default="15m",
        description=(
            "how long a requested node may take to register before the autoscaler gives it up and tries "
            "again (a Go duration); GPU nodes boot and pull large images, so not much shorter. With the 15 "
            "minutes a node's GPUs may take after it is Ready, it sets how often Kueue retries a job's "
            "ProvisioningRequest (retryStrategy.backoffLimitCount: 5 at 15m)"
        ),
        examples=["15m"],
    )
    provisioningRequests: bool = Field(
        default=True,
        description=(
            "ProvisioningRequest support in the autoscaler, and Kueue's ProvisioningRequest admission check "
            "(best-effort-atomic-scale-up) on the ClusterQueues of the pools it scales: a job is admitted once "
            "all its nodes are requested in one request (on AWS not atomic, and provisioned before the nodes "
            "exist: a topology-aware job then waits for them to be Ready), and a topology-aware pool can start "
            "at min 0"
        ),
        examples=[True],
    )
    managePodIdentityAgent: bool = Field(
        default=True,
        description=(
            "manage the eks-pod-identity-agent EKS add-on the autoscaler's credentials come through, unless the "
            "stack has Karpenter's controller or the data path, whose settings own the add-on then (an existing "
            "add-on on an attached cluster must be imported first, like vpc-cni)"
        ),
        examples=[True],
    )

    _version = field_validator("version")(lambda v: exact_version(v))

    @field_validator("imageTag")
    @classmethod
    def _image_tag(cls, v: str) -> str:
        if not CLUSTER_AUTOSCALER_IMAGE_TAG.match(v):
            raise ValueError(f"{v!r} is not a Cluster Autoscaler release: write vMAJOR.MINOR.PATCH, e.g. v1.33.6")
        return v

    @field_validator("scaleDownUnneededTime", "scaleDownDelayAfterAdd", "maxNodeProvisionTime")
    @classmethod
    def _duration(cls, v: str) -> str:
        if not GO_DURATION.match(v):
            raise ValueError(f"{v!r} is not a Go duration such as 30s, 10m or 1h30m")
        return v


class _WorkloadController(Strict):
    """A workload controller (gpu_platform/workload_controllers.py): eks stacks deploy its upstream chart on the
    system pool; on an existing cluster `install: true` says the cluster runs it (the stack deploys nothing)."""

    _version = field_validator("version", check_fields=False)(lambda v: exact_version(v))


def _install(title: str, kinds: str) -> Any:
    return Field(
        default=True,
        description=(
            f"the platform runs {title} ({kinds}): eks stacks deploy its Helm chart on the system pool; on an "
            "existing cluster it must already run there. Kueue's integrations follow it"
        ),
        examples=[True],
    )


def _version_field(key: str) -> Any:
    c = wc.CONTROLLERS[key]
    return Field(
        default=c.default_version,
        description=f"exact {c.title} chart version ({c.chart}); the controller image is the same release",
        examples=[c.default_version],
    )


class AddonJobSet(_WorkloadController):
    install: bool = _install("JobSet", "JobSet: multi-node training as groups of Jobs")
    version: str = _version_field(wc.JOBSET)


class AddonTrainer(_WorkloadController):
    install: bool = _install("Kubeflow Trainer v2", "TrainJob and the torch-distributed runtime; runs on JobSet")
    version: str = _version_field(wc.TRAINER)


class AddonLeaderWorkerSet(_WorkloadController):
    install: bool = _install("LeaderWorkerSet", "LeaderWorkerSet: multi-node inference groups")
    version: str = _version_field(wc.LWS)


class AddonKubeRay(_WorkloadController):
    install: bool = _install("the KubeRay operator", "RayJob, RayCluster")
    version: str = _version_field(wc.KUBERAY)


class Addons(Strict):
    gpuOperator: AddonGpuOperator = Field(
        default_factory=AddonGpuOperator,
        description="the NVIDIA GPU Operator",
        examples=[{"install": True, "version": "v26.7.0"}],
    )
    kueue: AddonKueue = Field(
        default_factory=AddonKueue,
        description="Kueue, the job queueing controller",
        examples=[{"install": True, "version": "0.19.2"}],
    )
    monitoring: AddonMonitoring = Field(
        default_factory=AddonMonitoring,
        description=(
            "DCGM ServiceMonitors, PrometheusRules and Grafana dashboards, and the monitoring stack they need: "
            "installed by someone else (mode external), kube-prometheus-stack (in-cluster) or Amazon Managed "
            "Service for Prometheus (managed)"
        ),
        examples=[{"install": True, "mode": "in-cluster"}],
    )
    efaDevicePlugin: AddonEfaDevicePlugin = Field(
        default_factory=AddonEfaDevicePlugin,
        description="the AWS EFA device plugin, on clusters with an EFA pool",
        examples=[{"install": True, "version": "v0.5.30"}],
    )
    vpcCni: AddonVpcCni = Field(
        default_factory=AddonVpcCni,
        description="eks: the vpc-cni add-on, with NetworkPolicy enforcement on",
        examples=[{"manage": True}],
    )
    nodeMonitoringAgent: AddonNodeMonitoringAgent = Field(
        default_factory=AddonNodeMonitoringAgent,
        description="eks: the node monitoring agent add-on, whose node conditions node repair acts on",
        examples=[{"manage": True, "version": "v1.7.0-eksbuild.1"}],
    )
    karpenter: AddonKarpenter = Field(
        default_factory=AddonKarpenter,
        description="eks stacks with a `provisioner: karpenter` pool: the Karpenter controller",
        examples=[{"version": "1.15.2"}],
    )
    clusterAutoscaler: AddonClusterAutoscaler = Field(
        default_factory=AddonClusterAutoscaler,
        description="eks: the Cluster Autoscaler, which scales the elastic managed node groups and provisions jobs' nodes",
        examples=[{"install": True, "version": "9.51.0", "imageTag": "v1.33.6"}],
    )
    jobset: AddonJobSet = Field(
        default_factory=AddonJobSet,
        description="the JobSet controller (JobSet; Kubeflow Trainer runs on it)",
        examples=[{"install": True, "version": "0.10.1"}],
    )
    trainer: AddonTrainer = Field(
        default_factory=AddonTrainer,
        description="Kubeflow Trainer v2 (TrainJob, the torch-distributed runtime); needs jobset",
        examples=[{"install": True, "version": "2.2.1"}],
    )
    leaderWorkerSet: AddonLeaderWorkerSet = Field(
        default_factory=AddonLeaderWorkerSet,
        description="the LeaderWorkerSet controller (multi-node inference)",
        examples=[{"install": True, "version": "0.7.0"}],
    )
    kuberay: AddonKubeRay = Field(
        default_factory=AddonKubeRay,
        description="the KubeRay operator (RayJob, RayCluster)",
        examples=[{"install": True, "version": "1.5.0"}],
    )

    @model_validator(mode="before")
    @classmethod
    def _integrations_follow_controllers(cls, data: Any) -> Any:
        """Unset Kueue integrations are the built-in kinds plus the installed controllers' frameworks, so turning
        a controller off turns its integration off with it (and a stale default never refers to it)."""
        if not isinstance(data, dict):
            return data
        kueue = data.get("kueue", {})
        if not isinstance(kueue, dict) or "integrations" in kueue:
            return data
        installed = {}
        for key in wc.KEYS:
            addon = data.get(key, {})
            install = addon.get("install", True) if isinstance(addon, dict) else True
            installed[key] = install if isinstance(install, bool) else True
        return {**data, "kueue": {**kueue, "integrations": wc.default_frameworks(installed)}}
