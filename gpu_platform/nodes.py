"""Fake Node objects that look like a pool's real nodes: labels, taints and GPU capacity.

The local API server has no kubelets; registering these lets quotas, Kueue flavors and scheduling
selectors be checked against nodes that carry exactly what a real pool's nodes would.
"""

from __future__ import annotations

from typing import Any

from . import catalog
from .plan import Plan, PoolPlan, reserved_cpu_millis, reserved_memory_mib


def node_name(pool: PoolPlan, index: int) -> str:
    return f"{pool.name}-{index}"


def _node(plan: Plan, pool: PoolPlan, index: int) -> dict[str, Any]:
    it = catalog.INSTANCE_TYPES[pool.instance_type]
    name = node_name(pool, index)
    labels = dict(pool.node_labels)
    labels.update({
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": pool.instance_type,
        "topology.kubernetes.io/zone": pool.availability_zone or f"{plan.region or 'local'}-a",
    })
    if pool.topology:
        labels.update({
            "topology.k8s.aws/network-node-layer-1": "nn-layer1-0",
            "topology.k8s.aws/network-node-layer-2": "nn-layer2-0",
            "topology.k8s.aws/network-node-layer-3": f"nn-layer3-{index // 4}",
        })
    capacity = {
        "cpu": str(it.vcpus),
        "memory": f"{it.memory_gib}Gi",
        "pods": "110",
        pool.resource_name: str(pool.units_per_node),
    }
    allocatable = dict(capacity)
    allocatable["cpu"] = f"{it.vcpus * 1000 - reserved_cpu_millis(it.vcpus)}m"
    allocatable["memory"] = f"{it.memory_gib * 1024 - reserved_memory_mib()}Mi"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": [t.to_k8s() for t in pool.taints]},
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True", "reason": "FakeGpuNode",
                            "message": "registered by scripts/local-cluster"}],
        },
    }


def fake_nodes(plan: Plan) -> dict[str, Any]:
    items = [_node(plan, p, i) for p in plan.pools for i in range(max(p.max_nodes, 1))]
    return {"apiVersion": "v1", "kind": "List", "items": items}
