"""The `gpu-platform.nodes` group: a GPU node advertising fewer GPUs than its pool's nodes have, and the inputs
the other groups need from a node missing (its dcgm-exporter down, no profiling fields, no pool label)."""

from __future__ import annotations

from gpu_platform import conventions as cv

from .record_names import NODE_BUSY_UNMEASURED, NODE_EXPECTED_UNITS, NODE_POOL, TEAM_POOL_ALLOCATED_GPUS
from .rules import Alert, Group
from .sources import BUSY_FIELD, DCGM_JOB, KSM_METRIC_LABELS_ALLOWLIST, POOL_NODE_LABEL
from .thresholds import BUSY_INPUT_MISSING_FOR, EXPORTER_DOWN_FOR, NODE_GPUS_MISSING_FOR


def node_alerts() -> Group:
    up = f'{cv.SCRAPE_UP}{{job="{DCGM_JOB}"}}'
    return Group("gpu-platform.nodes", (
        Alert(
            alert="GpuNodeMissingGpus",
            expr=(f"{NODE_EXPECTED_UNITS} - on (node, resource) group_left () "
                  f"(max by (node, resource) ({cv.KSM_NODE_ALLOCATABLE}) "
                  f"or on (node, resource) ({NODE_EXPECTED_UNITS} * 0)) > 0"),
            for_=NODE_GPUS_MISSING_FOR,
            severity="warning",
            summary="{{ $labels.node }} advertises {{ $value }} fewer {{ $labels.resource }} than pool {{ $labels.pool }} nodes have",
            description="The node's allocatable GPU resource has been below what its pool's instance type and "
                        "sharing mode give for " + NODE_GPUS_MISSING_FOR + ": a GPU fell off the bus, the device "
                        "plugin is not running, or the MIG/time-slicing config was not applied.",
            runbook="kubectl describe node {{ $labels.node }} (Allocatable, and the nvidia.com/mig.config.state "
                    "label for MIG pools); check the nvidia-device-plugin and mig-manager pods on the node in "
                    "the gpu-operator namespace, and nvidia-smi on the node. A missing GPU needs a reboot; if it "
                    "stays missing, replace the instance.",
        ),
        Alert(
            alert="DcgmExporterDown",
            expr=(f"({NODE_POOL} unless on (node) ({up} == 1)) "
                  f"or on (node) (max by (node) ({up}) == 0)"),
            for_=EXPORTER_DOWN_FOR,
            severity="warning",
            summary="No GPU metrics from {{ $labels.node }} (pool {{ $labels.pool }})",
            description="dcgm-exporter on this GPU node is down or not scheduled: its GPU health alerts cannot "
                        "fire and its utilization is missing from the dashboards.",
            runbook="kubectl -n gpu-operator get pods -l app=nvidia-dcgm-exporter -o wide; look at the pod on "
                    "the node (taints it does not tolerate, a crash loop, the nvidia.com/gpu.deploy.dcgm-exporter "
                    "node label) and at the ClusterPolicy status.",
        ),
        Alert(
            alert="GpuProfilingMetricsMissing",
            expr=NODE_BUSY_UNMEASURED,
            for_=BUSY_INPUT_MISSING_FOR,
            severity="warning",
            summary=f"dcgm-exporter on {{{{ $labels.node }}}} (pool {{{{ $labels.pool }}}}) reports no {BUSY_FIELD}",
            description=f"The node's exporter is scraped but gives no profiling ({cv.DCGM_PROFILING_PREFIX}*) "
                        "series: busy GPU time is not measured on it, so the pool's teams would read 0 busy and all "
                        "their allocation idle. GpuTeamAllocatedIdle stays silent for the pool, and the report "
                        "refuses for teams whose GPUs no busy series measures.",
            runbook="kubectl -n gpu-operator logs -l app=nvidia-dcgm-exporter on the node: \"Not collecting DCP "
                    f"metrics\" and \"Skipping line N ('{BUSY_FIELD}'): metric not enabled\" say profiling is "
                    "unavailable: a GPU without profiling support (before Volta), an exporter without the "
                    "SYS_ADMIN capability, or a driver or DCGM error in the same log.",
        ),
        Alert(
            alert="GpuNodePoolLabelMissing",
            expr=(f"(sum by (pool) ({TEAM_POOL_ALLOCATED_GPUS}) > 0) unless on () {NODE_POOL} "
                  f"and on () count({up} == 1)"),
            for_=BUSY_INPUT_MISSING_FOR,
            severity="warning",
            summary="Pool {{ $labels.pool }} has GPUs allocated, and kube-state-metrics gives no node a "
                    f"{cv.POOL} label",
            description=f"{cv.KSM_NODE_LABELS} carries no {POOL_NODE_LABEL}: GPU series cannot be put in a pool, so "
                        "busy GPU time reads 0 for every team, node and health alerts lose their pool, and "
                        "GpuTeamAllocatedIdle stays silent rather than fire for every team.",
            runbook="Give kube-state-metrics --metric-labels-allowlist="
                    f"{','.join(KSM_METRIC_LABELS_ALLOWLIST)} (kube-prometheus-stack value "
                    "kube-state-metrics.metricLabelsAllowlist; docs/gpu-operator-and-monitoring.md, \"What the "
                    "monitoring stack needs\").",
        ),
    ))
