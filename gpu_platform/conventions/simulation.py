"""The simulated nodes and pods of the live local cluster and `simulate`: KWOK's node annotation and the
platform's sim.* annotations and label (a run's duration, outcome, readiness, GPU busy fraction, a node's
failure). Meaningless on a real cluster."""

from __future__ import annotations

from .labels import PREFIX


# ==== Simulated nodes and pods (the live local cluster and `simulate`) ======================================
# KWOK manages nodes with this annotation (kwok --manage-nodes-with-annotation-selector) and plays
# their kubelet.
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_NODE_ANNOTATION_VALUE = "fake"
# What kind of node a local cluster's node is, for `kubectl get nodes -L gpu-platform.io/node-kind`: "real" on the
# kubelet node (localcluster/realnode); the simulated ones carry KWOK_NODE_ANNOTATION instead.
NODE_KIND_LABEL = f"{PREFIX}/node-kind"
NODE_KIND_REAL = "real"
# A pod on a simulated node finishes (Succeeded) this long after it starts Running: a Go duration such as
# "90s" (KWOK Stage delay.durationFrom, pkg/utils/lifecycle/value_duration_from.go). Without it the pod
# runs until deleted. Meaningless on a real cluster, where the container's command decides.
SIM_DURATION_ANNOTATION = f"sim.{PREFIX}/duration"
# ... and, set to "failed", fails (phase Failed, exit code 1) at that time instead: a run that crashed.
SIM_OUTCOME_ANNOTATION = f"sim.{PREFIX}/outcome"
SIM_OUTCOME_FAILED = "failed"
# ... and, set to "true", never becomes Ready (an image that never pulls, a node that never joins): the
# all-or-nothing (waitForPodsReady) path.
SIM_NEVER_READY_ANNOTATION = f"sim.{PREFIX}/never-ready"
# A simulated node with this annotation set to "true" has failed: KWOK reports it NotReady (Ready False)
# until the annotation goes, and the node lifecycle controller acts on it as on a real NotReady node. Its
# pods are still played (deleted when evicted).
SIM_NODE_FAILED_ANNOTATION = f"sim.{PREFIX}/node-failed"
# A pod on a simulated node keeps its GPUs' engines busy this fraction of the time (a decimal in 0..1): what
# the live cluster's DCGM-shaped telemetry reports for its GPUs (localcluster/telemetry.py), so a run's
# allocated-but-idle time is known. Without it a pod's GPUs are busy all the time (SIM_GPU_BUSY_DEFAULT).
# Set by the job template's --gpu-busy and a trace's `busy` column; meaningless on a real cluster.
SIM_GPU_BUSY_ANNOTATION = f"sim.{PREFIX}/gpu-busy"
SIM_GPU_BUSY_DEFAULT = 1.0
# `simulate` labels every pod template of a replayed trace job with the job's name, so its pods are found
# whichever controller made them (a JobSet's Jobs, KubeRay's head and workers, a LeaderWorkerSet's groups).
SIM_JOB_LABEL = f"sim.{PREFIX}/job"
