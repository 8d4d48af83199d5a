"""Live platform figures: how fast the local cluster comes up, how fast Kueue admits, how fast a lender
gets back what it lent. The live test layer asserts the behaviour; this measures it.

One fresh cluster of the live test stack (tests/live/stack.yaml) on ports of its own, deployed by the
real engine, then:
  start      `scripts/local-cluster start` from an empty state directory, and again warm (stopped, kept)
  admission  submit to Admitted, per job, over WAVES waves of 32 one-GPU jobs that fit at once (lender
             16, alpha 8, beta 8: no queueing behind capacity, so the figure is Kueue's own latency),
             seen through a watch on Workloads
  reclaim    beta at its nominal 8, alpha borrowing the lender's 8 (two node-sized jobs), then the lender asks for its 16: from
             that submission until both of its jobs are admitted (the borrower preempted), TRIALS times

    python -m bench.live [--waves 4] [--trials 5] [--keep] [--plot live-admission.png]

Reports absolute seconds (these are latencies a user waits through) and, as ratios within the run, p95
over p50 and reclaim over admission p50. Exit status: 0 done, 2 a step failed, 3 tools missing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import ROOT, run_on_session, tools_missing
from gpu_platform.stack_files import load_plan
from gpu_platform.jobs import JobRequest, job
from localcluster.api import CLUSTER_QUEUES, JOBS, WORKLOADS, Client, path_of
from localcluster.session import CACHE, Session, SessionError
from localcluster.signals import interrupt_on_sigterm

STACK_FILE = ROOT / "tests" / "live" / "stack.yaml"
TOOLS = ("pulumi", "kube-apiserver", "kube-scheduler", "kueue", "kwok", "helm", "etcd")
WAVE = (("lender", 16), ("alpha", 8), ("beta", 8))


def percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def progress(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class AdmissionWatch:
    """First time each Job's Workload is seen Admitted (client clock), from a watch stream."""

    def __init__(self, client: Client):
        self.client = client
        self.admitted: dict[str, float] = {}
        self._stop = False
        rv = client.get(WORKLOADS)["metadata"]["resourceVersion"]
        self._thread = threading.Thread(target=self._run, args=(rv,), daemon=True)
        self._thread.start()

    def _run(self, rv: str) -> None:
        while not self._stop:
            for event in self.client.watch(WORKLOADS, rv, timeout_seconds=300):
                obj = event["object"]
                rv = obj["metadata"].get("resourceVersion", rv)
                if event["type"] in ("ADDED", "MODIFIED"):
                    admitted = any(c["type"] == "Admitted" and c["status"] == "True"
                                   for c in obj.get("status", {}).get("conditions", []))
                    for owner in obj["metadata"].get("ownerReferences", []):
                        if admitted and owner.get("kind") == "Job":
                            self.admitted.setdefault(owner["name"], time.perf_counter())
                if self._stop:
                    return

    def stop(self) -> None:
        self._stop = True


def submit(client: Client, plan, team: str, gpus: int, name: str, duration: str = "1h") -> float:
    (obj,) = job(plan, JobRequest(team=team, pool="train", gpus=gpus, name=name, duration=duration))
    at = time.perf_counter()
    client.create(path_of(obj, "jobs"), obj)
    return at


def wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise SessionError(f"timed out waiting for {what}")


