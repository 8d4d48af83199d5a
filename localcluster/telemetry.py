"""GPU telemetry of the simulated nodes and the real node, shaped as a real cluster's exporters give it to Prometheus.

The live local cluster has no GPUs, no dcgm-exporter and no kube-state-metrics (the Go module proxy serves no
kube-state-metrics module to build), yet the platform's recording rules, alerts and dashboards read both. This
process serves what those two would, from the API server's nodes, pods and Jobs, so the rules run unchanged
and cannot tell (docs/report.md, "How the local cluster measures GPUs"):

- per GPU node, `/dcgm/<node>/metrics`: every DCGM field the stack asks dcgm-exporter for
  (components/monitoring.DCGM_FIELDS), shaped as dcgm-exporter 4.8.3 gives them (the GPU Operator v26.7.0's
  dcgmExporter.version 4.6.0-4.8.3; NVIDIA/dcgm-exporter at 7ad58324, hack/versions.env DCGM 4.6.0, exporter
  4.8.3): one series per GPU or MIG instance with its labels (gpu, UUID, pci_bus_id, device, modelName,
  GPU_I_PROFILE/GPU_I_ID on MIG, `hostname` (renamed from Hostname by PR #655), the `label` fields;
  internal/pkg/rendermetrics/render_metrics.go metricLabels), none for the utilization fields DCGM leaves blank
  on MIG, and the pod attributes its Kubernetes mapper adds (internal/pkg/transformation/kubernetes.go):
  namespace, pod, container of the pod holding the device, and the allowlisted pod labels. Under
  KUBERNETES_VIRTUAL_GPUS (on when the stack has a time-sliced pool, components/gpu_operator.dcgm_exporter_env)
  a held device gives one copy per replica a pod holds (`vgpu`), a device nobody holds keeps its own series
  (PR #594), and framebuffer used and GPU utilization are per process too: the device's own series plus one per
  pod with `pod_uid`, reading 0 (PER_PROCESS_FIELDS). A failed node (SIM_NODE_FAILED_ANNOTATION) answers 503:
  its exporter target is down;
- `/targets`: Prometheus HTTP service discovery, one target per GPU node with the labels Kubernetes endpoints
  discovery gives the exporter pod's endpoint of the GPU Operator's Service (gpu_platform/plan/scrape_jobs.py,
  discovery_labels): the local Prometheus runs EKS's dcgm-exporter job on them, whose relabelings make them the
  target's namespace, service, pod, container, endpoint and node (which honor_labels lets a workload's labels
  override);
- `/ksm/metrics`: the kube-state-metrics families the rules read, with its names and labels
  (kubernetes/kube-state-metrics internal/store/node.go, pod.go, job.go): kube_node_info (what report --check
  counts nodes by), kube_node_labels and kube_pod_labels
  (only the labels of the stack's allowlist, components/alerts.KSM_METRIC_LABELS_ALLOWLIST),
  kube_node_status_allocatable, kube_pod_status_phase, kube_pod_deletion_timestamp, kube_job_complete and
  kube_job_failed; and the Kueue Workloads' conditions as kube-state-metrics' custom resource state metrics
  give them with the platform's configuration (gpu_platform/useful_work.KSM_WORKLOAD_CONDITIONS), what the
  report counts finished jobs of every kind from;
- `/healthz`: 200 once the first snapshot is read.

The GPU nodes are the simulated nodes of a pool (KWOK's) and the real node (localcluster/realnode: label
NODE_KIND_LABEL=real), whose GPU device plugin advertises the pool's devices without a GPU behind them, so its pods'
GPU series are these too, as dcgm-exporter on that pool's node would give them; its kubelet's own series (cAdvisor)
are real and scraped from it (localcluster/prometheus.py).

How busy a GPU is comes from its pod: SIM_GPU_BUSY_ANNOTATION (the job template's --gpu-busy, a trace's busy
column), SIM_GPU_BUSY_DEFAULT without it. A whole GPU or MIG instance shows its holder's fraction; a
time-sliced GPU the sum over its pods of fraction x replicas held / replicas (capped at 1), so a team's busy
GPU-hours come out as declared. Devices are given to pods in the order the pods are first seen, and kept
until the pod ends (the device plugin's choice on a real node; here the lowest free index, and for replicas
the least used GPU). Everything else a GPU reports (power, clocks, memory, temperature) follows its activity;
error counters stay at zero.

Why not KWOK's Metric resource (kwok.x-k8s.io/v1alpha1, sigs.k8s.io/kwok v0.8.0 pkg/apis/v1alpha1/
metric_types.go, pkg/kwok/metrics/metrics.go): it renders one series per node, pod or container
(`dimension`), with CEL over that one object. A GPU series is per device, so an 8-GPU pod would need eight
series; which devices a pod holds depends on the other pods of its node, which CEL never sees; and
unallocated GPUs must report too. None of that fits a per-object expression.

The simulated GPUs and the pods holding them are localcluster/telemetry_devices.py, the HTTP server and the loop
reading the cluster localcluster/telemetry_server.py (`python -m localcluster gpu-telemetry`). The series
themselves are here: they are shaped by the components' monitoring (its DCGM fields, the allowlist, the label
names), and only this module and the local Prometheus may import the components (tests/unit/test_layers.py).
"""

