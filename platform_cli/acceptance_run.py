"""Steps 2 to 5 and step 7's run times, live: the admitted JobSet's pods run the acceptance workload
(workloads/acceptance/train.py), whose events this module reads from their logs while it drives the run the
design guide asks for, then hands what it saw to the spec layer's verdicts (gpu_platform/acceptance):

1. the first gang (restart attempt 0) starts, reads its data, all-reduces and trains;
2. at rank 0's first checkpoint, one pod is deleted (`kubectl delete pod`): its container gets SIGTERM, the Job
   counts it, and the JobSet's failure policy recreates the whole gang (attempt 1); recovery is the time from the
   deletion to every pod of the new gang Running;
3. the new gang restores the latest checkpoint and trains the rest of the window; its `done` events end the run.

A checkpoint that fails (`ok` false) is not followed by a deletion: the run goes to its end and step 5 says which
write failed. The run ends early on the workload's `error` event, a pod that cannot start (its waiting reason),
or the JobSet failing, so a broken part fails its own step within a minute or so, not at a timeout."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from gpu_platform import acceptance as acc, conventions as cv, useful_work as uw

POLL_S = 2.0
PROGRESS_EVERY_S = 10.0
# From admission to every pod of the first gang Running (the image is on the node: containerd unpacks it).
POD_START_TIMEOUT_S = 300
# From the pods Running to the first checkpoint: import, data, rendezvous (the workload's own timeout is 300 s).
SETUP_SLACK_S = 360
# From the deletion to every pod of the new gang Running.
RECOVERY_TIMEOUT_S = 300
# Waiting reasons of a container that will not start by waiting longer (kubelet's and the runtime's).
STUCK = ("ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName", "CreateContainerConfigError",
         "CreateContainerError", "RunContainerError", "CrashLoopBackOff")


class PodClient(Protocol):
    def pods(self, namespace: str, selector: str) -> list[dict[str, Any]]: ...

    def logs(self, namespace: str, pod: str) -> str: ...

    def delete_pod(self, namespace: str, pod: str) -> None: ...

    def get_object(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None: ...


@dataclass
class PodSeen:
    name: str
    attempt: int
    rank: int | None
    first_running: float | None = None
    ended: float | None = None
    phase: str = "Pending"
    deleted: bool = False
    log: str = ""


@dataclass
class Observed:
    """What the run showed; steps 2 to 5 and 7 read it."""

    pods: dict[str, PodSeen] = field(default_factory=dict)
    deleted_pod: str | None = None
    deleted_at: float | None = None
    recovered_at: float | None = None
    # why the run ended before it should have (a pod that cannot start, the JobSet failed, a timeout)
    problem: str | None = None
    ended_at: float | None = None

    def events(self, attempt: int) -> list[dict[str, object]]:
        out: list[dict[str, object]] = []
        for p in sorted((p for p in self.pods.values() if p.attempt == attempt), key=lambda p: (p.rank or 0, p.name)):
            out += acc.events_from_log(p.log)
        return out

    def first_gang(self) -> list[dict[str, object]]:
        """The first gang's events, less the errors the deletion caused (a survivor's peer reset)."""
        events = self.events(0)
        return [e for e in events if e.get("event") != "error"] if self.deleted_pod else events

    @property
    def last_attempt(self) -> int:
        return max((p.attempt for p in self.pods.values()), default=0)

    def recovery(self) -> acc.Recovery:
        checkpoints = tuple(e for e in self.first_gang() if e.get("event") == "checkpoint")
        recovery_s = (None if self.recovered_at is None or self.deleted_at is None
                      else self.recovered_at - self.deleted_at)
        resumed = tuple(self.events(1)) if self.deleted_pod else ()
        return acc.Recovery(checkpoints, self.deleted_pod, recovery_s, resumed, self.problem)

    def runs(self, gpus_per_pod: float) -> list[acc.Run]:
        """Each pod's hold on its GPUs, first Running to its end (or the run's): a pod that trained to its `done`
        event finished; the gang the deletion ended was lost to the platform's restart (preempted in useful_work's
        words)."""
        out = []
        for p in self.pods.values():
            if p.first_running is None:
                continue
            end = p.ended if p.ended is not None else self.ended_at or p.first_running
            finished = p.phase == "Succeeded" or any(e.get("event") == "done" for e in acc.events_from_log(p.log))
            outcome = uw.RUN_FINISHED if finished else (
                uw.RUN_PREEMPTED if p.attempt < self.last_attempt or p.deleted else uw.RUN_FAILED)
            out.append(acc.Run(p.name, gpus_per_pod, max(0.0, end - p.first_running), outcome))
        return out

    def work(self) -> acc.Work:
        done = acc.of_kind(self.events(self.last_attempt), "done")
        return acc.Work(int(sum(float(str(e.get("tokens") or 0)) for e in done.values())),
                        int(sum(float(str(e.get("samples") or 0)) for e in done.values())))


def _attempt(pod: dict[str, Any]) -> int:
    try:
        return int(pod["metadata"].get("labels", {}).get(cv.JOBSET_RESTART_ATTEMPT_LABEL, "0"))
    except ValueError:
        return 0


def _rank(pod: dict[str, Any]) -> int | None:
    value = pod["metadata"].get("annotations", {}).get("batch.kubernetes.io/job-completion-index")
    return int(value) if value is not None and value.isdigit() else None


def _waiting(pod: dict[str, Any]) -> str | None:
    for c in pod.get("status", {}).get("containerStatuses") or []:
        waiting = c.get("state", {}).get("waiting") or {}
        if waiting.get("reason") in STUCK:
            return f"pod {pod['metadata']['name']}: {waiting.get('reason')}: {waiting.get('message', '')}".rstrip(": ")
    return None


class WorkloadRun:
    """Drives the run and records it (Observed)."""

    def __init__(self, client: PodClient, namespace: str, name: str, pods: int, window_s: int,
                 progress: Callable[[str], None], clock: Callable[[], float], sleep: Callable[[float], None]):
        self.client, self.namespace, self.name, self.pods, self.window_s = client, namespace, name, pods, window_s
        self.progress, self.clock, self.sleep = progress, clock, sleep
        self.seen = Observed()

    def poll(self) -> list[dict[str, Any]]:
        now = self.clock()
        live = self.client.pods(self.namespace, f"{cv.JOBSET_NAME_LABEL}={self.name}")
        names = set()
        for pod in live:
            name = pod["metadata"]["name"]
            names.add(name)
            p = self.seen.pods.setdefault(name, PodSeen(name, _attempt(pod), _rank(pod)))
            p.phase = pod.get("status", {}).get("phase", "Pending")
            if p.phase in ("Running", "Succeeded", "Failed") and p.first_running is None:
                p.first_running = now
            if p.phase in ("Succeeded", "Failed") and p.ended is None:
                p.ended = now
            if p.phase != "Pending" and (p.ended is None or not p.log or p.ended == now):
                try:
                    text = self.client.logs(self.namespace, name)
                except Exception:  # noqa: BLE001 - a pod between states has no log yet; the next poll reads it
                    text = ""
                if len(text) >= len(p.log):  # a pod being killed may answer with less than it printed
                    p.log = text
        for p in self.seen.pods.values():
            if p.name not in names and p.ended is None:
                p.ended = now
        return live

    def _gang_running(self, attempt: int) -> bool:
        """Every pod of the attempt's gang has run (a pod seen only after it finished counts too)."""
        gang = [p for p in self.seen.pods.values() if p.attempt == attempt]
        return len(gang) >= self.pods and all(p.first_running is not None for p in gang)

    def _jobset_failed(self) -> str | None:
        js = self.client.get_object("jobsets.jobset.x-k8s.io", self.namespace, self.name) or {}
        for c in js.get("status", {}).get("conditions") or []:
            if c.get("type") == "Failed" and c.get("status") == "True":
                return f"JobSet failed: {c.get('reason')}: {c.get('message')}"
        return None

    def _report(self, what: str, last: list[float]) -> None:
        now = self.clock()
        if now - last[0] >= PROGRESS_EVERY_S:
            last[0] = now
            train = [e for e in self.seen.events(self.seen.last_attempt) if e.get("event") == "train"]
            at = f"; step {train[-1].get('step')}, loss {train[-1].get('loss')}" if train else ""
            self.progress(f"{what} (attempt {self.seen.last_attempt}{at})")

    def run(self) -> Observed:
        seen, start, last = self.seen, self.clock(), [self.clock()]
        deadline = start + POD_START_TIMEOUT_S + SETUP_SLACK_S + 2 * self.window_s + RECOVERY_TIMEOUT_S
        while True:
            live = self.poll()
            now = self.clock()
            if seen.deleted_pod is not None and seen.recovered_at is None and self._gang_running(1):
                seen.recovered_at = now
                self.progress(f"step 5: the job recovered {now - (seen.deleted_at or now):.0f}s after the "
                              "deletion: every pod of the new gang Running")
            stuck = next((w for pod in live if (w := _waiting(pod))), None)
            if stuck:
                return self._end(f"a pod cannot start: {stuck}")
            # after the deletion only the new gang counts: the first gang's survivors fail on their lost peer
            attempt = seen.last_attempt
            events = seen.events(attempt) if seen.deleted_pod is None or attempt > 0 else []
            if acc.first_error(events) is not None:
                return self._end(None)
            done = acc.of_kind(events, "done")
            if len(done) >= self.pods:
                return self._end(None)
            if seen.deleted_pod is None:
                if not self._gang_running(0) and now - start > POD_START_TIMEOUT_S and not seen.events(0):
                    phases = ", ".join(f"{p.name} {p.phase}" for p in seen.pods.values()) or "no pod"
                    return self._end(f"the job's {self.pods} pods not Running within {POD_START_TIMEOUT_S}s: {phases}")
                checkpoint = next((e for e in seen.events(0) if e.get("event") == "checkpoint"), None)
                if checkpoint is not None and checkpoint.get("ok") is True:
                    self._delete(checkpoint)
                    continue
                self._report("step 2-4: the first gang runs", last)
            elif seen.recovered_at is None:
                if now - (seen.deleted_at or now) > RECOVERY_TIMEOUT_S:
                    return self._end(f"the job not running again within {RECOVERY_TIMEOUT_S}s of the deletion")
                else:
                    self._report("step 5: waiting for the platform to recreate the gang", last)
            else:
                self._report("step 4-5: the recovered gang trains", last)
            if seen.deleted_pod is None or seen.recovered_at is not None:
                failed = self._jobset_failed()
                if failed:
                    self.poll()
                    return self._end(failed)
            if now > deadline:
                return self._end(f"the run did not end within {deadline - start:.0f}s")
            self.sleep(POLL_S)

    def _delete(self, checkpoint: dict[str, object]) -> None:
        gang = sorted((p for p in self.seen.pods.values() if p.attempt == 0 and p.ended is None),
                      key=lambda p: p.rank if p.rank is not None else -1)
        victim = gang[-1]
        self.progress(f"step 5: rank 0 wrote the checkpoint of step {checkpoint.get('step')} in "
                      f"{checkpoint.get('seconds')}s; deleting pod {victim.name} (rank {victim.rank})")
        self.client.delete_pod(self.namespace, victim.name)
        victim.deleted = True
        self.seen.deleted_pod, self.seen.deleted_at = victim.name, self.clock()

    def _end(self, problem: str | None) -> Observed:
        self.seen.problem = problem
        self.seen.ended_at = self.clock()
        if problem:
            self.progress(f"the run ended: {problem}")
        return self.seen
