"""KWOK's Stages: how a simulated node's kubelet behaves (KWOK Stage API, kwok.x-k8s.io/v1alpha1,
pkg/apis/v1alpha1/stage_types.go of sigs.k8s.io/kwok v0.8.0).

- a node that is not Ready becomes Ready (the script registers nodes with their full status already), and a
  Ready node heartbeats: its Ready condition's lastHeartbeatTime is renewed every 20-25 s, as a kubelet
  without node leases does, so the node lifecycle controller (on, as on EKS) keeps it Ready
  (kubernetes.io/docs/concepts/architecture/nodes, "Heartbeats"; node-monitor-grace-period 50 s);
- a node annotated SIM_NODE_FAILED_ANNOTATION reports NotReady at once (Ready False, reason
  KubeletNotReady) and keeps reporting it, as a kubelet whose runtime, network or GPU driver broke; the node
  lifecycle controller then taints it and evicts its pods as it would a real one. Without the annotation it
  is Ready again at once (a repaired node). The failure is a Stage of its own because a status written from
  outside is overwritten by the next heartbeat (see docs/architecture.md, "A failed node stops its whole
  job, and only the job's own code fails it");
- a pod bound to a simulated node starts at once: Running, Ready, containers running (unless it carries
  SIM_NEVER_READY_ANNOTATION: then it stays Pending, like a pod whose image never pulls);
- a Running pod with SIM_DURATION_ANNOTATION succeeds that long after it started, so Jobs complete and
  give their quota back (or fails then, with SIM_OUTCOME_ANNOTATION=failed: a crashed run); without it
  the pod runs until deleted (a server, a notebook);
- a pod being deleted (a preempted or finished job's pod) disappears, as a kubelet would confirm it.
"""

from __future__ import annotations

from typing import Any

import yaml

from gpu_platform import conventions as cv

API_VERSION = "kwok.x-k8s.io/v1alpha1"


def _annotation(key: str) -> str:
    return f'.metadata.annotations["{key}"]'


def _stage(name: str, kind: str, selector: list[dict[str, Any]], nxt: dict[str, Any],
           delay: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "resourceRef": {"apiGroup": "v1", "kind": kind},
        "selector": {"matchExpressions": selector},
        "next": nxt,
    }
    if delay:
        spec["delay"] = delay
    return {"apiVersion": API_VERSION, "kind": "Stage", "metadata": {"name": name}, "spec": spec}


