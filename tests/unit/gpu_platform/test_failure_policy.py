"""What happens to a job on preemption, on its own SIGTERM, on a crash and on node loss: the job template's
podFailurePolicy, backoffLimit and grace period read as the Job controller reads them.

World: the spec layer only (no cluster). The Job controller's rules are upstream facts written out here
(kubernetes v1.33.13 pkg/controller/job): `_outcome` is matchPodFailurePolicy's order (the first matching rule
decides, a failed pod that matches none is counted), and `_preempted_pod_fails_job` is what that controller
does to a suspended Job's pods: deleteJobPods strips the tracking finalizer before the delete, so such a pod is
never counted, but getFailJobMessage still runs FailJob rules over every failed pod. The live proof with real
containers is the real node's (tests/live).
"""

from __future__ import annotations

from typing import Any

import pytest

from gpu_platform.jobs import JobRequest, job
from gpu_platform.plan import build_plan
from gpu_platform.spec import SpecError, load_platform
from gpu_platform.workload_templates import template
from tests.conftest import plan_of, platform_raw

SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"


def _matches(rule: dict[str, Any], exit_code: int | None, conditions: frozenset[str]) -> bool:
    if "onPodConditions" in rule:
        return any(c["type"] in conditions and c["status"] == "True" for c in rule["onPodConditions"])
    req = rule["onExitCodes"]
    if exit_code is None or exit_code == 0:
        # getMatchingContainerFromList: only non-zero exits of terminated containers are considered.
        return False
    inside = exit_code in req["values"]
    return inside if req["operator"] == "In" else not inside


def _outcome(policy: dict[str, Any], exit_code: int | None, conditions: frozenset[str] = frozenset()) -> str:
    """`Ignore`, `FailJob` or `Count` for a failed pod of the `main` container."""
    for rule in policy["rules"]:
        if _matches(rule, exit_code, conditions):
            return rule["action"]
    return "Count"


def _job_spec(nodes: int = 1, stack: str = "prod") -> dict[str, Any]:
    (j, *_) = job(plan_of(stack), JobRequest(team="llm-pretrain", pool="h100-train", gpus=8, nodes=nodes, name="t"))
    return j["spec"]


@pytest.mark.parametrize(("exit_code", "conditions", "expected"), [
    (1, frozenset(), "FailJob"),          # the application crashed: fail at once, no rerun on scarce GPUs
    (2, frozenset(), "FailJob"),
    (139, frozenset(), "FailJob"),        # SIGSEGV
    (143, frozenset(), "Count"),          # its own SIGTERM (liveness kill, `timeout`): bounded by backoffLimit
    (137, frozenset(), "Count"),          # SIGKILL: OOM or outlived its grace period
    (137, frozenset({"DisruptionTarget"}), "Ignore"),    # evicted from a lost node, drained, scheduler-preempted
    (1, frozenset({"TerminatedByKueue"}), "Ignore"),     # Kueue failed it: its node had failed
])
def test_each_way_a_pod_ends_is_read_as_the_template_promises(exit_code: int, conditions: frozenset[str],
                                                               expected: str) -> None:
    assert _outcome(_job_spec()["podFailurePolicy"], exit_code, conditions) == expected


@pytest.mark.parametrize("exit_code", (137, 143))
@pytest.mark.parametrize("nodes", (1, 2))
def test_a_preempted_job_is_requeued_not_failed_whatever_its_container_exits_with(exit_code: int, nodes: int) -> None:
    """Kueue preempts by suspending the Job; its pods get SIGTERM and, past the grace period, SIGKILL. They are no
    longer tracked (their finalizer went before the delete), so only a FailJob rule could end the Job: none may
    match the exit codes of a stopped container."""
    spec = _job_spec(nodes)
    assert _outcome(spec["podFailurePolicy"], exit_code) != "FailJob"


def test_a_container_that_keeps_dying_of_its_own_sigterm_stops_being_recreated() -> None:
    """Ignore never counts: a pod that exits 143 by itself must be counted, so that backoffLimit ends it."""
    single, gang = _job_spec(1), _job_spec(2)
    assert (single["backoffLimit"], gang["backoffLimit"]) == (3, 0)

    def tries_until_failed(spec: dict[str, Any]) -> int:
        counted = 0
        for attempt in range(1, 100):
            if _outcome(spec["podFailurePolicy"], 143) == "Count":
                counted += 1
            if counted > spec["backoffLimit"]:  # job_controller.go: exceedsBackoffLimit -> BackoffLimitExceeded
                return attempt
        return -1

    assert tries_until_failed(single) == 4
    assert tries_until_failed(gang) == 1