def clean(client: Client, plan) -> None:
    tenants = {ns for t in plan.teams for ns in t.namespaces}
    for team in plan.teams:
        for ns in team.namespaces:
            client.delete(f"/apis/batch/v1/namespaces/{ns}/jobs", propagationPolicy="Background")

    def empty() -> bool:
        if client.get(WORKLOADS)["items"] or client.get(JOBS)["items"]:
            return False
        # Pods too: one still terminating holds its node's GPUs for the scheduler and for topology placement.
        if any(p["metadata"]["namespace"] in tenants for p in client.get("/api/v1/pods")["items"]):
            return False
        for cq in client.get(CLUSTER_QUEUES)["items"]:
            for f in cq.get("status", {}).get("flavorsUsage", []):
                if any(r.get("total") not in (None, "0") for r in f.get("resources", [])):
                    return False
        return True

    wait(empty, 120, "an empty platform")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--waves", type=int, default=4)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--keep", action="store_true", help="leave the cluster running")
    ap.add_argument("--plot", help="write the admission latency CDF to this PNG")
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args(argv)
    interrupt_on_sigterm()  # a SIGTERM stops the benchmark's cluster, as Ctrl-C does
    if tools_missing("live", TOOLS, CACHE / "bin"):
        return 3
    tmp = Path(tempfile.mkdtemp(prefix="gpu-platform-bench-live-"))
    session = Session(tmp, STACK_FILE)
    plan = load_plan(None, str(STACK_FILE))[1]
    figures: dict[str, Any] = {}

    def body() -> None:
        progress("cold start ...")
        figures["start_cold_s"] = round(session.start(), 1)
        session.stop()
        progress("warm start ...")
        figures["start_warm_s"] = round(session.start(), 1)
        progress("pulumi up of the live stack ...")
        figures["deploy_s"] = round(session.deploy(), 1)
        client = session.client()
        watch = AdmissionWatch(client)
        latencies: list[float] = []
        for w in range(args.waves):
            submitted: dict[str, float] = {}
            for team, count in WAVE:
                for i in range(count):
                    name = f"w{w}-{team}-{i}"
                    submitted[name] = submit(client, plan, team, 1, name)
            wait(lambda: all(n in watch.admitted for n in submitted), 120, f"wave {w} admitted")
            latencies += [watch.admitted[n] - t for n, t in submitted.items()]
            progress(f"wave {w + 1}/{args.waves}: {len(submitted)} jobs admitted, p50 so far "
                     f"{statistics.median(latencies):.2f}s")
            clean(client, plan)
        if not latencies:
            raise SessionError("--waves must be at least 1")
        figures["admission"] = {"jobs": len(latencies), "p50_s": round(percentile(latencies, 0.5), 3),
                                "p95_s": round(percentile(latencies, 0.95), 3), "max_s": round(max(latencies), 3)}
        reclaims: list[float] = []
        for t in range(args.trials):
            submit(client, plan, "beta", 8, f"r{t}-beta")
            # node-sized, so a victim frees a node (see tests/live/test_queueing.py)
            for i in range(2):
                submit(client, plan, "alpha", 8, f"r{t}-alpha-{i}")
            wait(lambda: all(f"r{t}-alpha-{i}" in watch.admitted for i in range(2)) and f"r{t}-beta" in watch.admitted,
                 120, "alpha borrowing the lender's 8")
            at = submit(client, plan, "lender", 8, f"r{t}-lender-0")
            submit(client, plan, "lender", 8, f"r{t}-lender-1")
            wait(lambda: f"r{t}-lender-0" in watch.admitted and f"r{t}-lender-1" in watch.admitted, 120,
                 "the lender's 16 admitted")
            reclaims.append(max(watch.admitted[f"r{t}-lender-{i}"] for i in range(2)) - at)
            progress(f"reclaim {t + 1}/{args.trials}: {reclaims[-1]:.2f}s")
            clean(client, plan)
        watch.stop()
        figures["reclaim"] = {"trials": len(reclaims), "p50_s": round(statistics.median(reclaims), 2),
                              "max_s": round(max(reclaims), 2)}
        figures["ratios"] = {
            "admission_p95_over_p50": round(figures["admission"]["p95_s"] / figures["admission"]["p50_s"], 2),
            "reclaim_p50_over_admission_p50": round(figures["reclaim"]["p50_s"] / figures["admission"]["p50_s"], 2),
            "warm_over_cold_start": round(figures["start_warm_s"] / figures["start_cold_s"], 2),
        }
        if args.plot:
            plot(latencies, Path(args.plot))

    return run_on_session("bench.live", session, tmp, args.keep, body, figures, args.json)


def plot(latencies: list[float], out: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("bench.live: matplotlib not installed; no plot", file=sys.stderr)
        return
    s = sorted(latencies)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(s, [(i + 1) / len(s) for i in range(len(s))])
    ax.set_xlabel("submit to Admitted (s)")
    ax.set_ylabel("fraction of jobs")
    ax.set_title(f"Kueue admission latency, {len(s)} jobs (live local cluster)")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


if __name__ == "__main__":
    sys.exit(main())
