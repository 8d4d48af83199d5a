"""Where work runs, in the job template (`python -m platform_cli job`): the GPU toleration every GPU
pod template carries, and at most one time-sliced replica per pod."""

from __future__ import annotations

import yaml

from gpu_platform import conventions as cv
from platform_cli.cli import EXIT_INVALID, EXIT_OK, main


def test_a_time_sliced_job_of_two_replicas_per_pod_is_refused_with_the_reason(capsys) -> None:
    """`job --pool l40s-infer --gpus 2` (prod) used to print nvidia.com/gpu.shared: '2', which Kueue admits and
    the kubelet then refuses (the device plugin's failRequestsGreaterThanOne)."""
    assert main(["job", "--stack", "prod", "--team", "search-serving", "--pool", "l40s-infer", "--gpus", "2"]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert ("gpus 2 on time-sliced pool 'l40s-infer': a pod may ask for at most 1 nvidia.com/gpu.shared; the device "
            "plugin refuses more per container (failRequestsGreaterThanOne: \"maximum request size for shared "
            "resources is 1\")") in err
    assert "use --gpus 1 --nodes 2 for 2 pods" in err


def test_one_replica_per_pod_is_what_a_time_sliced_job_asks_for(capsys) -> None:
    args = ["job", "--stack", "prod", "--team", "search-serving", "--pool", "l40s-infer", "--gpus", "1"]
    assert main([*args, "--nodes", "2", "--name", "serve"]) == EXIT_OK
    job = yaml.safe_load(capsys.readouterr().out)["items"][0]  # a List: the Job and its headless Service
    pod = job["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu.shared"] == "1"
    assert job["spec"]["parallelism"] == 2


def test_mig_and_whole_gpu_pods_still_take_several_units(capsys) -> None:
    assert main(["job", "--stack", "local", "--team", "vision", "--pool", "notebooks", "--gpus", "2",
                 "--name", "nb"]) == EXIT_OK
    pod = yaml.safe_load(capsys.readouterr().out)["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"]["limits"][cv.mig_resource("1g.10gb")] == "2"


def test_every_gpu_job_tolerates_the_gpu_taint_itself(capsys) -> None:
    """The pools' Kueue flavors list the GPU taint as a node taint: Kueue gives them only to pod sets that
    tolerate it, so the template carries the toleration (and of the pool's taints only that one: Kueue adds
    the workload's), besides the NoExecute ones of a lost node."""
    assert main(["job", "--stack", "prod", "--team", "llm-pretrain", "--pool", "h100-train", "--gpus", "8",
                 "--name", "t"]) == EXIT_OK
    pod = yaml.safe_load(capsys.readouterr().out)["spec"]["template"]["spec"]
    assert pod["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60},
    ]
