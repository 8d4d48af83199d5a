"""The simulated nodes' dcgm-exporter series have the shape of the exporter the GPU Operator v26.7.0 runs,
dcgm-exporter 4.8.3 (chart values dcgmExporter.version 4.6.0-4.8.3-distroless): the node's name under `hostname`
(PR #655), and under virtual GPUs (the `local` stack has a time-sliced pool) a device nobody holds keeps its own
series, framebuffer used and GPU utilization come per process as well (PR #594: the device's own series plus one
per pod with `pod_uid`, reading 0 without the host's PID namespace), the allowlisted pod labels are copied, and a
MIG instance has no GPU utilization (NVIDIA/dcgm-exporter internal/pkg/transformation/kubernetes.go Process,
createPerProcessMetrics; internal/pkg/rendermetrics/render_metrics.go metricLabels)."""

from __future__ import annotations

from localcluster.telemetry import Telemetry
from tests.conftest import plan_of
from tests.unit.localcluster.test_telemetry import node, pod, samples

TEAM_LABELS = {"gpu-platform.io/team": "vision", "kueue.x-k8s.io/queue-name": "default", "other": "x"}


def cluster() -> Telemetry:
    """train-0: a 2-GPU pod at 50% (6 GPUs free); infer-0: one pod with 2 of GPU 0's 4 replicas at 100%;
    notebooks-0: a 1-slice MIG pod."""
    t = Telemetry(plan_of("local"))
    assert t.virtual
    t.update([node("train-0", "train"), node("infer-0", "infer"), node("notebooks-0", "notebooks")],
             [pod("two", "vision", "train-0", "nvidia.com/gpu", 2, "0.5", labels=TEAM_LABELS),
              pod("web", "serving", "infer-0", "nvidia.com/gpu.shared", 2, "1"),
              pod("nb", "vision", "notebooks-0", "nvidia.com/mig-1g.10gb", 1, "0.7")], [])
    return t


def test_the_node_is_named_under_hostname() -> None:
    s = samples(cluster().dcgm("train-0"), "DCGM_FI_DEV_POWER_USAGE")
    assert {lb.get("hostname") for lb, _ in s} == {"train-0"}
    assert all("Hostname" not in lb for lb, _ in s)


def test_a_gpu_nobody_holds_keeps_its_own_series() -> None:
    s = samples(cluster().dcgm("train-0"), "DCGM_FI_PROF_GR_ENGINE_ACTIVE")
    assert sorted((lb["gpu"], lb.get("pod"), v) for lb, v in s) == [
        ("0", "two", 0.5), ("1", "two", 0.5), ("2", None, 0.0), ("3", None, 0.0), ("4", None, 0.0),
        ("5", None, 0.0), ("6", None, 0.0), ("7", None, 0.0)]


def test_framebuffer_and_utilization_are_per_process_beside_the_device_s_own_series() -> None:
    text = cluster().dcgm("train-0")
    for field, own in (("DCGM_FI_DEV_FB_USED", 0.5 * 80 * 1024), ("DCGM_FI_DEV_GPU_UTIL", 50)):
        gpu0 = [(lb.get("pod"), lb.get("pod_uid"), v) for lb, v in samples(text, field) if lb["gpu"] == "0"]
        assert sorted(gpu0, key=str) == sorted([(None, None, own), ("two", "uid-two", 0.0)], key=str), field
    # a field that is not per process: one copy per pod, without pod_uid
    gr = [lb for lb, _ in samples(text, "DCGM_FI_PROF_GR_ENGINE_ACTIVE") if lb["gpu"] == "0"]
    assert [(lb["pod"], "pod_uid" in lb) for lb in gr] == [("two", False)]


def test_a_time_sliced_pod_has_a_per_process_series_per_replica() -> None:
    """web's two replicas (on the two least used L4s, as the telemetry places replicas): a per-process series for
    each, and each of those devices' own series beside them."""
    s = samples(cluster().dcgm("infer-0"), "DCGM_FI_DEV_FB_USED")
    per_process = sorted((lb["gpu"], lb["vgpu"], lb["pod_uid"], v) for lb, v in s if lb.get("pod") == "web")
    assert per_process == [("0", "0", "uid-web", 0.0), ("1", "0", "uid-web", 0.0)]
    own = sorted((lb["gpu"], v > 0) for lb, v in s if "pod" not in lb)
    assert own == [("0", True), ("1", True), ("2", False), ("3", False)]


def test_the_allowlisted_pod_labels_are_copied_under_virtual_gpus() -> None:
    (labels, _), *_ = [(lb, v) for lb, v in samples(cluster().dcgm("train-0"), "DCGM_FI_PROF_GR_ENGINE_ACTIVE")
                       if lb.get("pod") == "two"]
    assert (labels["gpu_platform_io_team"], labels["kueue_x_k8s_io_queue_name"]) == ("vision", "default")
    assert "other" not in labels


def test_a_mig_instance_has_no_gpu_utilization() -> None:
    text = cluster().dcgm("notebooks-0")
    assert samples(text, "DCGM_FI_DEV_GPU_UTIL") == []
    assert samples(text, "DCGM_FI_DEV_MEM_COPY_UTIL") == []
    fb = [(lb["GPU_I_ID"], lb.get("pod")) for lb, _ in samples(text, "DCGM_FI_DEV_FB_USED")
          if (lb["gpu"], lb["GPU_I_ID"]) == ("0", "1")]
    assert sorted(fb, key=str) == sorted([("1", None), ("1", "nb")], key=str)
