"""`python -m platform_cli acceptance` without a cluster: every refusal names its flag and the valid choices and
creates nothing; step 1 against a fake cluster (created as the team, the queue wait read from the Workload's
conditions, the Workload where the platform puts the team's work); the report's formats; the JSON schema."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Sequence

import pytest

from gpu_platform import acceptance as acc
from platform_cli import acceptance as ac
from platform_cli.cli import main, parser
from tests.unit.workloads.test_acceptance_workload import load_train

LOCAL = ["acceptance", "--stack", "local", "--team", "vision", "--pool", "train"]


class FakeCluster:
    """A cluster whose Kueue admits the JobSet on the third look (or never), as the platform's queue would."""

    def __init__(self, *, admit_after: int = 3, cluster_queue: str = "vision", flavor: str = "train",
                 refuse: str | None = None, queue: str = "default"):
        self.admit_after, self.cluster_queue, self.flavor, self.refuse, self.queue = (
            admit_after, cluster_queue, flavor, refuse, queue)
        self.created: list[dict[str, Any]] = []
        self.deleted: list[dict[str, Any]] = []
        self.as_user: Any = None
        self.looks = 0

    def create(self, objects: Sequence[dict[str, Any]], as_user: Any) -> None:
        if self.refuse:
            raise ac.ClusterError(self.refuse)
        self.created, self.as_user = list(objects), as_user

    def get(self, resource: str, namespace: str) -> list[dict[str, Any]]:
        assert resource == "workloads.kueue.x-k8s.io"
        self.looks += 1
        jobset = next(o for o in self.created if o["kind"] == "JobSet")
        workload: dict[str, Any] = {
            "metadata": {"name": "jobset-x-1", "namespace": namespace, "creationTimestamp": "2026-05-01T10:00:00Z",
                         "ownerReferences": [{"kind": "JobSet", "name": jobset["metadata"]["name"]}]},
            "spec": {"queueName": self.queue},
            "status": {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending",
                                       "message": "couldn't assign flavors to pod set workers: insufficient unused "
                                                  "quota for nvidia.com/gpu in flavor train, 4 more needed"}]},
        }
        if self.admit_after and self.looks >= self.admit_after:
            workload["status"] = {
                "admission": {"clusterQueue": self.cluster_queue, "podSetAssignments": [
                    {"name": "workers", "flavors": {"nvidia.com/gpu": self.flavor, "cpu": self.flavor}}]},
                "conditions": [
                    {"type": "QuotaReserved", "status": "True", "lastTransitionTime": "2026-05-01T10:00:07Z"},
                    {"type": "Admitted", "status": "True", "lastTransitionTime": "2026-05-01T10:00:08Z"}]}
        return [{"metadata": {"name": "someone-elses", "ownerReferences": [{"kind": "JobSet", "name": "other"}]}},
                workload]

    def delete(self, objects: Sequence[dict[str, Any]]) -> None:
        self.deleted = list(objects)

    def logs(self, namespace: str, pod: str) -> str:
        return ""


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def _args(*extra: str) -> argparse.Namespace:
    return parser().parse_args([*LOCAL, *extra])


def _run(cluster: FakeCluster, *extra: str, timeout_s: float = 300) -> tuple[ac.RunState, acc.Verdict, list[str]]:
    from gpu_platform.stack_files import load_plan

    request = ac.validate(load_plan("local", None)[1], _args(*extra))
    lines: list[str] = []
    clock = Clock()
    state = ac.RunState(request, cluster, lines.append, clock=clock, sleep=clock.sleep, admission_timeout_s=timeout_s)
    verdict = ac.run_steps(state, ac.runners(request))
    ac.clean_up(state)
    return state, verdict, lines


