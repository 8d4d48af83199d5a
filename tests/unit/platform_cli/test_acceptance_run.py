"""The acceptance command's run of steps 2 to 5 (platform_cli/acceptance_run.py) against a scripted cluster: the
pods' logs say what train.py would print, the JobSet controller's part (a new gang after a deleted pod) is played by
the fake. World: mocks (no cluster, a fake clock)."""

from __future__ import annotations

import json
from typing import Any

from gpu_platform import acceptance as acc, useful_work as uw
from platform_cli.acceptance_run import WorkloadRun

NS, NAME = "zeta", "acceptance-abc123"


def line(event: str, rank: int, **fields: Any) -> str:
    return json.dumps({"event": event, "rank": rank, **fields})


def first_gang_log(rank: int, checkpoint_ok: bool = True) -> str:
    lines = [line("start", rank), line("data", rank, bytes=1_180_672, seconds=0.4),
             line("allreduce", rank, bytes=16_777_216, seconds=0.1, algbw_gb_per_s=0.17, busbw_gb_per_s=0.17,
                  ranks=2, correct=True),
             line("restore", rank, step=0, seconds=0.0)]
    if rank == 0:
        lines.append(line("checkpoint", 0, step=120, seconds=0.08, ok=checkpoint_ok, key="k",
                          **({} if checkpoint_ok else {"message": "AccessDenied"})))
    if not checkpoint_ok:
        lines.append(line("done", rank, last_step=900, steps=900, tokens=921_600, samples=14_400, trained_s=60.1,
                          step_time_s=0.066, tokens_per_s=15_000.0))
    return "\n".join(lines)


def second_gang_log(rank: int) -> str:
    return "\n".join([line("data", rank, bytes=1_180_672, seconds=0.3),
                      line("restore", rank, step=120, seconds=0.05),
                      line("done", rank, first_step=121, last_step=700, steps=580, tokens=593_920, samples=9_280,
                           trained_s=60.4, step_time_s=0.07, tokens_per_s=14_000.0)])


