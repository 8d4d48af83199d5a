"""The simulated GPU nodes' devices (each GPU, or MIG instance of one) and the pods holding them, as the GPU
telemetry (localcluster/telemetry.py) reports them: which device a pod is given, how busy it is (the pod's
SIM_GPU_BUSY_ANNOTATION) and the power that follows."""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass, field
from typing import Any, Mapping

from gpu_platform import catalog, conventions as cv
from gpu_platform.plan import PoolPlan

# Board power of the emulated models at idle and at full activity (W): what DCGM_FI_DEV_POWER_USAGE follows.
IDLE_WATTS, BUSY_WATTS = 70.0, 650.0
HOLDING_PHASES = ("Pending", "Running")  # a pod holds its devices from admission by the kubelet to its end


def busy_fraction(pod: Mapping[str, Any]) -> float:
    """The pod's declared busy fraction (SIM_GPU_BUSY_ANNOTATION), clamped to 0..1; the default when absent or
    not a number (the job template refuses such values; a hand-written pod may carry anything)."""
    raw = (pod.get("metadata", {}).get("annotations") or {}).get(cv.SIM_GPU_BUSY_ANNOTATION)
    try:
        value = float(raw) if raw is not None else cv.SIM_GPU_BUSY_DEFAULT
    except ValueError:
        return cv.SIM_GPU_BUSY_DEFAULT
    return min(1.0, max(0.0, value)) if math.isfinite(value) else cv.SIM_GPU_BUSY_DEFAULT


@dataclass
class Entity:
    """One DCGM entity: a GPU, or a MIG instance of one, and the pods holding its slots."""

    gpu: int
    uuid: str
    instance: int | None       # GPU_I_ID of a MIG instance
    slots: int                 # 1, or the time-slicing replicas
    holders: list[str] = field(default_factory=list)   # pod uids, one per slot held
    energy_mj: float = 0.0


@dataclass
class Holder:
    uid: str
    namespace: str
    name: str
    container: str
    labels: Mapping[str, str]
    busy: float


class GpuNode:
    """A simulated GPU node's devices and who holds them."""

    def __init__(self, name: str, pool: PoolPlan):
        self.name, self.pool = name, pool
        self.model = catalog.ACCELERATORS[pool.accelerator].model
        self.memory_mib = catalog.ACCELERATORS[pool.accelerator].memory_gb * 1024
        per_gpu = pool.units_per_gpu if pool.sharing_mode == "mig" else 1
        slots = pool.units_per_gpu if pool.sharing_mode == "time-slicing" else 1
        self.entities = [
            Entity(g, f"GPU-{uuid.uuid5(uuid.NAMESPACE_URL, f'gpu-platform/{name}/gpu/{g}')}",
                   (i + 1) if pool.sharing_mode == "mig" else None, slots)
            for g in range(pool.gpus_per_node) for i in range(per_gpu)
        ]
        self.holders: dict[str, Holder] = {}

    def hold(self, holder: Holder, units: int) -> None:
        """Give a new pod `units` slots: the lowest free ones, or for replicas the least used GPUs."""
        self.holders[holder.uid] = holder
        for _ in range(units):
            free = [e for e in self.entities if len(e.holders) < e.slots]
            if not free:
                return
            e = min(free, key=lambda x: (len(x.holders), x.gpu, x.instance or 0)) if self.shared else free[0]
            e.holders.append(holder.uid)

    def release(self, uid: str) -> None:
        self.holders.pop(uid, None)
        for e in self.entities:
            e.holders = [h for h in e.holders if h != uid]

    @property
    def shared(self) -> bool:
        return self.pool.sharing_mode == "time-slicing"

    def active(self, e: Entity) -> float:
        """Graphics-engine activity of an entity: its holder's fraction, or on a time-sliced GPU the pods'
        fractions weighted by the replicas they hold (useful_work's busy GPUs come out as declared)."""
        if not e.holders:
            return 0.0
        if self.shared:
            return min(1.0, sum(self.holders[h].busy for h in e.holders) / e.slots)
        return self.holders[e.holders[0]].busy

    def tick(self, seconds: float) -> None:
        for e in self.entities:
            e.energy_mj += self.power(e) * seconds * 1000

    def power(self, e: Entity) -> float:
        share = 1.0 / (self.pool.units_per_gpu if self.pool.sharing_mode == "mig" else 1)
        return (IDLE_WATTS + (BUSY_WATTS - IDLE_WATTS) * self.active(e)) * share
