"""WorkloadControllers: the JobSet, Kubeflow Trainer, LeaderWorkerSet and KubeRay releases.

Each installed controller the plan marks `deploy` (eks stacks) gets a platform namespace (restricted Pod Security,
platform admins only) and its upstream Helm chart with the values gpu_platform/workload_controllers.py writes.
Trainer's release waits on JobSet's: its controller watches JobSets and its chart's runtimes run on them. On an
existing cluster nothing is deployed: the plan says which controllers the cluster is expected to run.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform import conventions as cv
from gpu_platform.plan import Plan

from .platform_namespace import platform_namespace


class WorkloadControllers(pulumi.ComponentResource):
    """One namespace and Helm release per deployed controller; `releases` by key (workload_controllers.KEYS)."""

    releases: dict[str, k8s.helm.v3.Release]

    def __init__(self, name: str, plan: Plan, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:workloads:WorkloadControllers", name, None, opts)
        self.plan = plan
        self.releases = {}
        for c in plan.workload_controllers:
            if not c.deploy:
                continue
            ctl = c.controller
            # Every chart's pods meet the restricted profile with the values written for them.
            namespace, _ = platform_namespace(self, plan, ctl.namespace, ctl.release, enforce=cv.PSA_RESTRICTED,
                                              warn_audit=cv.PSA_RESTRICTED, logical_name=f"{ctl.release}-namespace")
            deps: list[pulumi.Resource] = [namespace, *(self.releases[r] for r in ctl.requires if r in self.releases)]
            self.releases[ctl.key] = k8s.helm.v3.Release(
                ctl.release,
                name=ctl.release,
                chart=ctl.chart,
                version=c.version,
                repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=ctl.repository) if ctl.repository else None,
                namespace=ctl.namespace,
                create_namespace=False,
                values=dict(c.values),
                opts=pulumi.ResourceOptions(parent=self, depends_on=deps),
            )
        self.register_outputs({})

    def exports(self) -> dict[str, Any]:
        return {"workloadControllers": {
            c.key: {"namespace": c.namespace, "version": c.version, "deployed": c.deploy,
                    "frameworks": list(c.controller.frameworks)}
            for c in self.plan.workload_controllers
        }}


