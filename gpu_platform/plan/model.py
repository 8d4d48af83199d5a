"""The whole plan: every number and name the components need, computed once from a validated spec.

Components translate a Plan into resources and never re-derive a quota, a label or a price, so the
CLI's `plan` output, the rendered resources and the policy pack always agree. The Plan does not carry the
spec: what a component needs is a field here (tests/unit/test_layers.py holds the components to it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from .. import conventions as cv, workload_controllers as wc
from .autoscaling import ClusterAutoscalerPlan, ProvisioningPlan
from ..data import DataPlan
from ..karpenter import KarpenterPlan
from ..spec import JOB_TERMINATION_GRACE_SECONDS_DEFAULT
from .addons import AddonsPlan
from .cluster import ClusterPlan
from .pools import PoolPlan
from .teams import CohortPlan, PriorityPlan, TeamPlan


@dataclass(frozen=True, slots=True)
class Plan:
    environment: str
    region: str | None
    cluster: ClusterPlan
    pools: tuple[PoolPlan, ...]
    teams: tuple[TeamPlan, ...]
    cohorts: tuple[CohortPlan, ...]
    priorities: tuple[PriorityPlan, ...]
    mig_strategy: str
    # The add-ons and the MultiKueue workers (addons.py): components read these, never the spec.
    addons: AddonsPlan
    # Pool name -> the teams' nominal quotas on it (pool_derivations.pool_nominal_units); no key: no team quota.
    nominal_units: Mapping[str, int] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    # The stack's MultiKueue side (stack config gpu-platform:multiKueueRole): manager or worker.
    multikueue_role: str = "manager"

    @property
    def multikueue_manager(self) -> bool:
        """Dispatches to workers: the spec lists them and this stack is not deployed as a worker."""
        return self.multikueue_role == "manager" and bool(self.addons.multikueue_workers)

    @property
    def multikueue_worker(self) -> bool:
        return self.multikueue_role == "worker"
    # images.allowedRegistries (the platform's own images come from these too) and requireDigests.
    image_registries: tuple[str, ...] = ()
    require_image_digests: bool = False
    # jobs.ttlSecondsAfterFinished (the job template, Kueue's deactivated-job retention) and the admission maximum.
    job_ttl_seconds: int = 0
    job_max_ttl_seconds: int = 0
    # jobs.terminationGracePeriodSeconds: SIGTERM to SIGKILL for the job template's pods.
    job_termination_grace_seconds: int = JOB_TERMINATION_GRACE_SECONDS_DEFAULT
    # addons.kueue.requeueLimit: Kueue requeues a job whose pods were not all Ready in time this many times over
    # its life, then deactivates it (waitForPodsReady.requeuingStrategy.backoffLimitCount).
    kueue_requeue_limit: int = 10
    # Karpenter's controller, when a pool of an eks cluster is a Karpenter pool.
    karpenter: KarpenterPlan | None = None
    # The data path (spec `data`, gpu_platform/data.py): team buckets and roles, file systems, storage add-ons.
    data: DataPlan | None = None
    # Kueue's integrations.frameworks as Kueue runs them (addons.kueue.integrations, with `pod` where Kueue
    # implies it: workload_controllers.effective_frameworks). Components read this, not the spec.
    kueue_integrations: tuple[str, ...] = ()
    # The installed workload controllers, deployed from their charts on eks stacks.
    workload_controllers: tuple[wc.WorkloadControllerPlan, ...] = ()

    def workload_controller(self, key: str) -> wc.WorkloadControllerPlan | None:
        """The installed controller `key` (workload_controllers.KEYS), or None."""
        return next((c for c in self.workload_controllers if c.key == key), None)

    @property
    def uses_kuberay(self) -> bool:
        """A KubeRay kind is queued, so KubeRay's operator must reach Ray heads through the tenants' default deny."""
        return cv.uses_kuberay(self.kueue_integrations)
    # The Cluster Autoscaler (eks, addons.clusterAutoscaler) and Kueue's ProvisioningRequest check (autoscaling.py).
    cluster_autoscaler: ClusterAutoscalerPlan | None = None
    provisioning: ProvisioningPlan = ProvisioningPlan(enabled=False, reason="not planned")

    @property
    def managed_node_group_pools(self) -> tuple[PoolPlan, ...]:
        return tuple(p for p in self.pools if p.provisioner == cv.PROVISIONER_MANAGED_NODE_GROUP)

    @property
    def karpenter_pools(self) -> tuple[PoolPlan, ...]:
        return tuple(p for p in self.pools if p.karpenter is not None)

    @property
    def pools_by_name(self) -> dict[str, PoolPlan]:
        return {p.name: p for p in self.pools}

    @property
    def efa_pools(self) -> tuple[PoolPlan, ...]:
        return tuple(p for p in self.pools if p.efa_interfaces)

    @property
    def installs_efa_device_plugin(self) -> bool:
        """The EFA device plugin is installed when a pool has EFA interfaces: its nodes advertise
        `vpc.amazonaws.com/efa` only through the plugin (addons.efaDevicePlugin.install)."""
        return bool(self.efa_pools) and self.addons.efa_device_plugin.install

    @property
    def gpu_resource_names(self) -> tuple[str, ...]:
        """Every schedulable GPU resource name the pools advertise, in a stable order."""
        return tuple(sorted({p.resource_name for p in self.pools}))

    @property
    def psa_version(self) -> str:
        return f"v{self.cluster.kubernetes_version}"

    @property
    def usd_per_hour_min(self) -> float:
        return round(sum(p.usd_per_hour_min for p in self.pools), 2)

    @property
    def usd_per_hour_max(self) -> float:
        return round(sum(p.usd_per_hour_max for p in self.pools), 2)

    def allocated_units(self, pool: str) -> int:
        return self.nominal_units.get(pool, 0)

    @property
    def platform_tags(self) -> dict[str, str]:
        """AWS tags on everything the platform creates in the cloud: who manages it, which environment and cluster."""
        return {
            cv.TAG_PLATFORM: cv.MANAGED_BY_VALUE,
            cv.TAG_ENVIRONMENT: self.environment,
            cv.TAG_CLUSTER: self.cluster.name,
        }

    def pool_tags(self, pool: PoolPlan) -> dict[str, str]:
        """AWS tags of a pool's resources: the pool's node labels become cost-allocation tags under the same
        keys, so a bill splits by accelerator, workload and sharing exactly like the scheduler does."""
        return {**pool.labels, **self.platform_tags}