def test_the_grace_period_is_two_minutes_and_a_stack_can_set_it() -> None:
    assert _job_spec()["template"]["spec"]["terminationGracePeriodSeconds"] == 120
    raw = platform_raw("prod")
    raw["jobs"] = {**raw.get("jobs", {}), "terminationGracePeriodSeconds": 300}
    plan = build_plan(load_platform(raw), "us-east-1")
    (j, *_) = job(plan, JobRequest(team="llm-pretrain", pool="h100-train", gpus=8, name="t"))
    assert j["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 300


@pytest.mark.parametrize("value", (0, 3601))
def test_a_grace_period_out_of_range_is_refused_with_its_path(value: int) -> None:
    raw = platform_raw("prod")
    raw["jobs"] = {**raw.get("jobs", {}), "terminationGracePeriodSeconds": value}
    with pytest.raises(SpecError) as e:
        load_platform(raw)
    assert "jobs.terminationGracePeriodSeconds" in str(e.value)


def _pod_templates(kind: str) -> list[dict[str, Any]]:
    """Every GPU pod template of a kind's objects, wherever its API keeps it: training on the EFA pool, serving on
    the time-sliced inference pool."""
    args = (dict(team="search-serving", pool="l40s-infer", gpus=1, nodes=2) if kind == "lws" else
            dict(team="llm-pretrain", pool="h100-train", gpus=8, nodes=2))
    objs = template(plan_of("prod"), JobRequest(name="t", kind=kind, **args))
    found: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            spec = node.get("spec")
            if isinstance(spec, dict) and "containers" in spec and any(
                    any(r.startswith("nvidia.com/") for r in c.get("resources", {}).get("limits", {}))
                    for c in spec["containers"]):
                found.append(node)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(objs)
    if kind == "trainjob":  # its pods are the runtime's; the GPU request is trainer.resourcesPerNode, the rest a patch
        (train,) = objs
        (patch,) = train["spec"]["runtimePatches"]
        (replicated,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
        found.append(replicated["template"]["spec"]["template"])
    return found


@pytest.mark.parametrize("kind", ("job", "jobset", "trainjob", "rayjob"))
def test_running_training_pods_tell_the_cluster_autoscaler_not_to_drain_their_node(kind: str) -> None:
    templates = _pod_templates(kind)
    assert templates
    assert all(t["metadata"]["annotations"][SAFE_TO_EVICT] == "false" for t in templates)


def test_serving_replicas_stay_evictable() -> None:
    templates = _pod_templates("lws")
    assert templates
    assert all(SAFE_TO_EVICT not in t["metadata"].get("annotations", {}) for t in templates)


def _jobset_action(policy: dict[str, Any], job_failure_reason: str) -> str:
    """jobset v0.10.1 (pkg/controllers/failure_policy.go): the first rule whose onJobFailureReasons is empty or
    names the failed Job's reason acts; none matching restarts the JobSet."""
    for rule in policy.get("rules", []):
        if not rule.get("onJobFailureReasons") or job_failure_reason in rule["onJobFailureReasons"]:
            return rule["action"]
    return "RestartJobSet"


@pytest.mark.parametrize(("how", "exit_code", "expected"), [
    ("the application crashed", 1, "FailJobSet"),
    ("a pod was deleted by hand", 143, "RestartJobSet"),
    ("a container died of its own SIGTERM", 143, "RestartJobSet"),
    ("a container was OOM-killed", 137, "RestartJobSet"),
])
def test_a_jobset_gang_restarts_whole_when_it_loses_a_pod_and_fails_when_it_crashes(how: str, exit_code: int,
                                                                                    expected: str) -> None:
    (js,) = template(plan_of("prod"), JobRequest(team="llm-pretrain", pool="h100-train", gpus=8, nodes=2, name="t",
                                                 kind="jobset"))
    (rj,) = js["spec"]["replicatedJobs"]
    child = rj["template"]["spec"]
    # The child Job fails: FailJob's reason is PodFailurePolicy; a counted failure past backoffLimit 0,
    # BackoffLimitExceeded (kubernetes v1.33.13 job_controller.go).
    outcome = _outcome(child["podFailurePolicy"], exit_code)
    assert child["backoffLimit"] == 0
    reason = "PodFailurePolicy" if outcome == "FailJob" else "BackoffLimitExceeded"
    assert _jobset_action(js["spec"]["failurePolicy"], reason) == expected, how
    assert js["spec"]["failurePolicy"]["maxRestarts"] == 3
