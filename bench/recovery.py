"""Recovery benchmark: from a GPU node's failure to every pod of the job on it Running again.

One fresh cluster of the live test stack (tests/live/stack.yaml) on ports of its own (32343/22990), deployed
by the real engine. Per trial, the lender's 2-node job (8 H100 per pod, topology-aware pool `train` of 4
nodes, so two are spare) runs; one of its nodes then fails (localcluster/node_faults.py) and the clock runs
until both of the job's pods are Running again (a watch on the pods, client clock):

  not-ready  the node reports NotReady: the node lifecycle controller taints it, the taint eviction
             controller evicts the pod once its toleration of a lost node runs out, Kueue records the node
             as failed and places the pod's replacement on a spare node, the Job controller recreates it
  deleted    the Node object is deleted (an instance gone): Kueue at once, the pod when the Job controller
             sees it gone

The job tolerates a lost node for --toleration seconds (default 2, as the live tests) instead of the
template's 60: the figure is the platform's own reaction; on EKS add the template's 60 s and, for a node that
stops reporting, the node lifecycle controller's 50 s grace period. After each trial the node is repaired
(or registered again) and the platform emptied.

    python -m bench.recovery [--trials 10] [--toleration 2] [--json recovery.json] [--keep]

Prints one JSON object: per failure kind, trials, p50, p95 and max seconds. Exit status: 0 done, 2 a step
failed, 3 tools missing.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import ROOT, run_on_session, tools_missing
from bench.live import clean, percentile, progress, wait
from gpu_platform.jobs import JobRequest, job
from gpu_platform.nodes import fake_nodes
from gpu_platform.stack_files import load_plan
from localcluster import node_faults
from localcluster.api import Client, path_of
from localcluster.session import CACHE, Session, SessionError
from localcluster.signals import interrupt_on_sigterm

STACK_FILE = ROOT / "tests" / "live" / "stack.yaml"
TOOLS = ("pulumi", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kueue", "kwok", "helm", "etcd")
APISERVER_PORT, ETCD_PORT = 32343, 22990
KINDS = ("not-ready", "deleted")
TEAM, POOL, GPUS, PODS = "lender", "train", 8, 2


class PodWatch:
    """The job's pods as a watch sees them: uid -> (phase, node, deleting), updated as events arrive."""

    def __init__(self, client: Client, namespace: str, job_name: str):
        self.client, self.path = client, f"/api/v1/namespaces/{namespace}/pods"
        self.selector = f"batch.kubernetes.io/job-name={job_name}"
        self.pods: dict[str, tuple[str, str, bool]] = {}
        self.changed = threading.Condition()
        self._stop = False
        listing = client.get(self.path, labelSelector=self.selector)
        for p in listing["items"]:
            self._record("ADDED", p)
        self._thread = threading.Thread(target=self._run, args=(listing["metadata"]["resourceVersion"],), daemon=True)
        self._thread.start()

    def _record(self, kind: str, pod: dict[str, Any]) -> None:
        uid = pod["metadata"]["uid"]
        with self.changed:
            if kind == "DELETED":
                self.pods.pop(uid, None)
            else:
                self.pods[uid] = (pod.get("status", {}).get("phase", ""), pod["spec"].get("nodeName", ""),
                                  bool(pod["metadata"].get("deletionTimestamp")))
            self.changed.notify_all()

    def _run(self, rv: str) -> None:
        """Events of the namespace's pods (Client.watch takes no selector): the job's own are recorded."""
        job_name = self.selector.split("=", 1)[1]
        while not self._stop:
            for event in self.client.watch(self.path, rv, timeout_seconds=300):
                obj = event["object"]
                rv = obj["metadata"].get("resourceVersion", rv)
                if event["type"] in ("ADDED", "MODIFIED", "DELETED") and \
                        obj["metadata"].get("labels", {}).get("batch.kubernetes.io/job-name") == job_name:
                    self._record(event["type"], obj)
                if self._stop:
                    return

    def running(self) -> dict[str, str]:
        with self.changed:
            return {uid: node for uid, (phase, node, deleting) in self.pods.items() if phase == "Running" and not deleting}

    def wait_running(self, timeout: float, different_from: set[str] | None = None) -> float:
        """Block until PODS pods run (none of them in `different_from` when given); the client clock then."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                run = {uid for uid, (phase, _, deleting) in self.pods.items() if phase == "Running" and not deleting}
                if len(run) == PODS and (different_from is None or run != different_from):
                    return time.perf_counter()
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SessionError(f"timed out waiting for {PODS} pods Running (seen {self.pods})")
                self.changed.wait(min(left, 1.0))

    def stop(self) -> None:
        self._stop = True


def submit(client: Client, plan, name: str, toleration: int) -> None:
    (obj, service) = job(plan, JobRequest(team=TEAM, pool=POOL, gpus=GPUS, nodes=PODS, name=name, duration="1h"))
    for t in obj["spec"]["template"]["spec"]["tolerations"]:
        if t["effect"] == "NoExecute":
            t["tolerationSeconds"] = toleration
    client.create(path_of(service, "services"), service)
    client.create(path_of(obj, "jobs"), obj)


def trial(client: Client, plan, kind: str, n: int, toleration: int) -> float:
    name = f"{kind}-{n}"
    namespace = next(t for t in plan.teams if t.name == TEAM).namespaces[0]
    watch = PodWatch(client, namespace, name)
    try:
        submit(client, plan, name, toleration)
        watch.wait_running(120)
        before = watch.running()
        lost = sorted(before.values())[0]
        at = time.perf_counter()
        if kind == "not-ready":
            node_faults.fail(client, lost)
        else:
            node_faults.delete(client, lost)
        done = watch.wait_running(180, different_from=set(before))
        after = watch.running()
        if lost in after.values():
            raise SessionError(f"{name}: a pod runs on the failed node {lost} again")
        if kind == "not-ready":
            node_faults.repair(client, lost)
        else:
            node_faults.register(client, plan, lost)
        wait(lambda: node_faults.healthy(client, lost), 60, f"{lost} healthy again")
        return done - at
    finally:
        watch.stop()
        client.delete(f"/api/v1/namespaces/{namespace}/services/{name}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--toleration", type=int, default=2, help="seconds the job tolerates a lost node")
    ap.add_argument("--kinds", default=",".join(KINDS), help=f"comma separated, of {', '.join(KINDS)}")
    ap.add_argument("--keep", action="store_true", help="leave the cluster running")
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args(argv)
    kinds = [k for k in args.kinds.split(",") if k]
    if not kinds or any(k not in KINDS for k in kinds) or args.trials < 1:
        ap.error(f"--kinds takes {', '.join(KINDS)}; --trials at least 1")
    interrupt_on_sigterm()  # a SIGTERM stops the benchmark's cluster, as Ctrl-C does
    if tools_missing("recovery", TOOLS, CACHE / "bin"):
        return 3
    tmp = Path(tempfile.mkdtemp(prefix="gpu-platform-bench-recovery-"))
    session = Session(tmp, STACK_FILE, apiserver_port=APISERVER_PORT, etcd_port=ETCD_PORT)
    plan = load_plan(None, str(STACK_FILE))[1]
    names = [n["metadata"]["name"] for n in fake_nodes(plan)["items"]]
    figures: dict[str, Any] = {"toleration_s": args.toleration}

    def body() -> None:
        progress("starting the cluster ...")
        session.start()
        progress("pulumi up of the live stack ...")
        session.deploy()
        client = session.client()
        wait(lambda: all(node_faults.healthy(client, n) for n in names), 120, "every node healthy")
        for kind in kinds:
            seconds: list[float] = []
            for n in range(args.trials):
                seconds.append(trial(client, plan, kind, n, args.toleration))
                progress(f"{kind} {n + 1}/{args.trials}: all pods Running again after {seconds[-1]:.2f}s")
                clean(client, plan)
            figures[kind] = {"trials": len(seconds), "p50_s": round(percentile(seconds, 0.5), 2),
                             "p95_s": round(percentile(seconds, 0.95), 2), "max_s": round(max(seconds), 2)}

    return run_on_session("bench.recovery", session, tmp, args.keep, body, figures, args.json)


if __name__ == "__main__":
    sys.exit(main())
