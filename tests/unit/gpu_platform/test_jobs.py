"""`python -m platform_cli job`: the team's Job template, and what it refuses."""

from __future__ import annotations

import pytest
import yaml

from gpu_platform import conventions as cv
from platform_cli.cli import EXIT_INVALID, EXIT_OK, main
from gpu_platform.jobs import JobError, JobRequest, TTL_SECONDS_AFTER_FINISHED, job
from gpu_platform.plan import reserved_cpu_millis, reserved_memory_mib
from gpu_platform import catalog
from tests.conftest import plan_of


def quantity_millis(v: str) -> int:
    return int(v[:-1]) if v.endswith("m") else int(v) * 1000


def every_quota(stack: str):
    plan = plan_of(stack)
    for team in plan.teams:
        for q in team.quotas:
            yield plan, team, plan.pools_by_name[q.pool]


@pytest.mark.parametrize("stack", ["local", "staging", "prod"])
def test_a_full_node_job_fits_its_node_and_names_its_queue(stack: str) -> None:
    for plan, team, pool in every_quota(stack):
        # A time-sliced pool's pod holds one replica (the device plugin refuses more per container).
        per_pod = 1 if pool.resource_name == cv.SHARED_GPU_RESOURCE else pool.units_per_node
        (obj,) = job(plan, JobRequest(team=team.name, pool=pool.name, gpus=per_pod, name="j"))
        assert obj["kind"] == "Job" and obj["metadata"]["namespace"] == team.namespaces[0]
        assert obj["metadata"]["labels"][cv.QUEUE_NAME_LABEL] == cv.LOCAL_QUEUE_NAME
        assert obj["spec"]["suspend"] is True
        assert obj["spec"]["ttlSecondsAfterFinished"] == TTL_SECONDS_AFTER_FINISHED
        pod = obj["spec"]["template"]
        assert pod["metadata"]["labels"][cv.TEAM] == team.name
        assert pod["metadata"]["labels"][cv.COST_CENTER] == team.cost_center
        (c,) = pod["spec"]["containers"]
        limits = c["resources"]["limits"]
        assert limits[pool.resource_name] == str(per_pod)
        # Exactly the node's allocatable at most: a pod of the whole node must fit on one.
        it = catalog.INSTANCE_TYPES[pool.instance_type]
        assert quantity_millis(limits["cpu"]) <= it.vcpus * 1000 - reserved_cpu_millis(it.vcpus)
        assert int(limits["memory"].removesuffix("Mi")) <= it.memory_gib * 1024 - reserved_memory_mib(pool.instance_type)
        assert c["resources"]["requests"] == {"cpu": limits["cpu"], "memory": limits["memory"]}
        assert not any(cv.is_gpu_resource(k) for k in c["resources"]["requests"]), "GPUs in limits only"
        # Pinned to its pool by the pool label (else Kueue may charge it to another pool of the same
        # resource name); Kueue injects the rest of the flavor's labels and the workload toleration. The GPU
        # toleration the template carries: the pools' flavors are given only to pod sets that have it.
        assert pod["spec"]["nodeSelector"] == {cv.POOL: pool.name}
        # ... and a minute's toleration of a node that stopped reporting (instead of the default 300 s).
        assert pod["spec"]["tolerations"] == [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60},
        ]
        if pool.efa_interfaces:
            assert limits[cv.EFA_RESOURCE] == str(pool.efa_interfaces)
        else:
            assert cv.EFA_RESOURCE not in limits


