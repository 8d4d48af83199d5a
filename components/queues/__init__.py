"""Kueue: the controller (Helm release), ResourceFlavors, Topology, Cohorts, ClusterQueues, priorities, MultiKueue.

Quotas, flavors, labels and names all come from the plan; these modules only shape them into Kueue `v1beta2`
objects: the objects as dicts (objects; they are registered as components.kube_object.KubeObject), the controller's
release (controller), MultiKueue (multikueue) and the component (component). The controller's Configuration
and the chart values come from gpu_platform.kueue_config, which the live local cluster's Kueue process reads
too. Field names and rules are those of Kueue 0.19 (reference CRDs in ../shared/crds/kueue-v0.19.2, the
controller's Configuration type apis/config/v1beta2/configuration_types.go, the ClusterQueue webhook
pkg/webhooks/clusterqueue_webhook.go, all at tag v0.19.2 of github.com/kubernetes-sigs/kueue).
"""

from __future__ import annotations

from .component import Queues
from .multikueue import multikueue_worker_rules
from .objects import (
    canonical_quantity, cluster_queue, cohort, covered_resources, cpu_only_flavor, resource_flavor, resource_groups, topology,
)

__all__ = [
    "Queues", "canonical_quantity", "cluster_queue", "cohort", "covered_resources", "cpu_only_flavor",
    "multikueue_worker_rules", "resource_flavor", "resource_groups", "topology",
]
