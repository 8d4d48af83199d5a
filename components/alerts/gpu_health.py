"""The `gpu-platform.gpu-health` group: the XIDs that mean the hardware needs attention, uncorrectable ECC errors,
row-remap failures, thermal and power-brake throttling and NVLink errors, one alert per GPU with what to do."""

from __future__ import annotations

from dataclasses import dataclass

from gpu_platform import conventions as cv

from .record_names import NODE_POOL
from .rules import Alert, Group
from .sources import GPU_KEY

# NVML clock-event (throttle) reason bits in DCGM_FI_DEV_CLOCKS_EVENT_REASONS (nvml.h
# nvmlClocksEventReason*): SwThermalSlowdown 0x20, HwThermalSlowdown 0x40, HwPowerBrakeSlowdown 0x80.
# A power *cap* (SwPowerCap 0x4) is normal at full load and deliberately not alerted on.
THERMAL_BITS = (0x20, 0x40)
POWER_BRAKE_BITS = (0x80,)


@dataclass(frozen=True, slots=True)
class Xid:
    code: int
    name: str
    meaning: str
    action: str


# The XIDs that mean the hardware needs attention, from NVIDIA's "XID Errors" catalogue
# (docs.nvidia.com/deploy/xid-errors) and the GPU memory error management guide (row remapping, A100+).
CRITICAL_XIDS: tuple[Xid, ...] = (
    Xid(48, "DoubleBitEcc", "a double-bit (uncorrectable) ECC error",
        "Drain the node, then reset the GPU (or reboot the node). If XID 48 repeats on the same GPU, open a "
        "hardware case with AWS and replace the instance."),
    Xid(63, "RowRemapPending", "an ECC page retirement / row-remapping event: a faulty memory row was "
        "recorded and is remapped at the next GPU reset",
        "Finish or checkpoint the GPU's workloads, drain the node and reset the GPU so the remapping takes "
        f"effect. Check {cv.DCGM_ROW_REMAP_FAILURE} and the remapped-row counters on the GPU health dashboard."),
    Xid(64, "RowRemapFailure", "an ECC page retirement / row-remapper recording failure",
        "Drain the node now and reset the GPU. If the error persists after the reset, the GPU is out of "
        "spare rows: replace the instance."),
    Xid(74, "NvlinkError", "an NVLink error (link training or data failure)",
        "Drain the node; multi-GPU jobs on it run degraded or hang. Reset the GPUs (reboot the node). If "
        "XID 74 returns, replace the instance (NVLink/NVSwitch hardware)."),
    Xid(79, "FallenOffBus", "the GPU has fallen off the PCIe bus and is unreachable",
        "Cordon and drain the node and reboot it; the GPU cannot be recovered in place. If it happens again "
        "on the same instance, replace the instance."),
    Xid(94, "ContainedEccError", "a contained uncorrectable memory error: the affected application was "
        "terminated, other applications on the GPU keep running",
        "Let the affected job restart elsewhere; drain the node at the next opportunity and reset the GPU "
        "so the faulty row is remapped."),
    Xid(95, "UncontainedEccError", "an uncontained uncorrectable memory error: every application on the "
        "GPU is affected",
        "Drain the node now and reset the GPU; restart the affected jobs. Replace the instance if the GPU "
        "has no spare rows left (row-remap failure)."),
)


def _with_pool(expr: str) -> str:
    """`expr` with the node's pool attached, keeping series whose node has no known pool (a health alert
    must not vanish because kube-state-metrics lacks the pool label)."""
    return f"(({expr}) * on (node) group_left (pool) {NODE_POOL}) or on (node) ({expr})"


def _per_gpu(expr: str) -> str:
    return f"max by ({GPU_KEY}) ({_with_pool(expr)})"


def _bit_set(metric: str, bits: tuple[int, ...]) -> str:
    """PromQL has no bitwise AND: bit b of x is set when floor(x / b) is odd."""
    return " or ".join(f"floor({metric} / {b}) % 2 == 1" for b in bits)


