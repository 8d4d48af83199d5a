"""Cross-field checks of elastic capacity and the Cluster Autoscaler: a topology-aware pool that may be at 0
nodes needs something to provision its nodes first, and the autoscaler must be built for the cluster's
Kubernetes minor and have an IAM role name AWS accepts."""

from __future__ import annotations

from .. import catalog, conventions as cv
from ..errors import Problem
from ..pool_derivations import pool_topology_aware
from .limits import CLUSTER_AUTOSCALER_IMAGE_TAG, IAM_ROLE_NAME_MAX
from .platform import Platform


def check_elastic_capacity(p: Platform) -> list[Problem]:
    """What elastic capacity cannot do (gpu_platform/plan/autoscaling.py decides the rest): a topology-aware pool
    that may be at 0 nodes with nothing to provision its nodes first, and an autoscaler built for another
    Kubernetes minor or with an IAM role name AWS refuses."""
    out: list[Problem] = []
    c, ca = p.cluster, p.addons.clusterAutoscaler
    if c.provider != "eks":
        return out
    provisioning = ca.install and ca.provisioningRequests
    for i, pool in enumerate(p.pools):
        cap = pool.capacity
        if (pool.provisioner != cv.PROVISIONER_MANAGED_NODE_GROUP or cap.type in cv.RESERVED_CAPACITY_TYPES
                or cap.min > 0 or provisioning or pool.instanceType not in catalog.INSTANCE_TYPES
                or not pool_topology_aware(pool)):
            continue
        # Kueue's TAS admits a job only onto Ready nodes (kueue v0.19.2 pkg/cache/scheduler/tas_topology_tree.go):
        # at 0 nodes no job fits, it stays suspended, no pod is ever Pending, and no autoscaler scales up for it.
        why = ("addons.clusterAutoscaler.install is false" if not ca.install
               else "addons.clusterAutoscaler.provisioningRequests is false")
        out.append(Problem(
            f"pools[{i}].capacity.min",
            f"pool {pool.name!r} is topology-aware and elastic ({cap.type}) at min 0, and {why}: Kueue places its "
            "jobs only on Ready nodes, so at 0 nodes no job is ever admitted and nothing asks for a node; turn on "
            "addons.clusterAutoscaler with provisioningRequests (Kueue then asks the autoscaler for a job's nodes "
            "before admitting it), or set capacity.min to the nodes the largest job needs",
        ))
    if not ca.install:
        return out
    tag = CLUSTER_AUTOSCALER_IMAGE_TAG.match(ca.imageTag)
    if tag and f"{tag.group(1)}.{tag.group(2)}" != c.kubernetesVersion:
        out.append(Problem(
            "addons.clusterAutoscaler.imageTag",
            f"{ca.imageTag} is the Cluster Autoscaler for Kubernetes {tag.group(1)}.{tag.group(2)}, and the cluster "
            f"runs {c.kubernetesVersion}: the autoscaler is built for one minor (its README, \"Releases\"); use a "
            f"v{c.kubernetesVersion}.x release and the chart release that ships it",
        ))
    role = cv.cluster_autoscaler_role_name(c.name)
    if len(role) > IAM_ROLE_NAME_MAX:
        out.append(Problem("cluster.name", f"{c.name!r} is too long for the Cluster Autoscaler's IAM role {role!r}: "
                                           f"{len(role)} characters and AWS allows {IAM_ROLE_NAME_MAX}; use at most "
                                           f"{len(c.name) - (len(role) - IAM_ROLE_NAME_MAX)} characters, or "
                                           "addons.clusterAutoscaler.install: false"))
    return out
