"""Pools' capacity: who provisions a pool's nodes, reserved against elastic capacity, and who sizes them."""

from __future__ import annotations


# ==== Pools: provisioners, capacity types, who scales the nodes =============================================
# Pool provisioners (spec pools[].provisioner): an EKS managed node group made here, or Karpenter NodePools.
PROVISIONER_MANAGED_NODE_GROUP = "managed-node-group"
PROVISIONER_KARPENTER = "karpenter"
# Reserved and elastic capacity (docs/node-pools.md, "Capacity: reserved and elastic"). What a pool's capacity
# type means for how many nodes run: reserved capacity (capacity blocks, on-demand capacity reservations) is
# paid for whole and runs whole; on-demand and spot capacity scales between capacity.min and capacity.max.
CAPACITY_RESERVED = "reserved"
CAPACITY_ELASTIC = "elastic"
RESERVED_CAPACITY_TYPES: tuple[str, ...] = ("capacity-block", "capacity-reservation")
# Who sizes a pool's nodes (PoolPlan.scaler): the Cluster Autoscaler (elastic managed node groups on eks),
# Karpenter (its pools), the reservation (the node group is sized to it: by the stack for a capacity
# reservation, by EKS for a capacity block), nobody (elastic managed node groups without the autoscaler), or
# whoever brings the nodes of an `existing` cluster.
SCALER_CLUSTER_AUTOSCALER = "cluster-autoscaler"
SCALER_KARPENTER = "karpenter"
SCALER_RESERVATION = "reservation"
SCALER_NONE = "none"
SCALER_EXTERNAL = "external"