def gpu_health_alerts() -> Group:
    rules: list[Alert] = []
    for x in CRITICAL_XIDS:
        xid_count = f'{cv.DCGM_XID_ERRORS_COUNT}{{xid="{x.code:d}"}}'
        rules.append(Alert(
            alert=f"GpuXid{x.code}{x.name}",
            expr=f"{_per_gpu(xid_count)} > 0",
            severity="critical",
            summary=f"XID {x.code} on GPU {{{{ $labels.gpu }}}} of {{{{ $labels.node }}}} (pool {{{{ $labels.pool }}}})",
            description=f"The NVIDIA driver reported XID {x.code}, {x.meaning}.",
            runbook=x.action,
        ))
    rules += [
        Alert(
            alert="GpuDoubleBitEccErrors",
            expr=f"{_per_gpu(f'increase({cv.DCGM_ECC_DBE_VOLATILE}[10m])')} > 0",
            severity="critical",
            summary="Double-bit ECC errors on GPU {{ $labels.gpu }} of {{ $labels.node }} (pool {{ $labels.pool }})",
            description="{{ $value }} uncorrectable (double-bit) ECC errors in the last 10 minutes. Data in GPU "
                        "memory was corrupted; the job on this GPU has likely crashed or produced bad results.",
            runbook="Drain the node and reset the GPU. Check the XID 48/63/64 alerts and the remapped-row "
                    "counters; if errors recur after the reset or row remapping failed, replace the instance.",
        ),
        Alert(
            alert="GpuRowRemapFailure",
            expr=f"{_per_gpu(cv.DCGM_ROW_REMAP_FAILURE)} > 0",
            severity="critical",
            summary="Row remapping failed on GPU {{ $labels.gpu }} of {{ $labels.node }} (pool {{ $labels.pool }})",
            description="The GPU could not remap a faulty memory row: it has run out of spare rows and will "
                        "keep producing uncorrectable memory errors.",
            runbook="Cordon and drain the node now and replace the instance (terminate it so the node group "
                    "launches a new one); a GPU reset does not fix a remap failure.",
        ),
        Alert(
            alert="GpuThermalThrottling",
            expr=f"{_per_gpu(_bit_set(cv.DCGM_CLOCKS_EVENT_REASONS, THERMAL_BITS))} > 0",
            for_="10m",
            severity="warning",
            summary="GPU {{ $labels.gpu }} of {{ $labels.node }} (pool {{ $labels.pool }}) is thermally throttled",
            description="The GPU has lowered its clocks for temperature (software or hardware thermal slowdown) "
                        "for 10 minutes; jobs on it, and every job synchronised with it, run slower.",
            runbook=f"Check {cv.DCGM_GPU_TEMP} and {cv.DCGM_MEMORY_TEMP} on the GPU health dashboard. One hot "
                    "GPU on a node points at the instance (open an AWS case, replace it); all GPUs of a node "
                    "hot points at cooling in that host. Drain the node if training jobs stall.",
        ),
        Alert(
            alert="GpuPowerThrottling",
            expr=f"{_per_gpu(_bit_set(cv.DCGM_CLOCKS_EVENT_REASONS, POWER_BRAKE_BITS))} > 0",
            for_="5m",
            severity="warning",
            summary="GPU {{ $labels.gpu }} of {{ $labels.node }} (pool {{ $labels.pool }}) is power-brake throttled",
            description="The hardware power brake has slowed the GPU for 5 minutes (an external power-supply "
                        "signal, not the normal power cap at full load).",
            runbook="Replace the instance if it persists: the power brake is asserted by the host, not by the "
                    "workload. Check the power panel of the GPU health dashboard for other GPUs of the node.",
        ),
        Alert(
            alert="GpuNvlinkErrors",
            expr=_per_gpu(" or ".join(
                f"sum by (node, gpu, UUID, modelName) (increase({m}[15m])) > 0"
                for m in (cv.DCGM_NVLINK_RECOVERY_ERRORS, cv.DCGM_NVLINK_REPLAY_ERRORS, cv.DCGM_NVLINK_CRC_DATA_ERRORS,
                          cv.DCGM_NVLINK_CRC_FLIT_ERRORS)
            )) + " > 0",
            severity="warning",
            summary="NVLink errors on GPU {{ $labels.gpu }} of {{ $labels.node }} (pool {{ $labels.pool }})",
            description="NVLink recovery, replay or CRC errors increased in the last 15 minutes ({{ $value }}). "
                        "Collective operations over the link slow down or hang.",
            runbook="Watch whether errors keep growing on the GPU health dashboard's NVLink panel. A steady rise, "
                    "or XID 74, means the link hardware is failing: drain the node and replace the instance.",
        ),
    ]
    return Group("gpu-platform.gpu-health", tuple(rules))
