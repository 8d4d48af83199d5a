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

    def __init__(self, checkpoint_ok: bool = True):
        self.checkpoint_ok = checkpoint_ok
        self.gang: dict[str, dict[str, Any]] = {}
        self.deleted: list[str] = []
        self.polls = 0
        self._new_gang(0)

    def _new_gang(self, attempt: int) -> None:
        self.attempt = attempt
        self.gang = {f"{NAME}-workers-0-{r}-a{attempt}": self._pod(f"{NAME}-workers-0-{r}-a{attempt}", r, attempt)
                     for r in (0, 1)}

    @staticmethod
    def _pod(name: str, rank: int, attempt: int) -> dict[str, Any]:
        return {"metadata": {"name": name, "labels": {"jobset.sigs.k8s.io/restart-attempt": str(attempt)},
                             "annotations": {"batch.kubernetes.io/job-completion-index": str(rank)}},
                "status": {"phase": "Running"}}

    def pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        assert (namespace, selector) == (NS, f"jobset.sigs.k8s.io/jobset-name={NAME}")
        self.polls += 1
        if self.deleted and self.attempt == 0 and self.polls >= self.recreate_at:
            self._new_gang(1)
        return list(self.gang.values())

    def logs(self, namespace: str, pod: str) -> str:
        rank, attempt = int(pod.split("-")[-2]), int(pod[-1])
        if attempt == 1:
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
