"""TenantStack: a split environment's tenant stack, its team group's namespaces beside a platform stack.

It reads the platform stack by StackReference and refuses to deploy a team whose ClusterQueue the platform
stack does not export: a LocalQueue pointing at no ClusterQueue would be inactive and its team's jobs would
never be admitted. Its LocalQueues wait for the reference, which is what the whole stack's LocalQueues get
from waiting on the Kueue release and the ClusterQueues: the platform stack is deployed first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi

from gpu_platform.plan import Plan
from gpu_platform.stack_split import StackPart

from .platform import KubeAccess, force_apply, kube_provider
from .tenancy import Tenancy


@dataclass(frozen=True)
class PlatformQueues:
    """What Tenancy waits on before it makes LocalQueues; in a tenant stack, the platform stack's reference."""

    ready: list[pulumi.Resource]
    cluster_queues: dict[str, pulumi.Resource] = field(default_factory=dict)


def missing_cluster_queues(plan: Plan, kueue_export: Any) -> list[str]:
    """Teams of `plan` whose ClusterQueue the platform stack's `kueue` export does not list under that name."""
    listed = (kueue_export or {}).get("clusterQueues") or {}
    return [t.name for t in plan.teams if listed.get(t.name) != t.cluster_queue]


class TenantStack(pulumi.ComponentResource):
    def __init__(self, name: str, plan: Plan, part: StackPart, kube: KubeAccess,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:index:TenantStack", name, None, opts)
        self.plan = plan
        assert part.platform_stack is not None
        self.platform = pulumi.StackReference(part.platform_stack, opts=pulumi.ResourceOptions(parent=self))

        def check(kueue: Any) -> Any:
            missing = missing_cluster_queues(plan, kueue)
            if missing:
                raise pulumi.RunError(
                    f"platform stack {part.platform_stack} exports no ClusterQueue for team(s) {', '.join(missing)} "
                    "(kueue.clusterQueues): run `pulumi up` on the platform stack first")
            return kueue

        self.platform_kueue = self.platform.get_output("kueue").apply(check)
        # eks with a created cluster: the platform stack's kubeconfig, unless this stack's config gives one.
        kubeconfig = kube.kubeconfig
        if kubeconfig is None and plan.cluster.provider == "eks" and plan.cluster.create:
            kubeconfig = self.platform.get_output("kubeconfig")
        self.k8s = kube_provider(kube, kubeconfig, pulumi.ResourceOptions(parent=self))
        kopts = pulumi.ResourceOptions(parent=self, providers={"kubernetes": self.k8s}, transformations=[force_apply])
        self.tenancy = Tenancy("tenancy", plan, PlatformQueues(ready=[self.platform]), opts=kopts, cluster_roles=False)
        self.register_outputs({})

    def exports(self) -> dict[str, Any]:
        return {
            "environment": self.plan.environment,
            "cluster": self.plan.cluster.name,
            "teams": {t.name: {"namespaces": list(t.namespaces), "clusterQueue": t.cluster_queue} for t in self.plan.teams},
            "platformKueue": self.platform_kueue.apply(lambda k: {"clusterQueues": {
                t.name: (k or {}).get("clusterQueues", {}).get(t.name) for t in self.plan.teams}}),
            **self.tenancy.exports(),
        }