from __future__ import annotations

import calendar
import threading
import time
import uuid
from typing import Any, Iterable, Mapping

from components.alerts import KSM_METRIC_LABELS_ALLOWLIST, ksm_label, ksm_resource, prom_label
from components.gpu_operator import dcgm_exporter_env
from components.monitoring import DCGM_FIELDS, DcgmField
from gpu_platform import conventions as cv, useful_work as uw
from gpu_platform.plan import Plan
from gpu_platform.plan.scrape_jobs import discovery_labels, source

from .telemetry_devices import HOLDING_PHASES, Entity, GpuNode, Holder, busy_fraction

# The GPU Operator's dcgm-exporter: its container and port (gpu-operator assets/state-dcgm-exporter; the Service
# port gpu-metrics is 9400), what a target's own labels are before honor_labels. Its namespace, Service and port
# name are the scrape job's (gpu_platform/plan/scrape_jobs.py).
EXPORTER_CONTAINER = "nvidia-dcgm-exporter"
EXPORTER_PORT = 9400
# The driver the emulated GPUs report (a `label` field): a current R570 data-center driver string.
DRIVER_VERSION = "570.148.08"
PHASES = ("Pending", "Succeeded", "Failed", "Unknown", "Running")  # kube_pod_status_phase, KSM's order
# kube_node_info's labels from the node's status.nodeInfo (then provider_id, from spec.providerID): KSM node.go.
NODE_INFO_LABELS = (("kernel_version", "kernelVersion"), ("os_image", "osImage"),
                    ("container_runtime_version", "containerRuntimeVersion"), ("kubelet_version", "kubeletVersion"),
                    ("kubeproxy_version", "kubeProxyVersion"))


def _allowlist(kind: str) -> tuple[str, ...]:
    """The label keys kube-state-metrics exports for a kind (`nodes=[a,b]` in its --metric-labels-allowlist)."""
    for entry in KSM_METRIC_LABELS_ALLOWLIST:
        name, _, keys = entry.partition("=")
        if name == kind:
            return tuple(k for k in keys.strip("[]").split(",") if k)
    return ()


NODE_LABELS = _allowlist("nodes")
POD_LABELS = _allowlist("pods")


def parse_quantity(value: str | int | float) -> float:
    """A Kubernetes quantity as a number (the suffixes node allocatable and pod requests use)."""
    s = str(value)
    for suffix, factor in (("Ki", 2**10), ("Mi", 2**20), ("Gi", 2**30), ("Ti", 2**40), ("m", 1e-3), ("k", 1e3),
                           ("M", 1e6), ("G", 1e9)):
        if s.endswith(suffix):
            return float(s[: -len(suffix)]) * factor
    return float(s)


