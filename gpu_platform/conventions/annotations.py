"""Annotations the platform writes for its own readers: a flavor's capacity (the policy pack) and what a team
namespace grants (the admission policies read them, tenants cannot edit them)."""

from __future__ import annotations

from .labels import PREFIX


# ==== Annotations: a flavor's capacity, what a team namespace grants (the admission policies read them) =====
# Annotation on every Kueue ResourceFlavor: its pool's capacity in schedulable units (PoolPlan.capacity_units).
# The policy pack checks that nominal quotas fit it even where no node group is in the stack (`existing`).
FLAVOR_CAPACITY_ANNOTATION = f"{PREFIX}/capacity-units"
# Which platform priorities a team may use: the team's namespaces carry the allowed names (comma
# separated) in this annotation, which the admission policy reads (tenants cannot edit namespaces).
ALLOWED_PRIORITIES_ANNOTATION = f"{PREFIX}/allowed-priorities"
# ... and the GPU resources the team gets only from topology-aware pools (comma separated): pod templates
# that ask for them must carry a Kueue topology annotation (TAS_ANNOTATIONS), or they could never be admitted.
TOPOLOGY_RESOURCES_ANNOTATION = f"{PREFIX}/topology-resources"
# ... and the team's CPU-only allowance (its quota on CPU_FLAVOR, a CPU and a memory quantity): a pod without
# GPUs that asks for more can never be admitted, so admission refuses it at creation.
CPU_ONLY_CPU_ANNOTATION = f"{PREFIX}/cpu-only-cpu"
CPU_ONLY_MEMORY_ANNOTATION = f"{PREFIX}/cpu-only-memory"
# ... and the pools the team has quota on (comma separated): a pod template may select only these by the pool label
# (nodeSelector or required node affinity); Kueue would never give it another team's pool's flavor.
TEAM_POOLS_ANNOTATION = f"{PREFIX}/pools"
# The registries a team's pods may pull from (comma separated: the platform-wide images.allowedRegistries
# plus the team's own), on every team namespace; the image admission policy reads it (tenants cannot edit
# namespaces) and the policy pack compares the platform's own images with the platform-wide part.
ALLOWED_REGISTRIES_ANNOTATION = f"{PREFIX}/allowed-registries"
# ... and on the image policy object itself: the platform-wide list, where the policy pack reads it.
PLATFORM_REGISTRIES_ANNOTATION = f"{PREFIX}/platform-registries"