# --- refusals ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("extra,fragments", [
    (["--team", "nobody"], ["--team 'nobody': not a team of stack local; teams: vision, nlp, serving"]),
    (["--pool", "infer"], ["--pool 'infer': team 'vision' has no quota there; its pools: notebooks, train"]),
    (["--nodes", "0"], ["--nodes 0: at least 1"]),
    (["--nodes", "13"], ["--nodes 13: team 'vision' can hold at most 12 nvidia.com/gpu on pool 'train'",
                         "fewer than one per pod; --nodes 1..12 fit"]),
    (["--nodes", "2", "--gpus", "8"], ["--nodes 2 --gpus 8: 2 x 8 = 16 nvidia.com/gpu can never be admitted",
                                       "what fits: --nodes 1 --gpus 8, or --nodes 2 --gpus 6"]),
    (["--gpus", "9"], ["--gpus: gpus 9 is outside 1..8"]),
    (["--window", "10"], ["--window '10': not a positive duration such as 90s, 10m or 2h"]),
    (["--window", "30s"], ["--window '30s': at least 60s"]),
    (["--image", "quay.io/evil/trainer:1"], ["--image 'quay.io/evil/trainer:1': image 'quay.io/evil/trainer:1' is "
                                             "not from an allowed registry; allowed: registry.k8s.io/kueue"]),
    (["--image", "docker.io/pytorch/pytorch:2.5.1"], [
        "--image 'docker.io/pytorch/pytorch:2.5.1': the acceptance workload reads its data",
        "stack local does not have for team 'vision' (data.enabled"]),
    (["--baseline", "rent=3"], ["--baseline 'rent=3': kind 'rent' is not a baseline; kinds: gpu-hour, api",
                                "gpu-hour=USD"]),
    (["--baseline", "api=0.002/1k-words"], ["--baseline 'api=0.002/1k-words': unit 'words'",
                                            "units: tokens, samples"]),
])
def test_bad_input_exits_2_naming_the_flag_and_creates_nothing(extra: list[str], fragments: list[str], capsys) -> None:
    cluster = FakeCluster()
    args = parser().parse_args(LOCAL + extra)
    from gpu_platform.errors import InputError

    with pytest.raises(InputError) as refused:
        ac.run(args, client=cluster, progress=lambda _: None)
    assert cluster.created == [] and cluster.deleted == []
    for fragment in fragments:
        assert fragment in str(refused.value)
    # and through the CLI: exit 2, the same message, no traceback
    assert main(LOCAL + extra) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and fragments[0] in err and "Traceback" not in err


def test_an_unknown_format_is_a_usage_error(capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*LOCAL, "--format", "html"])
    assert exited.value.code == 2 and "argument --format: invalid choice: 'html'" in capsys.readouterr().err


def test_a_pod_gets_the_most_units_that_fit_the_pods_in_the_teams_reach() -> None:
    from gpu_platform.stack_files import load_plan

    plan = load_plan("local", None)[1]
    # vision can hold 12 nvidia.com/gpu on train (8 nominal + 4 lent by nlp): 2 pods of 6, 1 pod of a whole node.
    assert ac.validate(plan, _args()).gpus == 6
    assert ac.validate(plan, _args("--nodes", "1")).gpus == 8
    assert ac.validate(plan, _args("--nodes", "3")).gpus == 4


# --- step 1 ------------------------------------------------------------------------------------------