def _requested(pod: Mapping[str, Any], resource: str) -> tuple[int, str | None]:
    """(units of `resource` the pod's containers ask for, the first such container's name)."""
    total, first = 0, None
    for c in pod.get("spec", {}).get("containers", []):
        res = c.get("resources") or {}
        n = int(parse_quantity((res.get("limits") or {}).get(resource) or (res.get("requests") or {}).get(resource) or 0))
        if n and first is None:
            first = c["name"]
        total += n
    return total, first


def _field_value(node: GpuNode, e: Entity, f: DcgmField) -> float:
    """What a field reads on an emulated device: activity-driven for utilization, memory, clocks, power and
    temperature; zero for every error, violation and link counter."""
    a = node.active(e)
    memory = node.memory_mib / (node.pool.units_per_gpu if node.pool.sharing_mode == "mig" else 1)
    used = (0.1 + 0.8 * a) * memory if e.holders else 0.0
    values: dict[str, float] = {
        cv.DCGM_GPU_UTIL: round(100 * a),
        cv.DCGM_MEM_COPY_UTIL: round(40 * a),
        cv.BUSY_FIELD: a,
        cv.DCGM_SM_ACTIVE: 0.95 * a,
        cv.DCGM_SM_OCCUPANCY: 0.5 * a,
        cv.DCGM_PIPE_TENSOR_ACTIVE: 0.6 * a,
        cv.DCGM_DRAM_ACTIVE: 0.4 * a,
        cv.HELD_FIELD: round(used),
        cv.DCGM_FB_FREE: round(memory - used),
        cv.DCGM_SM_CLOCK: round(1095 + 885 * a),
        cv.DCGM_MEM_CLOCK: 2619,
        cv.DCGM_POWER_USAGE: round(node.power(e), 3),
        cv.DCGM_TOTAL_ENERGY: round(e.energy_mj),
        cv.DCGM_GPU_TEMP: round(32 + 40 * a),
        cv.DCGM_MEMORY_TEMP: round(34 + 44 * a),
        cv.DCGM_NVLINK_TX_BYTES: 0.0,
        cv.DCGM_PCIE_TX_BYTES: round(2e8 * a),
        cv.DCGM_PCIE_RX_BYTES: round(8e8 * a),
    }
    return values.get(f.name, 0.0)


def _labels(pairs: Iterable[tuple[str, str]]) -> str:
    return ",".join(f'{k}="{_escape(v)}"' for k, v in pairs)


def _escape(v: str) -> str:
    return str(v).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() and abs(v) < 1e15 else repr(float(v))


# Families dcgm-exporter only emits when there is something to say: the XID counts per XID seen in its window.
EVENT_FIELDS = frozenset({cv.DCGM_XID_ERRORS_COUNT})
# Fields DCGM has no value for on a MIG instance, so dcgm-exporter gives no series for them there (a blank value is
# skipped: internal/pkg/collector/gpu_collector.go toString; "not supported for MIG configurations",
# NVIDIA/dcgm-exporter issue #430).
MIG_BLANK_FIELDS = frozenset({cv.DCGM_GPU_UTIL, cv.DCGM_MEM_COPY_UTIL})
# Under virtual GPUs dcgm-exporter 4.8.3 gives these two per process as well (PR #594; internal/pkg/transformation/
# process_metrics.go isPerProcessMetric). A pod's value is what NVML reports for its processes, found through
# /proc/<pid>/cgroup; the GPU Operator runs the exporter without the host's PID namespace (chart values
# dcgmExporter.hostPID: false, which the stack keeps), so no process is found and every pod reads 0
# (kubernetes.go buildIdlePodValues).
PER_PROCESS_FIELDS = frozenset({cv.DCGM_GPU_UTIL, cv.HELD_FIELD})
PER_PROCESS_VALUE = 0.0


