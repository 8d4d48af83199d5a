"""Karpenter's KWOK provider on the live cluster: the objects that let a real autoscaler add and remove
the simulated nodes of the pools that scale.

Karpenter's core (sigs.k8s.io/karpenter, its kwok/ cloud provider) provisions for pending pods and
consolidates empty nodes exactly as it does on EKS; its cloud provider creates a Node object (annotated
for KWOK, which then plays its kubelet) instead of an instance. It offers only the instance types of a
JSON file (kwok/cloudprovider/helpers.go ConstructInstanceTypes, `INSTANCE_TYPES_FILE_PATH`), so each
scaling pool gets one: the pool's instance type with the pool's GPU resource (whole GPUs, MIG slices or
time-sliced replicas), EFA devices, CPU and memory, offered in the pool's zone at the pool's price. One
NodePool per pool stamps the pool's labels and taints on its nodes, so Kueue's flavors and the
scheduler see the same nodes a managed node group would make.

Which pools scale is gpu_platform.nodes.scales_locally; the rest are registered whole by the script.
"""

from __future__ import annotations

import os
from typing import Any

from gpu_platform import conventions as cv
from gpu_platform.nodes import kwok_instance_type_resources, node_zone, scales_locally
from gpu_platform.plan import Plan, PoolPlan

# The Karpenter API the kwok provider v1.15.0 serves (karpenter.sh/v1 NodePool, karpenter.kwok.sh/v1alpha1
# KWOKNodeClass: kwok/apis/v1alpha1/kwoknodeclass.go).
NODEPOOL_API = "karpenter.sh/v1"
NODECLASS_API = "karpenter.kwok.sh/v1alpha1"
NODECLASS_NAME = "local"

# How long a new node takes to register (KWOKNodeClass spec.nodeRegistrationDelay) and how long an empty
# node stays before Karpenter removes it (NodePool disruption.consolidateAfter). EC2 takes minutes for
# both; locally they are short so a test sees the whole cycle, and the environment can lengthen them.
SCALE_UP_DELAY_ENV = "LOCAL_CLUSTER_SCALE_UP_DELAY"
SCALE_DOWN_DELAY_ENV = "LOCAL_CLUSTER_SCALE_DOWN_DELAY"
DEFAULT_SCALE_UP_DELAY = "5s"
DEFAULT_SCALE_DOWN_DELAY = "30s"


def scaling_pools(plan: Plan) -> list[PoolPlan]:
    return [p for p in plan.pools if scales_locally(p)]


def instance_type_name(plan: Plan, pool: PoolPlan) -> str:
    """The pool's instance type, unless another scaling pool offers the same type with other resources (a
    MIG and a whole-GPU pool of p4d, say): then a name per pool, since the provider's types are global."""
    shared = [p for p in scaling_pools(plan) if p.instance_type == pool.instance_type]
    return pool.instance_type if len(shared) == 1 else f"{pool.instance_type}-{pool.name}"


def instance_types(plan: Plan) -> list[dict[str, Any]]:
    """The provider's instance-types file (kwok/cloudprovider/helpers.go InstanceTypeOptions)."""
    out = []
    for pool in scaling_pools(plan):
        # What the provider offers less its own small reserve is what the registered nodes of the pool offer.
        resources = {**kwok_instance_type_resources(pool), pool.resource_name: str(pool.units_per_node)}
        if pool.efa_interfaces:
            resources[cv.EFA_RESOURCE] = str(pool.efa_interfaces)
        out.append({
            "name": instance_type_name(plan, pool),
            "architecture": "amd64",
            "operatingSystems": ["linux"],
            "resources": resources,
            "offerings": [{
                "Price": pool.usd_per_node_hour,
                "Available": True,
                "Requirements": [
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [pool.capacity_type]},
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [node_zone(plan, pool)]},
                ],
            }],
        })
    return out


def node_class(scale_up_delay: str) -> dict[str, Any]:
    return {"apiVersion": NODECLASS_API, "kind": "KWOKNodeClass", "metadata": {"name": NODECLASS_NAME},
            "spec": {"nodeRegistrationDelay": scale_up_delay}}


def node_pool(plan: Plan, pool: PoolPlan, scale_down_delay: str) -> dict[str, Any]:
    """The pool's NodePool: at most max - min nodes of its own (the script registers the first `min`
    itself, as a node group's minimum), emptied nodes removed after the scale-down delay."""
    return {
        "apiVersion": NODEPOOL_API,
        "kind": "NodePool",
        "metadata": {"name": pool.name, "labels": {cv.POOL: pool.name}},
        "spec": {
            "template": {
                "metadata": {"labels": dict(pool.node_labels)},
                "spec": {
                    "nodeClassRef": {"group": NODECLASS_API.split("/")[0], "kind": "KWOKNodeClass",
                                     "name": NODECLASS_NAME},
                    "requirements": [
                        {"key": "node.kubernetes.io/instance-type", "operator": "In",
                         "values": [instance_type_name(plan, pool)]},
                        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [pool.capacity_type]},
                        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [node_zone(plan, pool)]},
                    ],
                    "taints": [t.to_k8s() for t in pool.taints],
                    "expireAfter": "Never",
                },
            },
            "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": scale_down_delay,
                           "budgets": [{"nodes": "100%"}]},
            "limits": {pool.resource_name: str(pool.units_per_node * (pool.max_nodes - pool.min_nodes))},
        },
    }


def objects(plan: Plan, scale_up_delay: str | None = None, scale_down_delay: str | None = None) -> list[dict[str, Any]]:
    up = scale_up_delay or os.environ.get(SCALE_UP_DELAY_ENV) or DEFAULT_SCALE_UP_DELAY
    down = scale_down_delay or os.environ.get(SCALE_DOWN_DELAY_ENV) or DEFAULT_SCALE_DOWN_DELAY
    pools = scaling_pools(plan)
    if not pools:
        return []
    return [node_class(up)] + [node_pool(plan, p, down) for p in pools]
