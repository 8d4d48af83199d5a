"""When the alerts fire: the thresholds and `for` durations, in one module so the docs can quote them."""

from __future__ import annotations


# Thresholds (what "idle" and "too long" mean), in one place so the docs can quote them.
IDLE_ENGINE_ACTIVE = 0.01  # DCGM_FI_PROF_GR_ENGINE_ACTIVE below 1% is an idle GPU
IDLE_FOR = "30m"
# A team holds GPUs it does not use: over the last hour at least this share of its allocated GPU-hours in a
# pool were idle, and at least this many GPU-hours (one GPU idle all hour), for TEAM_IDLE_FOR.
TEAM_IDLE_SHARE = 0.5
TEAM_IDLE_MIN_GPU_HOURS = 1.0
TEAM_IDLE_FOR = "15m"
PENDING_FOR = "1h"
AT_QUOTA_FOR = "30m"
NODE_GPUS_MISSING_FOR = "15m"
EXPORTER_DOWN_FOR = "10m"
BUSY_INPUT_MISSING_FOR = "15m"