class Telemetry:
    """The cluster as the exporters see it, refreshed from the API server's nodes, pods and Jobs."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.pools = plan.pools_by_name
        self.virtual = any(e["name"] == "KUBERNETES_VIRTUAL_GPUS" and e["value"] == "true"
                           for e in dcgm_exporter_env(plan))
        self.gpu_nodes: dict[str, GpuNode] = {}
        self.failed: set[str] = set()
        self.nodes: list[dict[str, Any]] = []
        self.pods: list[dict[str, Any]] = []
        self.jobs: list[dict[str, Any]] = []
        self.workloads: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.ready = False
        self._last = time.monotonic()

    def update(self, nodes: list[dict[str, Any]], pods: list[dict[str, Any]], jobs: list[dict[str, Any]],
               workloads: list[dict[str, Any]] | None = None) -> None:
        now = time.monotonic()
        with self.lock:
            for n in self.gpu_nodes.values():
                n.tick(now - self._last)
            self._last = now
            self.nodes, self.pods, self.jobs = nodes, pods, jobs
            self.workloads = workloads or []
            seen: set[str] = set()
            self.failed = set()
            for node in nodes:
                meta = node["metadata"]
                labels = meta.get("labels") or {}
                pool = self.pools.get(labels.get(cv.POOL, ""))
                simulated = (meta.get("annotations") or {}).get(cv.KWOK_NODE_ANNOTATION) == cv.KWOK_NODE_ANNOTATION_VALUE
                if pool is None or not (simulated or labels.get(cv.NODE_KIND_LABEL) == cv.NODE_KIND_REAL):
                    continue
                seen.add(meta["name"])
                self.gpu_nodes.setdefault(meta["name"], GpuNode(meta["name"], pool))
                if (meta.get("annotations") or {}).get(cv.SIM_NODE_FAILED_ANNOTATION) == "true":
                    self.failed.add(meta["name"])
            for name in set(self.gpu_nodes) - seen:
                del self.gpu_nodes[name]
            holding: dict[str, set[str]] = {name: set() for name in self.gpu_nodes}
            for pod in pods:
                node = self.gpu_nodes.get(pod.get("spec", {}).get("nodeName", ""))
                if node is None or pod.get("status", {}).get("phase", "Pending") not in HOLDING_PHASES:
                    continue
                units, container = _requested(pod, node.pool.resource_name)
                if not units:
                    continue
                meta = pod["metadata"]
                holding[node.name].add(meta["uid"])
                if meta["uid"] not in node.holders:
                    node.hold(Holder(meta["uid"], meta["namespace"], meta["name"], container or "",
                                     {k: v for k, v in (meta.get("labels") or {}).items() if k in POD_LABELS},
                                     busy_fraction(pod)), units)
            for name, node in self.gpu_nodes.items():
                for uid in set(node.holders) - holding[name]:
                    node.release(uid)
            self.ready = True

    # -----------------------------------------------------------------------------------------------
    # dcgm-exporter

    def targets(self, address: str) -> list[dict[str, Any]]:
        """Prometheus HTTP SD: one target per GPU node, with the discovery labels Kubernetes gives the endpoint of
        the node's exporter pod (its DaemonSet pod's name: the job's name and a suffix), and the instance a pod IP
        would be."""
        with self.lock:
            names = sorted(self.gpu_nodes)
        dcgm = source(cv.DCGM_JOB)
        return [{"targets": [address], "labels": {
            **discovery_labels(dcgm, pod=f"{dcgm.job}-{uuid.uuid5(uuid.NAMESPACE_URL, name).hex[:5]}",
                               container=EXPORTER_CONTAINER, node=name, metrics_path=f"/dcgm/{name}/metrics"),
            "instance": f"{name}:{EXPORTER_PORT}",
        }} for name in names]

    def dcgm(self, node_name: str) -> str | None:
        """The node's exposition, None for a node that is not a GPU node of the telemetry."""
        with self.lock:
            node = self.gpu_nodes.get(node_name)
            if node is None:
                return None
            out: list[str] = []
            label_fields = [f for f in DCGM_FIELDS if f.kind == "label"]
            for f in DCGM_FIELDS:
                if f.kind == "label":
                    continue
                out.append(f"# HELP {f.name} {f.help}")
                out.append(f"# TYPE {f.name} {f.kind}")
                if f.name in EVENT_FIELDS:
                    continue
                for e in node.entities:
                    if e.instance is not None and f.name in MIG_BLANK_FIELDS:
                        continue
                    base = [("gpu", str(e.gpu)), ("UUID", e.uuid), ("pci_bus_id", f"00000000:{0x18 + 0x10 * e.gpu:02X}:00.0"),
                            ("device", f"nvidia{e.gpu}"), ("modelName", node.model)]
                    if e.instance is not None:
                        base += [("GPU_I_PROFILE", node.pool.mig_profile or ""), ("GPU_I_ID", str(e.instance))]
                    base.append(("hostname", node.name))
                    base += [(lf.name, DRIVER_VERSION if lf.name == cv.DCGM_DRIVER_VERSION else "") for lf in label_fields]
                    value = _num(_field_value(node, e, f))
                    for attrs, own in self._copies(node, e, f.name):
                        out.append(f"{f.name}{{{_labels(base + attrs)}}} {value if own else _num(PER_PROCESS_VALUE)}")
            return "\n".join(out) + "\n"

    def _copies(self, node: GpuNode, e: Entity, field_name: str) -> list[tuple[list[tuple[str, str]], bool]]:
        """The series an entity gives for a field: (pod attributes, whether it carries the device's own value).
        Without virtual GPUs, one series with its holder's attributes and allowlisted labels (none when unheld).
        Under virtual GPUs (dcgm-exporter 4.8.3, internal/pkg/transformation/kubernetes.go Process): an unheld
        device keeps its own series; a held one gives a copy per holder slot (`vgpu` on a time-sliced GPU) with
        the pod's labels, and for a per-process field its own series plus a per-process one per slot with
        `pod_uid` and the pod's processes' value (createPerProcessMetrics)."""
        if not self.virtual:
            if not e.holders:
                return [([], True)]
            h = node.holders[e.holders[0]]
            return [([("container", h.container), ("namespace", h.namespace), ("pod", h.name),
                      *sorted((prom_label(k), v) for k, v in h.labels.items())], True)]
        if not e.holders:
            return [([], True)]
        per_process = field_name in PER_PROCESS_FIELDS
        out: list[tuple[list[tuple[str, str]], bool]] = [([], True)] if per_process else []
        for slot, uid in enumerate(e.holders):
            h = node.holders[uid]
            attrs = [("container", h.container), ("namespace", h.namespace), ("pod", h.name)]
            if per_process:
                attrs.append(("pod_uid", h.uid))
            if node.shared:
                attrs.append(("vgpu", str(slot)))
            attrs += sorted((prom_label(k), v) for k, v in h.labels.items())
            out.append((attrs, not per_process))
        return out

    # -----------------------------------------------------------------------------------------------
    # kube-state-metrics

    def ksm(self) -> str:
        with self.lock:
            nodes, pods, jobs, workloads = self.nodes, self.pods, self.jobs, self.workloads
        fam: dict[str, list[str]] = {}

        def add(name: str, labels: list[tuple[str, str]], value: float) -> None:
            fam.setdefault(name, []).append(f"{name}{{{_labels(labels)}}} {_num(value)}")

        for n in nodes:
            meta = n["metadata"]
            node_labels = meta.get("labels") or {}
            info = n.get("status", {}).get("nodeInfo") or {}
            add(cv.KSM_NODE_INFO, [("node", meta["name"]), *((label, info.get(key, "")) for label, key in NODE_INFO_LABELS),
                                   ("provider_id", n.get("spec", {}).get("providerID", ""))], 1)
            add(cv.KSM_NODE_LABELS, [("node", meta["name"]), *sorted((ksm_label(k), v) for k, v in node_labels.items()
                                                                     if k in NODE_LABELS)], 1)
            for res, q in sorted((n.get("status", {}).get("allocatable") or {}).items()):
                unit = "core" if res == "cpu" else "byte" if res in ("memory", "ephemeral-storage") or res.startswith("hugepages-") else "integer"
                add(cv.KSM_NODE_ALLOCATABLE, [("node", meta["name"]), ("resource", ksm_resource(res)),
                                                     ("unit", unit)], parse_quantity(q))
        for p in pods:
            meta = p["metadata"]
            ids = [("namespace", meta["namespace"]), ("pod", meta["name"]), ("uid", meta["uid"])]
            add(cv.KSM_POD_LABELS, ids + sorted((ksm_label(k), v) for k, v in (meta.get("labels") or {}).items()
                                                 if k in POD_LABELS), 1)
            phase = p.get("status", {}).get("phase", "Pending")
            for ph in PHASES:
                add(cv.KSM_POD_STATUS_PHASE, ids + [("phase", ph)], 1 if ph == phase else 0)
            if meta.get("deletionTimestamp"):
                add(cv.KSM_POD_DELETION_TIMESTAMP, ids, _unix(meta["deletionTimestamp"]))
        for j in jobs:
            meta = j["metadata"]
            for cond in j.get("status", {}).get("conditions") or []:
                name = {"Complete": "kube_job_complete", "Failed": "kube_job_failed"}.get(cond.get("type"))
                if name:
                    for status in ("true", "false", "unknown"):
                        add(name, [("namespace", meta["namespace"]), ("job_name", meta["name"]), ("condition", status)],
                            1 if cond.get("status", "").lower() == status else 0)
        gvk = uw.KUEUE_WORKLOAD_GVK
        for w in workloads:
            meta = w["metadata"]
            owner = (meta.get("ownerReferences") or [{}])[0]
            ids = [("customresource_group", gvk["group"]), ("customresource_kind", gvk["kind"]),
                   ("customresource_version", gvk["version"]), ("namespace", meta["namespace"]),
                   ("owner_kind", owner.get("kind", "")), ("owner_name", owner.get("name", "")),
                   ("workload", meta["name"])]
            for cond in w.get("status", {}).get("conditions") or []:
                add(uw.WORKLOAD_CONDITION_METRIC, ids + [("reason", cond.get("reason", "")), ("type", cond.get("type", ""))],
                    1 if str(cond.get("status", "")).lower() == "true" else 0)
        helps = {
            cv.KSM_NODE_INFO: "Information about a cluster node.",
            cv.KSM_NODE_LABELS: "Kubernetes labels converted to Prometheus labels.",
            cv.KSM_NODE_ALLOCATABLE: "The allocatable for different resources of a node that are available for scheduling.",
            cv.KSM_POD_LABELS: "Kubernetes labels converted to Prometheus labels.",
            cv.KSM_POD_STATUS_PHASE: "The pods current phase.",
            cv.KSM_POD_DELETION_TIMESTAMP: "Unix deletion timestamp",
            "kube_job_complete": "The job has completed its execution.",
            "kube_job_failed": "The job has failed its execution.",
            uw.WORKLOAD_CONDITION_METRIC: "The Workload's status conditions (1: True).",
        }
        out = []
        for name, help_ in helps.items():
            out += [f"# HELP {name} {help_}", f"# TYPE {name} gauge", *fam.get(name, [])]
        return "\n".join(out) + "\n"


def _unix(stamp: str) -> float:
    return float(calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")))
