"""The names of the recording rules (and the GPU-hours window they sum over): what the alerts, the dashboards and
the report (platform_cli report) query, so each is spelled once."""

from __future__ import annotations


# Recording rule names (level:metric:operations, Prometheus "Recording rules" naming best practice).
NAMESPACE_TEAM = "gpu_platform:namespace_team:info"
CLUSTER_QUEUE_TEAM = "gpu_platform:cluster_queue_team:info"
FLAVOR_POOL = "gpu_platform:flavor_pool:info"
POOL_UNITS_PER_NODE = "gpu_platform:pool_units_per_node"
POOL_CAPACITY_UNITS = "gpu_platform:pool_capacity_units"
TEAM_POOL_NOMINAL_UNITS = "gpu_platform:team_pool_nominal_units"
NODE_POOL = "gpu_platform:node_pool:info"
NODE_EXPECTED_UNITS = "gpu_platform:node_expected_gpu_units"
POD_ATTRIBUTION = "gpu_platform:pod_attribution:info"
# Each GPU, MIG instance or replica the exporter attributes to a pod (HOLD_KEY), whether profiling is there or not.
HELD_DEVICE = "gpu_platform:held_device:info"
# GPU nodes whose dcgm-exporter is scraped and reports no BUSY_FIELD: busy is not measured there.
NODE_BUSY_UNMEASURED = "gpu_platform:node_busy_unmeasured:info"
GPU_ACTIVE = "gpu_platform:gpu_engine_active:ratio"
ALLOCATED_GPU_ACTIVE = "gpu_platform:allocated_gpu_engine_active:ratio"
POOL_UTILIZATION = "gpu_platform:pool_gpu_engine_active:avg"
TEAM_POOL_UTILIZATION = "gpu_platform:team_pool_gpu_engine_active:avg"
TEAM_UTILIZATION = "gpu_platform:team_gpu_engine_active:avg"
TEAM_POOL_ALLOCATED = "gpu_platform:team_pool_allocated_units:sum"
POOL_ALLOCATED = "gpu_platform:pool_allocated_units:sum"
POOL_ALLOCATION_RATIO = "gpu_platform:pool_allocation:ratio"
POOL_ALLOCATABLE = "gpu_platform:pool_allocatable_units:sum"
# Workload evictions (each one a requeue, or the deactivation that ends them) per team, reason and underlying
# cause over the last hour, from Kueue's kueue_evicted_workloads_total (labels cluster_queue, reason,
# underlying_cause, priority_class, replica_role; pkg/metrics/metrics.go at v0.19.2).
TEAM_EVICTIONS = "gpu_platform:team_workload_evictions:increase1h"
# Useful work per team and pool, in GPUs (gpu_platform/useful_work.py defines what they mean; the report reads
# these): allocated is what Kueue admitted (its ClusterQueue usage, in the pool's units, over units per GPU);
# busy is DCGM's graphics-engine activity of the GPUs attributed to the team's pods, each series weighted by
# the share of a GPU it stands for (a MIG instance, or a pod's replica of a time-sliced GPU, is 1/units per
# GPU of one); idle is allocated minus busy. Per pod the same from DCGM alone, for the runs' outcomes.
POOL_GPUS_PER_UNIT = "gpu_platform:pool_gpus_per_unit"
POD_ALLOCATED_GPUS = "gpu_platform:pod_allocated_gpus"
POD_BUSY_GPUS = "gpu_platform:pod_busy_gpus"
TEAM_POOL_ALLOCATED_GPUS = "gpu_platform:team_pool_allocated_gpus"
TEAM_POOL_BUSY_GPUS = "gpu_platform:team_pool_busy_gpus"
TEAM_POOL_IDLE_GPUS = "gpu_platform:team_pool_idle_gpus"
# ... and as GPU-hours over the last GPU_HOURS_WINDOW, sampled every GPU_HOURS_STEP: sum_over_time of the GPUs
# on a fixed grid times the step (useful_work.sampled_hours), so the report, sampling the same series on the
# same grid, gives the same figure to the last digit.
GPU_HOURS_WINDOW = "1h"
GPU_HOURS_STEP_SECONDS = 60
TEAM_POOL_ALLOCATED_GPU_HOURS = "gpu_platform:team_pool_allocated_gpu_hours:1h"
TEAM_POOL_BUSY_GPU_HOURS = "gpu_platform:team_pool_busy_gpu_hours:1h"
TEAM_POOL_IDLE_GPU_HOURS = "gpu_platform:team_pool_idle_gpu_hours:1h"