NOT_DELETED = {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"}

RUNNING_STATUS = """\
{{ $now := Now }}
conditions:
- {type: Initialized, status: "True", lastTransitionTime: {{ $now | Quote }}}
- {type: Ready, status: "True", lastTransitionTime: {{ $now | Quote }}}
- {type: ContainersReady, status: "True", lastTransitionTime: {{ $now | Quote }}}
- {type: PodScheduled, status: "True", lastTransitionTime: {{ $now | Quote }}}
containerStatuses:
{{ range .spec.containers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  ready: true
  started: true
  restartCount: 0
  state: {running: {startedAt: {{ $now | Quote }}}}
{{ end }}
initContainerStatuses:
{{ range .spec.initContainers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  ready: true
  restartCount: 0
  state: {terminated: {exitCode: 0, reason: Completed, startedAt: {{ $now | Quote }}, finishedAt: {{ $now | Quote }}}}
{{ end }}
phase: Running
startTime: {{ $now | Quote }}
"""

def _terminated_status(pod_reason: str, exit_code: int, container_reason: str, phase: str) -> str:
    """The status template of a pod whose containers have all exited: Succeeded and Failed differ only in
    the reasons, the exit code and the phase."""
    return f"""\
{{{{ $now := Now }}}}
conditions:
- {{type: Initialized, status: "True", lastTransitionTime: {{{{ $now | Quote }}}}}}
- {{type: Ready, status: "False", reason: {pod_reason}, lastTransitionTime: {{{{ $now | Quote }}}}}}
- {{type: ContainersReady, status: "False", reason: {pod_reason}, lastTransitionTime: {{{{ $now | Quote }}}}}}
- {{type: PodScheduled, status: "True", lastTransitionTime: {{{{ $now | Quote }}}}}}
containerStatuses:
{{{{ range .spec.containers }}}}
- name: {{{{ .name | Quote }}}}
  image: {{{{ .image | Quote }}}}
  ready: false
  started: false
  restartCount: 0
  state: {{terminated: {{exitCode: {exit_code}, reason: {container_reason}, finishedAt: {{{{ $now | Quote }}}}}}}}
{{{{ end }}}}
phase: {phase}
"""


SUCCEEDED_STATUS = _terminated_status("PodCompleted", 0, "Completed", "Succeeded")
FAILED_STATUS = _terminated_status("PodFailed", 1, "Error", "Failed")

NODE_READY_STATUS = """\
{{ $now := Now }}
conditions:
- {type: Ready, status: "True", reason: KubeletReady, message: "simulated node (KWOK)", lastHeartbeatTime: {{ $now | Quote }}, lastTransitionTime: {{ $now | Quote }}}
"""

# A heartbeat renews lastHeartbeatTime only: the transition time stays when the node became Ready.
NODE_HEARTBEAT_STATUS = """\
{{ $now := Now }}
conditions:
{{ range .status.conditions }}{{ if eq .type "Ready" }}
- {type: Ready, status: "True", reason: KubeletReady, message: "simulated node (KWOK)", lastHeartbeatTime: {{ $now | Quote }}, lastTransitionTime: {{ .lastTransitionTime | Quote }}}
{{ end }}{{ end }}
"""
# A failed node's Ready condition: False from the first time it is written, keeping that transition time.
NODE_FAILED_STATUS = """\
{{ $now := Now }}
conditions:
{{ range .status.conditions }}{{ if eq .type "Ready" }}
- {type: Ready, status: "False", reason: KubeletNotReady, message: "simulated node failure (sim.gpu-platform.io/node-failed)", lastHeartbeatTime: {{ $now | Quote }}, lastTransitionTime: {{ if eq .status "False" }}{{ .lastTransitionTime | Quote }}{{ else }}{{ $now | Quote }}{{ end }}}
{{ end }}{{ end }}
"""
# Every 20 s plus up to 5 s of jitter (Stage delay: durationMilliseconds, then up to jitterDurationMilliseconds,
# pkg/apis/v1alpha1/stage_types.go): well inside the node lifecycle controller's 50 s grace period.
HEARTBEAT_DELAY = {"durationMilliseconds": 20000, "jitterDurationMilliseconds": 25000}


def _run_time() -> dict[str, Any]:
    """The delay counts from when the pod is seen Running: the job's run time."""
    return {"durationMilliseconds": 0, "durationFrom": {"expressionFrom": _annotation(cv.SIM_DURATION_ANNOTATION)}}


NODE_NOT_FAILED = {"key": _annotation(cv.SIM_NODE_FAILED_ANNOTATION), "operator": "NotIn", "values": ["true"]}
NODE_FAILED = {"key": _annotation(cv.SIM_NODE_FAILED_ANNOTATION), "operator": "In", "values": ["true"]}


def stages() -> list[dict[str, Any]]:
    ready = '.status.conditions.[] | select( .type == "Ready" ) | .status'
    return [
        _stage("gpu-platform-node-ready", "Node",
               [{"key": ready, "operator": "NotIn", "values": ["True"]}, NODE_NOT_FAILED],
               {"statusTemplate": NODE_READY_STATUS}),
        _stage("gpu-platform-node-heartbeat", "Node",
               [{"key": ready, "operator": "In", "values": ["True"]}, NODE_NOT_FAILED],
               {"statusTemplate": NODE_HEARTBEAT_STATUS}, delay=HEARTBEAT_DELAY),
        _stage("gpu-platform-node-fail", "Node",
               [{"key": ready, "operator": "NotIn", "values": ["False"]}, NODE_FAILED],
               {"statusTemplate": NODE_FAILED_STATUS}),
        _stage("gpu-platform-node-failed-heartbeat", "Node",
               [{"key": ready, "operator": "In", "values": ["False"]}, NODE_FAILED],
               {"statusTemplate": NODE_FAILED_STATUS}, delay=HEARTBEAT_DELAY),
        _stage("gpu-platform-pod-running", "Pod", [
            NOT_DELETED,
            {"key": ".spec.nodeName", "operator": "Exists"},
            {"key": ".status.phase", "operator": "In", "values": ["Pending"]},
            {"key": _annotation(cv.SIM_NEVER_READY_ANNOTATION), "operator": "NotIn", "values": ["true"]},
        ], {"statusTemplate": RUNNING_STATUS}),
        _stage("gpu-platform-pod-succeeded", "Pod", [
            NOT_DELETED,
            {"key": ".status.phase", "operator": "In", "values": ["Running"]},
            {"key": _annotation(cv.SIM_DURATION_ANNOTATION), "operator": "Exists"},
            {"key": _annotation(cv.SIM_OUTCOME_ANNOTATION), "operator": "NotIn", "values": [cv.SIM_OUTCOME_FAILED]},
        ], {"statusTemplate": SUCCEEDED_STATUS}, delay=_run_time()),
        _stage("gpu-platform-pod-failed", "Pod", [
            NOT_DELETED,
            {"key": ".status.phase", "operator": "In", "values": ["Running"]},
            {"key": _annotation(cv.SIM_DURATION_ANNOTATION), "operator": "Exists"},
            {"key": _annotation(cv.SIM_OUTCOME_ANNOTATION), "operator": "In", "values": [cv.SIM_OUTCOME_FAILED]},
        ], {"statusTemplate": FAILED_STATUS}, delay=_run_time()),
        _stage("gpu-platform-pod-deleted", "Pod",
               [{"key": ".metadata.deletionTimestamp", "operator": "Exists"}],
               {"delete": True, "finalizers": {"empty": True}}),
    ]


class _Dumper(yaml.SafeDumper):
    """Templates as literal blocks, so the file reads like the Stage documents KWOK's docs show."""


_Dumper.add_representer(
    str, lambda d, s: d.represent_scalar("tag:yaml.org,2002:str", s, style="|" if "\n" in s else None))


# KWOK plays node and pod stages through a fixed number of workers each, 4 by default
# (kubernetes-sigs/kwok v0.8.0 pkg/apis/config/v1alpha1/kwok_configuration_types.go NodePlayStageParallelism,
# PodPlayStageParallelism; zz_generated.defaults.go). A heartbeat is one node-status PATCH, so 4 workers at the
# ~0.25 s a PATCH takes on a loaded 2-core machine play ~16 heartbeats/s, while 1,000 nodes every 20-25 s need
# ~45/s: heartbeats fell behind the node lifecycle controller's 50 s grace period and a third of the seed-scale
# cluster went NotReady (docs/performance.md, Seed scale: live). Idle workers cost nothing on a small cluster.
PLAY_STAGE_PARALLELISM = 32

# A KwokConfiguration read from --config is not defaulted: KWOK applies its defaults only when no configuration
# is given (kwok v0.8.0 pkg/config/vars.go GetKwokConfiguration; pkg/config/config.go Load converts without
# them). So every option whose default matters is written here with upstream's default value
# (pkg/apis/config/v1alpha1/zz_generated.defaults.go). podsOnNodeSyncParallelism matters most: at 0 no
# worker lists a node's pods when KWOK starts managing it (pkg/kwok/controllers/controller.go
# podsOnNodeSyncWorker), so a pod KWOK reads before it manages the pod's node (on a restart of KWOK or the
# cluster: a pod created or deleted while KWOK was down) is never played: a new run stays Pending, a deleted one
# Running.
UPSTREAM_DEFAULTS: dict[str, Any] = {
    "podsOnNodeSyncParallelism": 1,
    "enablePodsOnNodeSyncListPager": True,
    "enablePodsOnNodeSyncStreamWatch": False,
    "nodeLeaseParallelism": 4,
    "enableDebuggingHandlers": True,
    "enableProfilingHandler": True,
    "enableContentionProfiling": False,
}


def kwok_configuration() -> dict[str, Any]:
    """KWOK's own options, read from the same --config file as the stages."""
    return {"apiVersion": "config.kwok.x-k8s.io/v1alpha1", "kind": "KwokConfiguration",
            "options": {**UPSTREAM_DEFAULTS,
                        "nodePlayStageParallelism": PLAY_STAGE_PARALLELISM,
                        "podPlayStageParallelism": PLAY_STAGE_PARALLELISM}}


def config_yaml() -> str:
    return yaml.dump_all([kwok_configuration(), *stages()], Dumper=_Dumper, sort_keys=False)
