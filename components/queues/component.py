"""Queues: the component that registers everything Kueue for one plan, in dependency order.

The controller first (its release brings the CRDs and webhooks), then priorities, Topology, flavors,
cohorts (parents before children), MultiKueue and one ClusterQueue per team. Tenancy creates each team's
LocalQueue (conventions.LOCAL_QUEUE_NAME) pointing at `cluster_queues[team]` and waits on `ready`.
"""

from __future__ import annotations

from typing import Any, Sequence

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform import conventions as cv
from gpu_platform.plan import Plan

from .controller import controller
from ..kube_object import KubeObject, object_metadata
from .multikueue import multikueue_manager, multikueue_worker
from .objects import (
    cluster_queue, cohort, cpu_only_flavor, provisioning_admission_check, provisioning_request_config, resource_flavor,
    topology,
)

PRIORITY_CLASS_PREEMPTION = "PreemptLowerPriority"


class Queues(pulumi.ComponentResource):
    """Everything Kueue for one plan. `cluster_queues` and `ready` are what tenancy builds on."""

    cluster_queues: dict[str, pulumi.Resource]
    ready: list[pulumi.Resource]

    def __init__(self, name: str, plan: Plan, opts: pulumi.ResourceOptions | None = None,
                 controller_after: Sequence[pulumi.Resource] = ()):
        super().__init__("gpu-platform:queues:Queues", name, None, opts)
        self.plan = plan
        self.installed = plan.addons.kueue.install
        self.ready = []
        self.namespace: k8s.core.v1.Namespace | None = None
        self.release: k8s.helm.v3.Release | None = None
        if self.installed:
            self.namespace, self.release = controller(self, plan, after=controller_after)
            self.ready = [self.release]

        # Kubernetes PriorityClasses are core objects: they need no Kueue and are made regardless.
        self.priority_classes: dict[str, pulumi.Resource] = {}
        self.workload_priority_classes: dict[str, pulumi.Resource] = {}
        for pr in plan.priorities:
            self.priority_classes[pr.name] = k8s.scheduling.v1.PriorityClass(
                f"kueue-priorityclass-{pr.name}",
                metadata=object_metadata(pr.class_name),
                value=pr.value,
                description=pr.description,
                global_default=False,
                preemption_policy=PRIORITY_CLASS_PREEMPTION,
                opts=pulumi.ResourceOptions(parent=self),
            )
            self.workload_priority_classes[pr.name] = KubeObject(
                f"kueue-wpc-{pr.name}",
                {
                    "apiVersion": cv.KUEUE_API_VERSION,
                    "kind": "WorkloadPriorityClass",
                    "metadata": object_metadata(pr.class_name),
                    "value": pr.value,
                    "description": pr.description,
                },
                opts=self._after(),
            )

        self.topology: pulumi.Resource | None = None
        if any(p.topology for p in plan.pools):
            self.topology = KubeObject("kueue-topology", topology(), opts=self._after())
        self.flavors: dict[str, pulumi.Resource] = {
            cv.CPU_FLAVOR: KubeObject(f"kueue-flavor-{cv.CPU_FLAVOR}", cpu_only_flavor(), opts=self._after()),
        }
        for pool in plan.pools:
            self.flavors[pool.flavor] = KubeObject(
                f"kueue-flavor-{pool.flavor}",
                resource_flavor(pool),
                opts=self._after(self.topology if pool.topology else None),
            )

        # Parents before children, so a child never points at a cohort that does not exist yet.
        self.cohorts: dict[str, pulumi.Resource] = {}
        pending = list(plan.cohorts)
        while pending:
            ready = [c for c in pending if c.parent is None or c.parent in self.cohorts]
            if not ready:  # the spec rejects unknown parents and cycles; never loop on a bad plan
                raise ValueError(f"cohorts without a resolvable parent: {[c.name for c in pending]}")
            for c in ready:
                self.cohorts[c.name] = KubeObject(
                    f"kueue-cohort-{c.name}",
                    cohort(c.name, c.parent, c.fair_sharing_weight),
                    opts=self._after(self.cohorts.get(c.parent) if c.parent else None),
                )
                pending.remove(c)

        self.admission_checks: list[str] = []
        # Kueue's ProvisioningRequest check and its config, when the plan gives the pools an autoscaler that
        # implements ProvisioningRequest (gpu_platform/plan/autoscaling.py plan_provisioning); the ClusterQueues
        # name it on those pools' flavors (objects.cluster_queue).
        self.provisioning: dict[str, pulumi.Resource] = {}
        if plan.provisioning.enabled:
            config = KubeObject(f"kueue-prc-{plan.provisioning.config}", provisioning_request_config(plan.provisioning),
                                 opts=self._after())
            self.provisioning = {
                "config": config,
                "admission-check": KubeObject(f"kueue-ac-{plan.provisioning.admission_check}",
                                               provisioning_admission_check(plan.provisioning), opts=self._after(config)),
            }
        self.multikueue: dict[str, pulumi.Resource] = {}
        self.multikueue_worker: dict[str, pulumi.Resource] = {}
        if plan.multikueue_manager:
            self.multikueue = multikueue_manager(self, plan, self.ready, self.namespace, self._after)
            self.admission_checks = [cv.MULTIKUEUE_NAME]
        elif plan.multikueue_worker:
            self.multikueue_worker = multikueue_worker(self, plan, self.ready, self.namespace)

        self.cluster_queues = {}
        for team in plan.teams:
            deps: list[pulumi.Resource | None] = [self.flavors[cv.CPU_FLAVOR], *(self.flavors[q.flavor] for q in team.quotas)]
            deps.append(self.cohorts.get(team.cohort) if team.cohort else None)
            deps.append(self.multikueue.get("admission-check"))
            if plan.provisioning.team_flavors([q.flavor for q in team.quotas]):
                deps.append(self.provisioning.get("admission-check"))
            self.cluster_queues[team.name] = KubeObject(
                f"kueue-cq-{team.name}",
                cluster_queue(team, plan, self.admission_checks),
                opts=self._after(*deps),
            )
        self.register_outputs({})

    def _after(self, *extra: pulumi.Resource | None) -> pulumi.ResourceOptions:
        """Child options for a Kueue object: after the controller (CRDs, webhooks) and `extra`."""
        return pulumi.ResourceOptions(parent=self, depends_on=[*self.ready, *(r for r in extra if r is not None)])

    def exports(self) -> dict[str, Any]:
        return {
            "kueue": {
                "installed": self.installed,
                "version": self.plan.addons.kueue.version if self.installed else None,
                "namespace": cv.KUEUE_NAMESPACE,
                "localQueue": cv.LOCAL_QUEUE_NAME,
                "clusterQueues": {t.name: t.cluster_queue for t in self.plan.teams},
                "flavors": [p.flavor for p in self.plan.pools],
                "priorityClasses": {p.name: p.class_name for p in self.plan.priorities},
                "multiKueueWorkers": ([w.name for w in self.plan.addons.multikueue_workers]
                                      if self.plan.multikueue_manager else []),
                "multiKueueRole": self.plan.multikueue_role,
                "provisioningRequest": ({"admissionCheck": self.plan.provisioning.admission_check,
                                         "flavors": list(self.plan.provisioning.flavors)}
                                        if self.plan.provisioning.enabled else None),
                **({"multiKueueWorkerToken": {"namespace": cv.KUEUE_NAMESPACE,
                                              "secret": cv.MULTIKUEUE_WORKER_TOKEN_SECRET}}
                   if self.plan.multikueue_worker else {}),
            }
        }
