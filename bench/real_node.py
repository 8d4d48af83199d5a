"""Real node benchmark: from a tenant's submission to its pod Running on the real node, and what a preemption costs.

One fresh cluster of the real node's test stack (tests/live/real_node_stack.yaml, copied into the run's directory:
pool `small`, one L4 time-sliced 4 ways, team zeta holding one unit of it, a 5 s termination grace period) with the
real node (localcluster/realnode: a kubelet with containerd and runc) registered in pool `small`
(LOCAL_CLUSTER_REAL_NODE=small), on ports of its own (32443/22890, below the kernel's ephemeral port range), deployed by the real engine. The tenant submits
with `kubectl create` under a member's certificate; a watch on the team's pods times, on the client clock:

  submission  from the start of `kubectl create` of the job template's Job (one unit, development, 5 s) to its
              pod Running on the real node, --trials times; each job is then deleted and the next trial waits
              for its pod gone and the team's quota free (it holds one unit)
  preemption  a development job Running (the template's stand-in, `sleep` as the container's PID 1, ignores
              SIGTERM, so the kubelet SIGKILLs it after the grace period), then a production-inference job
              submitted: from that submission to the preempted pod gone (Kueue evicts, the Job controller deletes
              the pod, the kubelet kills it after the grace period) and to the preemptor Running on the real node,
              --preemptions times

Kueue releases a preempted Job's quota as soon as its pod is terminating (a Job is inactive once status.active is 0,
and the Job controller does not count a pod with a deletionTimestamp as active: kubernetes-sigs/kueue
keps/6143-pod-integration-fast-quota-release/README.md), so the preemptor's pod waits for the real node through
the grace period, and Karpenter's KWOK provider would add a simulated node of the pool for it: with
the local 5 s registration delay that node could join first and take the preemptor. The run sets the delay to 30
minutes (on EKS an instance takes minutes to join too), and a measured pod that runs anywhere but on the real node
fails the run, naming its node.

    python -m bench.real_node [--trials 20] [--preemptions 5] [--json real-node.json] [--keep]    # as root

Prints one JSON object: per figure trials, p50, p95 and max seconds, every trial's seconds, the kubelet's and
containerd's versions from the node's nodeInfo, the grace period, and the machine's load average at the start and
the end. Exit status: 0 done, 2 a step failed, 3 tools missing, not root, or no real node can start on this machine
now (localcluster.realnode.preflight: another real node's kubelet, the pod network clashing with a route).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, TypeVar

from bench.common import ROOT, run_on_session, tools_missing
from bench.live import percentile, progress
from gpu_platform.jobs import JobRequest, job
from gpu_platform.plan import Plan, TeamPlan
from gpu_platform.stack_files import load_plan
from localcluster import realnode
from localcluster.api import CLUSTER_QUEUES, ApiError, Client
from localcluster.driver import LocalCluster, run
from localcluster.session import CACHE, Session, SessionError
from localcluster.signals import interrupt_on_sigterm

STACK_FILE = ROOT / "tests" / "live" / "real_node_stack.yaml"
# The tests' cluster of the same stack is on 34443/34790 (tests/live/test_real_node.py); the script takes the API
# server's port +1 to +23 for the other components, the real node's kubelet included.
APISERVER_PORT, ETCD_PORT = 32443, 22890
TOOLS = ("pulumi", "pulumi-language-python", "pulumi-resource-kubernetes", "etcd", "kube-apiserver",
         "kube-controller-manager", "kube-scheduler", "kueue", "kwok", "karpenter-kwok", "helm",
         "kubelet", "gpu-device-plugin", "containerd", "ctr")
TEAM, POOL = "zeta", "small"
# Karpenter's node for a pod that waits joins after this (LOCAL_CLUSTER_SCALE_UP_DELAY, the KWOKNodeClass's
# nodeRegistrationDelay: localcluster/autoscaler.py; why: the docstring).
REGISTRATION_DELAY = "30m"
# The Job controller's label on its pods (k8s.io/api batch/v1/types.go JobNameLabel).
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
WORKLOADS_IN = "/apis/kueue.x-k8s.io/v1beta2/namespaces/{ns}/workloads"
T = TypeVar("T")


class RealNodeSession(Session):
    """A live session whose cluster also runs the real node in POOL (LOCAL_CLUSTER_REAL_NODE)."""

    def cluster(self) -> LocalCluster:
        return dataclasses.replace(super().cluster(), real_node=POOL)


def summary(seconds: list[float], digits: int = 2) -> dict[str, Any]:
    """Trials, p50, p95 and max of one figure (bench.live's percentile: the nearest rank)."""
    if not seconds:
        raise ValueError("a figure needs at least one trial")
    return {"trials": len(seconds), "p50_s": round(percentile(seconds, 0.5), digits),
            "p95_s": round(percentile(seconds, 0.95), digits), "max_s": round(max(seconds), digits)}


def quota_free(cluster_queue: dict[str, Any]) -> bool:
    """Whether a ClusterQueue charges nothing to any admitted workload: every flavor's every resource totals zero
    (status.flavorsUsage[].resources[].total: kubernetes-sigs/kueue apis/kueue/v1beta2/clusterqueue_types.go)."""
    return all(r.get("total") in (None, "0")
               for f in cluster_queue.get("status", {}).get("flavorsUsage", []) for r in f.get("resources", []))


@dataclasses.dataclass
class PodTimes:
    """One pod of a Job as the watch saw it, on the client clock (time.perf_counter) at each event's arrival."""

    job: str
    node: str = ""
    running_at: float | None = None    # first seen in phase Running
    deleting_at: float | None = None   # first seen with a deletionTimestamp
    gone_at: float | None = None       # its DELETED event (or missing from a list)


class TeamPods:
    """The Job pods of one namespace, uid -> PodTimes, from a list and a watch (the namespace's pods: Client.watch
    takes no selector). A watch that ends in an error lists again; a pod missing from that list is gone."""

    def __init__(self, client: Client, namespace: str) -> None:
        self.client, self.path = client, f"/api/v1/namespaces/{namespace}/pods"
        self.pods: dict[str, PodTimes] = {}
        self.changed = threading.Condition()
        self.error: str | None = None
        self._stop = False
        rv = self._list()
        self._thread = threading.Thread(target=self._run, args=(rv,), daemon=True)
        self._thread.start()

    def _list(self) -> str:
        listing = self.client.get(self.path)
        now = time.perf_counter()
        present = {p["metadata"]["uid"] for p in listing["items"]}
        with self.changed:
            for uid, seen in self.pods.items():
                if uid not in present and seen.gone_at is None:
                    seen.gone_at = now
            for p in listing["items"]:
                self._record("ADDED", p, now)
        return listing["metadata"]["resourceVersion"]

    def _record(self, kind: str, pod: dict[str, Any], now: float) -> None:
        job_name = pod["metadata"].get("labels", {}).get(JOB_NAME_LABEL)
        if not job_name:
            return
        with self.changed:
            seen = self.pods.setdefault(pod["metadata"]["uid"], PodTimes(job_name))
            seen.node = pod["spec"].get("nodeName") or seen.node
            if kind == "DELETED":
                seen.gone_at = seen.gone_at or now
            else:
                if pod.get("status", {}).get("phase") == "Running" and seen.running_at is None:
                    seen.running_at = now
                if pod["metadata"].get("deletionTimestamp") and seen.deleting_at is None:
                    seen.deleting_at = now
            self.changed.notify_all()

    def _run(self, rv: str) -> None:
        try:
            while not self._stop:
                for event in self.client.watch(self.path, rv, timeout_seconds=300):
                    if event["type"] == "ERROR":  # e.g. 410 Gone: the resourceVersion is too old
                        rv = self._list()
                        break
                    obj = event["object"]
                    rv = obj["metadata"].get("resourceVersion", rv)
                    if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                        self._record(event["type"], obj, time.perf_counter())
                    if self._stop:
                        return
        except Exception as err:  # noqa: BLE001  (told to the waiter, which fails the run with it)
            with self.changed:
                self.error = f"the pod watch failed: {err}"
                self.changed.notify_all()

    def first_running(self, job_name: str) -> PodTimes | None:
        with self.changed:
            runs = [p for p in self.pods.values() if p.job == job_name and p.running_at is not None]
            return min(runs, key=lambda p: p.running_at or 0.0, default=None)

    def wait(self, find: Callable[[], T | None], timeout: float, what: str) -> T:
        """Block until find() returns something (checked as each event arrives); SessionError on time-out."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                found = find()
                if found is not None:
                    return found
                if self.error:
                    raise SessionError(self.error)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SessionError(f"timed out after {timeout:.0f}s waiting for {what}")
                self.changed.wait(min(left, 1.0))

    def stop(self) -> None:
        self._stop = True


@dataclasses.dataclass
class Bench:
    client: Client
    plan: Plan
    team: TeamPlan
    env: dict[str, str]
    tenant: Path
    node: str

    @property
    def namespace(self) -> str:
        return self.team.namespaces[0]

    def objects(self, name: str, priority: str, duration: str) -> list[dict[str, Any]]:
        return job(self.plan, JobRequest(team=TEAM, pool=POOL, gpus=1, priority=priority, duration=duration,
                                         name=name))

    def submit(self, name: str, priority: str, duration: str) -> float:
        """`kubectl create` of the Job as the tenant; the client clock when kubectl was started."""
        body = json.dumps({"apiVersion": "v1", "kind": "List", "items": self.objects(name, priority, duration)})
        at = time.perf_counter()
        run(["kubectl", "--kubeconfig", str(self.tenant), "create", "-f", "-"], self.env, timeout=60, input=body)
        return at

    def on_real_node(self, pod: PodTimes, what: str) -> PodTimes:
        if pod.node != self.node:
            raise SessionError(f"{what} ran on {pod.node or 'no node'}, not on the real node {self.node}")
        return pod

    def delete_and_free(self, *names: str) -> None:
        """Delete the Jobs (in order), then wait for their pods, Jobs and Workloads gone and the team's quota free."""
        ns = self.namespace
        for name in names:
            try:
                self.client.delete(f"/apis/batch/v1/namespaces/{ns}/jobs/{name}", propagationPolicy="Background")
            except ApiError as err:
                if err.status != 404:
                    raise

        def free() -> bool:
            selector = f"{JOB_NAME_LABEL} in ({','.join(names)})"
            if self.client.get(f"/api/v1/namespaces/{ns}/pods", labelSelector=selector)["items"]:
                return False
            if any(j["metadata"]["name"] in names
                   for j in self.client.get(f"/apis/batch/v1/namespaces/{ns}/jobs")["items"]):
                return False
            if any(o.get("name") in names for w in self.client.get(WORKLOADS_IN.format(ns=ns))["items"]
                   for o in w["metadata"].get("ownerReferences", [])):
                return False
            return quota_free(self.client.get(f"{CLUSTER_QUEUES}/{self.team.cluster_queue}"))

        wait_until(free, 120, f"the pods of {', '.join(names)} gone and {TEAM}'s quota free")


def wait_until(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    """bench.live.wait at 0.5 s: each check is four requests."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise SessionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.5)


def submission_trial(b: Bench, pods: TeamPods, n: int) -> float:
    name = f"submit-{n}"
    at = b.submit(name, "development", "5s")
    pod = pods.wait(lambda: pods.first_running(name), 180, f"{name}'s pod Running")
    b.on_real_node(pod, f"{name}'s pod")
    b.delete_and_free(name)
    return (pod.running_at or at) - at


def preemption_trial(b: Bench, pods: TeamPods, n: int) -> dict[str, float]:
    low, high = f"low-{n}", f"high-{n}"
    b.submit(low, "development", "10m")
    victim = b.on_real_node(pods.wait(lambda: pods.first_running(low), 180, f"{low}'s pod Running"), f"{low}'s pod")
    at = b.submit(high, "production-inference", "10m")
    gone = pods.wait(lambda: victim.gone_at, 120, f"{low}'s pod gone")
    if victim.deleting_at is None or victim.deleting_at < at:
        raise SessionError(f"{low}'s pod was not stopped by {high}'s submission")
    preemptor = pods.wait(lambda: pods.first_running(high), 180, f"{high}'s pod Running")
    b.on_real_node(preemptor, f"{high}'s pod")
    # The preempted Job first: once the preemptor is gone Kueue would admit it again.
    b.delete_and_free(low, high)
    return {"to_preempted_gone_s": round(gone - at, 3),
            "to_preemptor_running_s": round((preemptor.running_at or at) - at, 3),
            "deletion_to_gone_s": round(gone - victim.deleting_at, 3)}


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20, help="submissions to Running")
    ap.add_argument("--preemptions", type=int, default=5, help="preemptions")
    ap.add_argument("--keep", action="store_true", help="leave the cluster running")
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args(argv)
    if args.trials < 1 or args.preemptions < 1:
        ap.error("--trials and --preemptions take 1 or more")
    interrupt_on_sigterm()  # a SIGTERM stops the benchmark's cluster, as Ctrl-C does
    if os.geteuid() != 0:
        print("bench.real_node: the real node needs root (it mounts, makes cgroups and network links)", file=sys.stderr)
        return 3
    if tools_missing("real_node", TOOLS, CACHE / "bin"):
        return 3
    tmp = Path(tempfile.mkdtemp(prefix="gpu-platform-bench-real-node-"))
    session = RealNodeSession(tmp, STACK_FILE, apiserver_port=APISERVER_PORT, etcd_port=ETCD_PORT,
                              scale_up_delay=REGISTRATION_DELAY)
    problems = realnode.preflight(realnode.Layout(session.cluster_dir))
    if shutil.which("kubectl", path=session.cluster().env()["PATH"]) is None:
        problems.append("kubectl is not on PATH")
    if problems:
        print("bench.real_node: " + "; ".join(problems), file=sys.stderr)
        shutil.rmtree(tmp, ignore_errors=True)
        return 3
    plan = load_plan(None, str(STACK_FILE))[1]
    team = next(t for t in plan.teams if t.name == TEAM)
    figures: dict[str, Any] = {"load_average": {"start": load_average()}}

    def measure() -> None:
        progress("starting the cluster with the real node ...")
        session.start()
        progress("pulumi up of the real node's stack ...")
        session.deploy()
        client = session.client()
        node = realnode.node_name(plan.pools_by_name[POOL])
        info = client.get(f"/api/v1/nodes/{node}")["status"]["nodeInfo"]  # k8s.io/api core/v1/types.go NodeSystemInfo
        figures["node"] = {"name": node, "kubelet": info["kubeletVersion"],
                           "container_runtime": info["containerRuntimeVersion"]}
        template = job(plan, JobRequest(team=TEAM, pool=POOL, gpus=1, priority="development"))[0]
        figures["grace_period_s"] = template["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        tenant = session.cluster().user(f"{TEAM}-member", team.member_groups[0])
        b = Bench(client, plan, team, session.env(), tenant, node)
        pods = TeamPods(client, b.namespace)
        figures["load_average"]["trials_start"] = load_average()
        submissions: list[float] = []
        preemptions: list[dict[str, float]] = []
        try:
            for n in range(args.trials):
                submissions.append(submission_trial(b, pods, n))
                progress(f"submission {n + 1}/{args.trials}: Running on {node} after {submissions[-1]:.2f}s")
            for n in range(args.preemptions):
                preemptions.append(preemption_trial(b, pods, n))
                p = preemptions[-1]
                progress(f"preemption {n + 1}/{args.preemptions}: preempted pod gone after "
                         f"{p['to_preempted_gone_s']:.2f}s, preemptor Running after {p['to_preemptor_running_s']:.2f}s")
        finally:
            pods.stop()
        figures["submission_to_running"] = summary(submissions)
        figures["preemption"] = {key.removesuffix("_s"): summary([p[key] for p in preemptions])
                                 for key in ("to_preempted_gone_s", "to_preemptor_running_s", "deletion_to_gone_s")}
        figures["samples"] = {"submission_to_running_s": [round(s, 3) for s in submissions], "preemption": preemptions}
        figures["load_average"]["end"] = load_average()

    def body() -> None:
        """An API request refused or failed is a step that failed (exit 2), as a command's is."""
        try:
            measure()
        except ApiError as err:
            raise SessionError(str(err)) from None

    return run_on_session("bench.real_node", session, tmp, args.keep, body, figures, args.json)


if __name__ == "__main__":
    sys.exit(main())
