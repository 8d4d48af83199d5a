"""KWOK's Stages: how a simulated node's kubelet behaves (KWOK Stage API, kwok.x-k8s.io/v1alpha1,
pkg/apis/v1alpha1/stage_types.go of sigs.k8s.io/kwok v0.8.0).

- a node that is not Ready becomes Ready (the script registers nodes with their full status already);
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


def _run_time() -> dict[str, Any]:
    """The delay counts from when the pod is seen Running: the job's run time."""
    return {"durationMilliseconds": 0, "durationFrom": {"expressionFrom": _annotation(cv.SIM_DURATION_ANNOTATION)}}


def stages() -> list[dict[str, Any]]:
    ready = '.status.conditions.[] | select( .type == "Ready" ) | .status'
    return [
        _stage("gpu-platform-node-ready", "Node",
               [{"key": ready, "operator": "NotIn", "values": ["True"]}],
               {"statusTemplate": NODE_READY_STATUS}),
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


def config_yaml() -> str:
    return yaml.dump_all(stages(), Dumper=_Dumper, sort_keys=False)