def test_step_1_submits_as_the_team_and_reads_the_queue_wait_from_the_workload() -> None:
    cluster = FakeCluster(admit_after=3)
    state, verdict, lines = _run(cluster)
    first = verdict.results[0]
    assert first.status == acc.PASSED
    assert {f.name: f.value for f in first.figures} == {
        "quota_reserved_wait": 7, "admitted_wait": 8, "cluster_queue": "vision", "flavor": "train",
        "submitted_as": "gpu-platform-acceptance in group vision-engineers"}
    assert cluster.as_user == ("gpu-platform-acceptance", ("vision-engineers",))
    (jobset,) = cluster.created  # no --image: the template's stand-in, no ConfigMap
    assert (jobset["kind"], jobset["metadata"]["namespace"]) == ("JobSet", "vision")
    assert jobset["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "default"
    assert jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["parallelism"] == 2
    # the rest cannot run here, so the verdict cannot pass; the job is removed at the end
    assert [r.status for r in verdict.results] == ["passed"] + ["skipped"] * 6
    assert verdict.exit_code == 1
    for skipped in verdict.results[1:6]:  # steps 2 to 6: the stand-in ran nothing to judge
        assert skipped.reason.startswith("no --image: the stand-in image does not run the acceptance workload")
    assert verdict.results[6].reason.startswith("no --baseline to compare against")
    assert cluster.deleted == [jobset]
    assert "step 1: created JobSet vision/" in "\n".join(lines)


def test_step_1_keeps_the_job_with_keep() -> None:
    cluster = FakeCluster()
    _, _, lines = _run(cluster, "--keep")
    assert cluster.deleted == [] and any(line.startswith("kept (--keep): JobSet/acceptance-") for line in lines)


def test_step_1_fails_a_workload_admitted_outside_the_teams_queue_or_flavor() -> None:
    _, verdict, _ = _run(FakeCluster(cluster_queue="nlp"))
    first = verdict.results[0]
    assert (first.status, first.expected, first.seen) == (
        acc.FAILED, "quota reserved in team 'vision''s ClusterQueue 'vision'", "ClusterQueue 'nlp'")
    assert all(r.reason == "step 1 did not pass: there is no admitted job to test" for r in verdict.results[1:])
    _, verdict, _ = _run(FakeCluster(flavor="notebooks"))
    assert (verdict.results[0].expected, verdict.results[0].seen) == (
        "nvidia.com/gpu on pool 'train''s flavor 'train'", "flavors ['notebooks']")
    _, verdict, _ = _run(FakeCluster(queue="other"))
    assert (verdict.results[0].expected, verdict.results[0].seen) == (
        "queued in the team's LocalQueue 'default'", "queueName 'other'")


def test_step_1_fails_after_the_timeout_saying_what_the_workload_waits_for() -> None:
    cluster = FakeCluster(admit_after=0)
    _, verdict, lines = _run(cluster, timeout_s=20)
    first = verdict.results[0]
    assert (first.status, first.expected) == (acc.FAILED, "Admitted within 20 s")
    assert first.seen == ("not admitted after 20 s: QuotaReserved False (Pending): couldn't assign flavors to pod set "
                          "workers: insufficient unused quota for nvidia.com/gpu in flavor train, 4 more needed")
    assert any(line.startswith("step 1: 10s, QuotaReserved False (Pending)") for line in lines)  # progress
    assert len(cluster.deleted) == 1  # removed even though it never ran


def test_step_1_fails_when_the_cluster_refuses_the_job_and_removes_nothing() -> None:
    refusal = ('The jobsets "acceptance-x" is invalid: ValidatingAdmissionPolicy \'tenant-images\' denied request\n'
               "more detail")
    cluster = FakeCluster(refuse=refusal)
    _, verdict, _ = _run(cluster)
    first = verdict.results[0]
    assert first.status == acc.FAILED
    assert first.expected == "the JobSet accepted when created as team 'vision' (gpu-platform-acceptance in group vision-engineers)"
    assert first.seen == refusal.splitlines()[0]
    assert cluster.deleted == []


def test_queue_waits_count_from_the_workloads_creation() -> None:
    workload = {"metadata": {"creationTimestamp": "2026-05-01T10:00:00Z"},
                "status": {"conditions": [
                    {"type": "QuotaReserved", "status": "True", "lastTransitionTime": "2026-05-01T10:01:05Z"},
                    {"type": "Admitted", "status": "False", "lastTransitionTime": "2026-05-01T10:01:05Z"}]}}
    assert ac.queue_waits(workload) == (65, None)


# --- the workload's pods (an eks stack with a data path) ---------------------------------------------


def test_with_an_image_the_pods_run_the_workload_from_a_configmap_with_what_it_reads() -> None:
    from gpu_platform.stack_files import load_plan

    args = parser().parse_args(["acceptance", "--stack", "prod", "--team", "llm-pretrain", "--pool", "h100-train",
                                "--image", "docker.io/pytorch/pytorch:2.5.1", "--window", "5m"])
    request = ac.validate(load_plan("prod", None)[1], args)
    cm, jobset = request.objects
    assert (cm["kind"], cm["metadata"]["name"]) == ("ConfigMap", f"{request.name}-workload")
    assert cm["data"]["train.py"] == (ac.REPOSITORY / "workloads" / "acceptance" / "train.py").read_text()
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["command"] == ["python3", "/opt/gpu-platform/acceptance/train.py", "run"]
    assert {"name": "acceptance-workload", "configMap": {"name": f"{request.name}-workload"}} in pod["volumes"]
    assert pod["serviceAccountName"] == "team-data"  # the team's Pod Identity role reads and writes its bucket
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["GPU_PLATFORM_ACCEPTANCE_S3_BUCKET"] == "acme-ml-prod-llm-pretrain"
    assert env["GPU_PLATFORM_ACCEPTANCE_CHECKPOINT_PREFIX"] == f"checkpoints/{request.name}/"
    assert env["GPU_PLATFORM_ACCEPTANCE_WINDOW_SECONDS"] == "300"
    # What the pods are given is what train.py reads (the rank comes from the completion index at run time).
    config = load_train().Config.from_env({**{k: v for k, v in env.items() if v is not None}, "GPU_PLATFORM_RANK": "1"})
    assert (config.world, config.rank, config.window_s, config.bucket) == (2, 1, 300.0, "acme-ml-prod-llm-pretrain")
    assert config.coordinator == f"{request.name}-workers-0-0.{request.name}"


def test_on_the_local_cluster_the_pods_reach_the_object_store_with_the_teams_keys_from_a_secret() -> None:
    """A stack without a data path (provider existing) uses the local cluster's object store when one runs."""
    from gpu_platform.stack_files import load_plan
    from localcluster import objectstore

    store = objectstore.Store("http://10.244.0.1:18333", {"zeta": "local-data-zeta"},
                              {"zeta": objectstore.Keys("AK", "SK")}, {"zeta": objectstore.Keys("RO", "RS")},
                              objectstore.Keys("ADM", "ADS"))
    stack = str(ac.REPOSITORY / "examples" / "acceptance-stack.yaml")
    args = parser().parse_args(["acceptance", "--stack", stack, "--team", "zeta", "--pool", "small",
                                "--image", "localhost/gpu-platform/acceptance-trainer:torch-1.13.1", "--window", "60s"])
    request = ac.validate(load_plan(None, stack)[1], args, store)
    assert (request.nodes, request.gpus, request.bucket) == (2, 1, "local-data-zeta")
    container = request.objects[1]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") or e.get("valueFrom") for e in container["env"]}
    assert env["GPU_PLATFORM_ACCEPTANCE_S3_ENDPOINT"] == "http://10.244.0.1:18333"
    assert env["GPU_PLATFORM_ACCEPTANCE_RENDEZVOUS"] == "s3"
    assert env["GPU_PLATFORM_ACCEPTANCE_CHECKPOINT_SECONDS"] == "10"
    assert env["AWS_ACCESS_KEY_ID"] == {"secretKeyRef": {"name": "team-data-s3", "key": "AWS_ACCESS_KEY_ID"}}
    assert env["GPU_PLATFORM_ACCEPTANCE_ATTEMPT"] == {
        "fieldRef": {"fieldPath": "metadata.labels['jobset.sigs.k8s.io/restart-attempt']"}}
    secret = ac.credentials_secret(request.data, request.namespace, "zeta")
    assert secret["metadata"]["name"] == "team-data-s3" and secret["stringData"] == {
        "AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK"}
    # Without a store, an image is refused naming where the data path comes from.
    from gpu_platform.errors import InputError
    with pytest.raises(InputError, match="python -m localcluster.objectstore start"):
        ac.validate(load_plan(None, stack)[1], args, None)


# --- the report --------------------------------------------------------------------------------------


def test_the_json_report_has_the_documented_schema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    cluster = FakeCluster(admit_after=1)
    code = ac.run(_args("--format", "json", "--baseline", "gpu-hour=2.50", "--out", str(tmp_path / "out")),
                  client=cluster, progress=lambda _: None)
    assert code == 1
    doc = json.loads(capsys.readouterr().out)
    assert sorted(doc) == ["baseline", "exit_code", "image", "instance_type", "job", "nodes", "passed", "pool",
                           "problems", "resource", "schema", "stack", "steps", "team", "units_per_pod", "window_s"]
    assert (doc["schema"], doc["stack"], doc["team"], doc["pool"], doc["baseline"], doc["passed"], doc["exit_code"]) == (
        "gpu-platform.io/acceptance/v1", "local", "vision", "train", "gpu-hour=2.50", False, 1)
    assert [(s["number"], s["key"], s["status"]) for s in doc["steps"]] == [
        (1, "queued-job", "passed"), (2, "data-pull", "skipped"), (3, "all-reduce", "skipped"), (4, "train", "skipped"),
        (5, "checkpoint-restore", "skipped"), (6, "labels", "skipped"), (7, "useful-work", "skipped")]
    assert sorted(doc["steps"][0]) == ["expected", "figures", "key", "number", "reason", "seen", "status", "title"]
    assert doc["steps"][0]["figures"][0] == {"name": "quota_reserved_wait", "value": 7, "unit": "s"}
    assert doc["steps"][6]["reason"].startswith("not available on this cluster: it prices the work step 4 reports")
    assert json.loads((tmp_path / "out" / "acceptance.json").read_text()) == doc
    assert (tmp_path / "out" / "acceptance.md").read_text().startswith("**acceptance: stack local, team vision")


def test_the_table_names_every_step_and_each_problem(capsys) -> None:
    assert ac.run(_args(), client=FakeCluster(admit_after=1), progress=lambda _: None) == 1
    out = capsys.readouterr().out
    rows = [line.split()[:3] for line in out.splitlines()[3:10]]
    assert rows == [["1", "queued-job", "passed"], ["2", "data-pull", "skipped"], ["3", "all-reduce", "skipped"],
                    ["4", "train", "skipped"], ["5", "checkpoint-restore", "skipped"], ["6", "labels", "skipped"],
                    ["7", "useful-work", "skipped"]]
    assert "NOT PASSED: 1 passed, 0 failed, 6 skipped of 7" in out
    assert "  step 6 (labels) skipped: no --image: the stand-in image does not run the acceptance workload" in out