def test_a_multi_node_job_is_indexed_with_a_headless_service_and_efa_per_pod() -> None:
    plan = plan_of("prod")
    pool = plan.pools_by_name["h100-train"]
    job_obj, svc = job(plan, JobRequest(team="llm-pretrain", pool="h100-train", gpus=4, nodes=4, name="ddp",
                                        priority="training"))
    spec = job_obj["spec"]
    assert spec["completionMode"] == "Indexed" and spec["parallelism"] == spec["completions"] == 4
    assert spec["template"]["spec"]["subdomain"] == svc["metadata"]["name"] == "ddp"
    assert svc["spec"]["clusterIP"] == "None"
    # Half the node's GPUs get half its EFA interfaces.
    limits = spec["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits[cv.EFA_RESOURCE] == str(pool.efa_interfaces // 2)
    assert job_obj["metadata"]["labels"][cv.PRIORITY_CLASS_LABEL] == "training"
    assert spec["template"]["spec"]["priorityClassName"] == "training"


def test_the_duration_reaches_the_simulated_node() -> None:
    (obj,) = job(plan_of("local"), JobRequest(team="vision", pool="train", gpus=1, duration="90s", name="j"))
    assert obj["spec"]["template"]["metadata"]["annotations"][cv.SIM_DURATION_ANNOTATION] == "90s"
    assert obj["spec"]["template"]["spec"]["containers"][0]["command"] == ["sleep", "90"]


@pytest.mark.parametrize("request_, words", [
    (JobRequest(team="nobody", pool="train", gpus=1), ["unknown team 'nobody'", "vision", "serving"]),
    (JobRequest(team="serving", pool="train", gpus=1), ["no quota on pool 'train'", "its pools: infer"]),
    (JobRequest(team="vision", pool="train", gpus=9), ["outside 1..8", "--nodes"]),
    (JobRequest(team="vision", pool="train", gpus=8, nodes=3), ["can never be admitted", "at most 12"]),
    (JobRequest(team="vision", pool="train", gpus=1, priority="system-critical"),
     ["'system-critical' is not granted", "granted: training, research, development"]),
    (JobRequest(team="vision", pool="train", gpus=1, priority="production-inference"),
     ["'production-inference' is not granted"]),
    (JobRequest(team="vision", pool="train", gpus=1, duration="-5m"), ["duration '-5m'", "90s, 10m or 2h"]),
    (JobRequest(team="vision", pool="train", gpus=1, namespace="nlp"), ["namespace 'nlp'", "vision"]),
    (JobRequest(team="vision", pool="train", gpus=1, name="Bad_Name"), ["DNS-1123"]),
])
def test_refusals_name_the_valid_choices(request_: JobRequest, words: list[str]) -> None:
    with pytest.raises(JobError) as err:
        job(plan_of("local"), request_)
    for w in words:
        assert w in str(err.value)


def test_a_granted_production_priority_is_accepted() -> None:
    (obj,) = job(plan_of("local"), JobRequest(team="serving", pool="infer", gpus=1, priority="production-inference",
                                              name="j"))
    assert obj["metadata"]["labels"][cv.PRIORITY_CLASS_LABEL] == "production-inference"


def test_cli_prints_yaml_or_exits_2_with_the_reason(capsys) -> None:
    assert main(["job", "--stack", "local", "--team", "vision", "--pool", "notebooks", "--gpus", "2",
                 "--name", "nb"]) == EXIT_OK
    obj = yaml.safe_load(capsys.readouterr().out)
    assert obj["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"][cv.mig_resource("1g.10gb")] == "2"
    assert main(["job", "--stack", "local", "--team", "vision", "--pool", "infer", "--gpus", "1"]) == EXIT_INVALID
    assert "team 'vision' has no quota on pool 'infer'; its pools: notebooks, train" in capsys.readouterr().err


def test_a_job_the_cohort_can_never_lend_enough_for_is_refused_with_the_arithmetic(capsys) -> None:
    """A job the cohort can never lend enough for: vision holds 8 on train with borrowingLimit 8, but nlp, its only
    sibling, lends at most 4: 16 GPUs would wait forever. The refusal shows every bound and what would fit instead."""
    assert main(["job", "--stack", "local", "--team", "vision", "--pool", "train", "--gpus", "8", "--nodes", "2"]) \
        == EXIT_INVALID
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == (
        "error: 2 x 8 = 16 nvidia.com/gpu can never be admitted: team 'vision' can hold at most 12 on pool 'train', "
        "min(nominal 8 + borrowingLimit 8 = 16, nominal 8 + 4 lendable through cohort 'research' = 12, "
        "pool capacity 16) = 12; lenders: nlp lends 4 of its 8 (lendingLimit 4); "
        "what fits: --nodes 1 --gpus 8, or --nodes 2 --gpus 6")
    # What it names as fitting is printed.
    assert main(["job", "--stack", "local", "--team", "vision", "--pool", "train", "--gpus", "6", "--nodes", "2",
                 "--name", "fits"]) == EXIT_OK
    job_obj, _service = yaml.safe_load(capsys.readouterr().out)["items"]
    assert job_obj["spec"]["parallelism"] == 2
