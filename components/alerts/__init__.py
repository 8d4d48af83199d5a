"""Prometheus recording and alerting rules of the platform, as data derived from the plan.

One source for two consumers: Monitoring puts `rule_groups(plan)` into a PrometheusRule, and the promtool
tests write the very same groups to a rule file (`rule_file(plan)`), so what CI tests is what deploys.
No pulumi import here: the rules are plain data.

Where the series come from (and the label names they carry):
- dcgm-exporter, scraped through the GPU Operator's ServiceMonitor, which we configure with
  `honorLabels: true` (a GPU's workload keeps its own `namespace`/`pod` labels) and a relabeling that copies
  the target's node name into `node` (see components/gpu_operator.py). Metric names are DCGM field names.
- kube-state-metrics: `kube_node_labels`, `kube_pod_labels` (both need KSM_METRIC_LABELS_ALLOWLIST, in sources,
  documented in the README's "What the monitoring stack needs") and `kube_node_status_allocatable`.
- Kueue (ClusterQueue metrics; the resource ones need Kueue's `metrics.enableClusterQueueResources`).
- The plan itself: static "info" series (`vector(1)` with labels) that map namespace -> team and its cost
  center, ClusterQueue -> team and its cost center, flavor -> pool and record each pool's units per node. They
  let alerts speak in teams and pools without re-deriving anything and without relying on workloads to label
  themselves.

One module per rule group, and one for each thing the groups share: the sources' label names, jobs and fields
(sources), the recording rules' names (record_names), the thresholds (thresholds), and a rule as data (rules);
then the groups, in the order they render: the plan as series (plan_series), recording (recording), useful
work (useful_work), GPU health (gpu_health), nodes (nodes), waste (waste), queues (queues), requeues
(requeues); and the rendering of them all (rendering). This package re-exports every name of every module, so a
caller writes `from components import alerts` and `alerts.rule_file(plan)` or `alerts.DCGM_JOB` without knowing
which module defines it; each name is defined in exactly one module, which imports what it builds on from its
siblings, never from here.
"""

from .sources import (
    ATTRIBUTION_LABELS, BUSY_FIELD, DCGM_JOB, DEVICE_KEY, GPU_KEY, HELD_FIELD, HOLD_KEY,
    KSM_METRIC_LABELS_ALLOWLIST, KUEUE_REPLICA, POOL_NODE_LABEL, ksm_label, ksm_resource, prom_label, regex_union,
)
from .record_names import (
    ALLOCATED_GPU_ACTIVE, CLUSTER_QUEUE_TEAM, FLAVOR_POOL, GPU_ACTIVE, GPU_HOURS_STEP_SECONDS, GPU_HOURS_WINDOW,
    HELD_DEVICE, NAMESPACE_TEAM, NODE_BUSY_UNMEASURED, NODE_EXPECTED_UNITS, NODE_POOL, POD_ALLOCATED_GPUS,
    POD_ATTRIBUTION, POD_BUSY_GPUS, POOL_ALLOCATABLE, POOL_ALLOCATED, POOL_ALLOCATION_RATIO, POOL_CAPACITY_UNITS,
    POOL_GPUS_PER_UNIT, POOL_UNITS_PER_NODE, POOL_UTILIZATION, TEAM_EVICTIONS, TEAM_POOL_ALLOCATED,
    TEAM_POOL_ALLOCATED_GPUS, TEAM_POOL_ALLOCATED_GPU_HOURS, TEAM_POOL_BUSY_GPUS, TEAM_POOL_BUSY_GPU_HOURS,
    TEAM_POOL_IDLE_GPUS, TEAM_POOL_IDLE_GPU_HOURS, TEAM_POOL_NOMINAL_UNITS, TEAM_POOL_UTILIZATION, TEAM_UTILIZATION,
)
from .thresholds import (
    AT_QUOTA_FOR, BUSY_INPUT_MISSING_FOR, EXPORTER_DOWN_FOR, IDLE_ENGINE_ACTIVE, IDLE_FOR, NODE_GPUS_MISSING_FOR,
    PENDING_FOR, TEAM_IDLE_FOR, TEAM_IDLE_MIN_GPU_HOURS, TEAM_IDLE_SHARE,
)
from .rules import Alert, Group, Record, SEVERITIES
from .plan_series import plan_rules
from .recording import (
    held_device_expr, node_busy_unmeasured_expr, pod_attribution_expr, recording_rules, with_attribution,
)
from .useful_work import useful_work_rules
from .gpu_health import CRITICAL_XIDS, POWER_BRAKE_BITS, THERMAL_BITS, Xid, gpu_health_alerts
from .nodes import node_alerts
from .waste import waste_alerts
from .queues import queue_alerts
from .requeues import requeue_rules
from .rendering import alerts, groups, rule_file, rule_groups, without_annotations