class FakeJobSet:
    """Two pods per gang; a deleted pod makes the controller recreate the gang as attempt 1 two polls later."""

    def __init__(self, checkpoint_ok: bool = True, done_after_polls: int = 0, name: str = NAME):
        self.checkpoint_ok, self.done_after_polls, self.name = checkpoint_ok, done_after_polls, name
        self.gang: dict[str, dict[str, Any]] = {}
        self.deleted: list[str] = []
        self.polls = 0
        self._new_gang(0)

    def _new_gang(self, attempt: int) -> None:
        self.attempt = attempt
        self.gang = {f"{self.name}-workers-0-{r}-a{attempt}": self._pod(f"{self.name}-workers-0-{r}-a{attempt}", r,
                                                                         attempt) for r in (0, 1)}

    @staticmethod
    def _pod(name: str, rank: int, attempt: int) -> dict[str, Any]:
        return {"metadata": {"name": name, "labels": {"jobset.sigs.k8s.io/restart-attempt": str(attempt)},
                             "annotations": {"batch.kubernetes.io/job-completion-index": str(rank)}},
                "status": {"phase": "Running"}}

    def pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        assert (namespace, selector) == (NS, f"jobset.sigs.k8s.io/jobset-name={self.name}")
        self.polls += 1
        if self.deleted and self.attempt == 0 and self.polls >= self.recreate_at:
            self._new_gang(1)
            self.second_gang_at = self.polls
        return list(self.gang.values())

    def logs(self, namespace: str, pod: str) -> str:
        rank, attempt = int(pod.split("-")[-2]), int(pod[-1])
        if attempt == 1:
            if self.polls < self.second_gang_at + self.done_after_polls:
                return second_gang_log(rank).rsplit("\n", 1)[0]  # still training
            for p in self.gang.values():
                p["status"]["phase"] = "Succeeded"
            return second_gang_log(rank)
        return first_gang_log(rank, self.checkpoint_ok)

    def delete_pod(self, namespace: str, pod: str) -> None:
        self.deleted.append(pod)
        self.recreate_at = self.polls + 2

    def get_object(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        return {"status": {}}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.now += s


def drive(cluster: FakeJobSet) -> tuple[Any, list[str]]:
    clock, lines = Clock(), []
    seen = WorkloadRun(cluster, NS, NAME, 2, 60, lines.append, clock, clock.sleep).run()
    return seen, lines


def test_the_last_rank_is_deleted_at_the_first_checkpoint_and_the_new_gang_resumes_from_it() -> None:
    cluster = FakeJobSet()
    seen, progress = drive(cluster)
    assert cluster.deleted == [f"{NAME}-workers-0-1-a0"]
    assert seen.problem is None
    assert "step 5: rank 0 wrote the checkpoint of step 120 in 0.08s; deleting pod acceptance-abc123-workers-0-1-a0 " \
           "(rank 1)" in progress
    # deleted at the first poll (t=0); the next poll follows at once, the new gang shows at the one after (t=2 s)
    assert seen.recovery().recovery_s == 2.0
    assert acc.evaluate_recovery(seen.recovery(), 2).status == acc.PASSED
    assert acc.evaluate_training(seen.events(seen.last_attempt), 2, 60).status == acc.PASSED
    assert seen.work() == acc.Work(1_187_840, 18_560)
    # the first gang lost to the restart, the second finished; 1/8 GPU each (a time-sliced unit of a 1-GPU node)
    assert sorted((r.pod[-4:], r.outcome, r.gpus) for r in seen.runs(0.125)) == [
        ("0-a0", uw.RUN_PREEMPTED, 0.125), ("0-a1", uw.RUN_FINISHED, 0.125), ("1-a0", uw.RUN_PREEMPTED, 0.125),
        ("1-a1", uw.RUN_FINISHED, 0.125)]


def test_a_failed_checkpoint_deletes_nothing_and_the_run_goes_to_its_end() -> None:
    cluster = FakeJobSet(checkpoint_ok=False)
    seen, _ = drive(cluster)
    assert cluster.deleted == []
    r = acc.evaluate_recovery(seen.recovery(), 2)
    assert (r.status, r.seen) == (acc.FAILED, "rank 0 could not write its checkpoint of step 120 to k: AccessDenied")
    assert acc.evaluate_training(seen.events(0), 2, 60).status == acc.PASSED


def test_a_pod_that_cannot_start_ends_the_run_naming_why() -> None:
    cluster = FakeJobSet()
    for p in cluster.gang.values():
        p["status"] = {"phase": "Pending", "containerStatuses": [{"state": {"waiting": {
            "reason": "ErrImageNeverPull", "message": "image not present with pull policy of Never"}}}]}
    seen, _ = drive(cluster)
    assert seen.problem == (f"a pod cannot start: pod {NAME}-workers-0-0-a0: ErrImageNeverPull: image not present "
                            "with pull policy of Never")


def test_the_command_runs_steps_2_to_5_and_prices_the_run_against_the_baseline(monkeypatch) -> None:
    """The whole command over the scripted JobSet: the data path's Secret made, steps 2 to 5 from the logs, step 6
    from a Prometheus whose series of the job are all attributed (the team's cost center on the plan's info series,
    as the platform's rules record them: tests/unit/platform_cli/test_acceptance_labels.py), step 7 from the
    pods' run times: the first gang ran 2 s (1/8 GPU each), the second 60 s, at a g6.xlarge's 0.805 USD
    per GPU-hour: total (2 x 2 + 2 x 60) x 0.125 / 3600 x 0.805 = 0.003466 USD for 2 x 60 x 0.125 / 3600 =
    0.0041667 useful GPU-hours, 0.8318 USD per useful GPU-hour: below gpu-hour=2.50."""
    from gpu_platform.stack_files import load_plan
    from localcluster import objectstore
    from platform_cli import acceptance as ac
    from platform_cli.cli import parser
    from tests.unit.platform_cli.test_acceptance_labels import FakePrometheus, exports

    store = objectstore.Store("http://10.244.0.1:18333", {"zeta": "local-data-zeta"},
                              {"zeta": objectstore.Keys("AK", "SK")}, {"zeta": objectstore.Keys("RO", "RS")},
                              objectstore.Keys("ADM", "ADS"))
    stack = str(ac.REPOSITORY / "examples" / "acceptance-stack.yaml")
    args = parser().parse_args(["acceptance", "--stack", stack, "--team", "zeta", "--pool", "small", "--image",
                                "localhost/gpu-platform/acceptance-trainer:torch-1.13.1", "--window", "60s",
                                "--baseline", "gpu-hour=2.50"])
    request = ac.validate(load_plan(None, stack)[1], args, store)
    jobset = FakeJobSet(done_after_polls=30, name=request.name)  # the second gang trains 30 polls (60 s)
    made: list[str] = []
    removed: list[str] = []
    workload = {"metadata": {"name": "w", "creationTimestamp": "2026-05-01T10:00:00Z",
                             "ownerReferences": [{"kind": "JobSet", "name": request.name}]},
                "spec": {"queueName": "default"},
                "status": {"admission": {"clusterQueue": "zeta", "podSetAssignments": [
                    {"name": "workers", "flavors": {"nvidia.com/gpu.shared": "small"}}]},
                           "conditions": [{"type": "QuotaReserved", "status": "True",
                                           "lastTransitionTime": "2026-05-01T10:00:01Z"},
                                          {"type": "Admitted", "status": "True",
                                           "lastTransitionTime": "2026-05-01T10:00:01Z"}]}}
    jobset.create = lambda objects, who: None  # type: ignore[attr-defined]
    jobset.get = lambda resource, ns: [workload]  # type: ignore[attr-defined]
    jobset.delete = lambda objects: removed.extend(o["kind"] for o in objects)  # type: ignore[attr-defined]
    jobset.ensure = lambda obj: made.append(obj["metadata"]["name"]) or True  # type: ignore[attr-defined]
    monkeypatch.setattr("platform_cli.acceptance.remove_run_objects", lambda data, name, progress: None)
    clock = Clock()
    state = ac.RunState(request, jobset, lambda line: None, clock=clock, sleep=clock.sleep)
    prometheus = FakePrometheus(lambda look: exports(tuple(jobset.gang)))
    verdict = ac.run_steps(state, ac.runners(request, prometheus))
    ac.clean_up(state)
    statuses = {r.spec.key: r.status for r in verdict.results}
    assert statuses == {"queued-job": "passed", "data-pull": "passed", "all-reduce": "passed", "train": "passed",
                        "checkpoint-restore": "passed", "labels": "passed", "useful-work": "passed"}
    assert verdict.exit_code == 0 and prometheus.looks == 1
    assert made == ["team-data-s3"] and removed == ["JobSet", "ConfigMap"]
    useful = {f.name: f.value for f in verdict.results[6].figures}
    assert useful == {"cluster_cost": 0.831833, "baseline_cost": 2.5, "total_usd": useful["total_usd"],
                      "useful_gpu_hours": 0.0042}
    assert round(useful["total_usd"], 6) == 0.003466
