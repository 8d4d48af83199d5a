"""Elastic capacity and the workload kinds, live: how long a job waits for nodes that do not exist yet, and
how long each kind takes from Kueue's admission to all its pods Running.

One fresh cluster of the live test stack (tests/live/stack.yaml) on ports of its own (33443/33790, or
GPU_PLATFORM_BENCH_ELASTIC_APISERVER_PORT / _ETCD_PORT), deployed by the real engine, with the four workload
controllers (JobSet, Trainer, LeaderWorkerSet, KubeRay) and Karpenter's KWOK provider running:

  scale-up  epsilon's 2-node job (2 x 4 L4) on the `burst` pool, empty (0-2 nodes): from the submission to
            both pods Running on the two nodes Karpenter adds, TRIALS times; between trials the pool goes
            back to 0 (burst's NodePool is given a 5 s scale-down delay for the benchmark, so it does quickly).
            The figure is the node registration delay the cluster was started with (LOCAL_CLUSTER_SCALE_UP_DELAY,
            5 s by default: on EKS an instance's launch, boot and join) plus what the platform adds: Kueue's
            admission, the Job's pods, Karpenter batching the pending pods and creating the NodeClaims, the node
            coming Ready, the scheduler binding, KWOK starting the pods. Reported both ways.
  kinds     per kind, TRIALS submissions one after another, each from its Workload's admission to all its pods
            Running (pods found by the label the what-if replay gives them, simulator/kinds.py), then deleted:
              job, jobset, trainjob  the lender's 2 x 8 H100 on the topology-aware `train` pool (whole)
              rayjob                 the lender's Ray head on CPU capacity and 2 GPU workers (8 H100 each) on
                                     `train`; its submitter comes later and is not counted (it waits for the
                                     Ray dashboard, which no simulated node serves)
              lws                    delta's serving group of 2 pods (1 time-sliced L4 replica each) on the
                                     `shared` pool, whose node Karpenter adds for a warm-up submission first
                                     (so the figure is the controllers', not a scale-up)

    python -m bench.elastic [--trials 20] [--parts scale-up,kinds] [--plot bench-elastic.png] [--json f] [--keep]

Prints one JSON object: p50/p95/max seconds per figure and, as ratios within the run, each p95 over its p50
and each kind's p50 over the batch Job's. Exit status: 0 done, 2 a step failed, 3 tools missing.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import ROOT, run_on_session, tools_missing
from bench.live import percentile, progress, wait
from gpu_platform import conventions as cv
from gpu_platform.jobs import JobRequest
from gpu_platform.stack_files import load_plan
from gpu_platform.workload_templates import template
from localcluster.api import WORKLOADS, ApiError, Client
from localcluster.autoscaler import DEFAULT_SCALE_UP_DELAY, SCALE_UP_DELAY_ENV
from localcluster.session import CACHE, Session, SessionError
from localcluster.signals import interrupt_on_sigterm
from simulator import kinds as sim_kinds
from simulator.cli import go_duration_s
from simulator.submit import create

STACK_FILE = ROOT / "tests" / "live" / "stack.yaml"
TOOLS = ("pulumi", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kueue", "kwok", "helm", "etcd",
         "karpenter-kwok", "jobset-controller", "trainer-controller-manager", "lws-controller", "kuberay-operator")
# Within Linux's ephemeral range (32768-60999): a busy port makes scripts/local-cluster refuse to start, by name.
APISERVER_PORT = int(os.environ.get("GPU_PLATFORM_BENCH_ELASTIC_APISERVER_PORT", "33443"))
ETCD_PORT = int(os.environ.get("GPU_PLATFORM_BENCH_ELASTIC_ETCD_PORT", "33790"))
PARTS = ("scale-up", "kinds")
SCALE_UP = ("epsilon", "burst", 4, 2)            # team, pool, GPUs a pod, pods
BURST_SCALE_DOWN = "5s"
# (team, pool, units a pod, pods) per kind; the pods counted Running (a RayJob's head too, not its submitter).
KIND_SHAPES: dict[str, tuple[str, str, int, int]] = {
    "job": ("lender", "train", 8, 2),
    "jobset": ("lender", "train", 8, 2),
    "trainjob": ("lender", "train", 8, 2),
    "rayjob": ("lender", "train", 8, 2),
    "lws": ("delta", "shared", 1, 2),
}
NODEPOOLS = "/apis/karpenter.sh/v1/nodepools"


class Watch:
    """First Admitted of each Workload (by the name of the object Kueue manages) and each labelled pod's
    phase, node and owner, from two watches (client clock)."""

    def __init__(self, client: Client):
        self.client = client
        self.admitted: dict[str, float] = {}
        self.pods: dict[str, tuple[str, str, str, str]] = {}   # uid -> (job label, phase, node, owner kind)
        self.changed = threading.Condition()
        self._stop = False
        for path, handle in ((WORKLOADS, self._workload), ("/api/v1/pods", self._pod)):
            rv = client.get(path, limit="1")["metadata"]["resourceVersion"]
            threading.Thread(target=self._run, args=(path, handle, rv), daemon=True).start()

    def _workload(self, kind: str, obj: dict[str, Any]) -> None:
        if kind == "DELETED" or not any(c["type"] == "Admitted" and c["status"] == "True"
                                        for c in obj.get("status", {}).get("conditions", [])):
            return
        with self.changed:
            for o in obj["metadata"].get("ownerReferences", []):
                if o.get("kind") in sim_kinds.OWNER_KINDS:
                    self.admitted.setdefault(o["name"], time.perf_counter())
            self.changed.notify_all()

    def _pod(self, kind: str, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        label = meta.get("labels", {}).get(sim_kinds.JOB_LABEL)
        if label is None:
            return
        with self.changed:
            if kind == "DELETED":
                self.pods.pop(meta["uid"], None)
            else:
                owner = next((o.get("kind", "") for o in meta.get("ownerReferences", [])), "")
                phase = "Deleting" if meta.get("deletionTimestamp") else obj.get("status", {}).get("phase", "")
                self.pods[meta["uid"]] = (label, phase, obj["spec"].get("nodeName", ""), owner)
            self.changed.notify_all()

    def _run(self, path: str, handle, rv: str) -> None:
        while not self._stop:
            try:
                for event in self.client.watch(path, rv, timeout_seconds=300):
                    obj = event["object"]
                    rv = obj["metadata"].get("resourceVersion", rv)
                    if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                        handle(event["type"], obj)
                    if self._stop:
                        return
            except (ApiError, OSError):
                time.sleep(0.5)
                rv = self.client.get(path, limit="1")["metadata"]["resourceVersion"]

    def running(self, name: str, kind: str) -> list[str]:
        """Nodes of the job's pods Running (a RayJob's submitter, a Job's pod, left out)."""
        with self.changed:
            return [node for label, phase, node, owner in self.pods.values()
                    if label == name and phase == "Running" and not (kind == "rayjob" and owner == "Job")]

    def gone(self, name: str) -> bool:
        with self.changed:
            return not any(label == name for label, *_ in self.pods.values())

    def wait_running(self, name: str, kind: str, count: int, timeout: float) -> float:
        deadline = time.monotonic() + timeout
        with self.changed:
            while len(self.running(name, kind)) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SessionError(f"timed out waiting for {count} pods of {name} Running (seen {self.pods})")
                self.changed.wait(min(left, 0.5))
            return time.perf_counter()

    def stop(self) -> None:
        self._stop = True


def objects(plan, kind: str, name: str, shape: tuple[str, str, int, int]) -> list[dict[str, Any]]:
    """The kind's template, its pods labelled as the what-if labels them and running until deleted."""
    team, pool, units, pods = shape
    objs = template(plan, JobRequest(team=team, pool=pool, gpus=units, nodes=pods, kind=kind, name=name, duration="1h"))
    return sim_kinds.prepare(objs, kind, name, "3600s", "succeeded", 60, plan.job_ttl_seconds)


def remove(client: Client, watch: Watch, paths: list[str], name: str) -> None:
    for path in reversed(paths):
        try:
            client.delete(path, propagationPolicy="Background")
        except ApiError as err:
            if err.status != 404:
                raise
    wait(lambda: watch.gone(name) and name not in {o["name"] for w in client.get(WORKLOADS)["items"]
                                                   for o in w["metadata"].get("ownerReferences", [])}, 120,
         f"{name}'s pods and workload gone")


def added_nodes(client: Client, pool: str) -> list[str]:
    return [n["metadata"]["name"] for n in client.get("/api/v1/nodes", labelSelector=f"{cv.POOL}={pool}")["items"]
            if cv.KARPENTER_NODEPOOL_LABEL in n["metadata"].get("labels", {})]


def scale_up(client: Client, plan, watch: Watch, trials: int) -> list[float]:
    team, pool, units, pods = SCALE_UP
    client.request("PATCH", f"{NODEPOOLS}/{pool}", {"spec": {"disruption": {"consolidateAfter": BURST_SCALE_DOWN}}},
                   content_type="application/merge-patch+json")
    seconds: list[float] = []
    for n in range(trials):
        wait(lambda: not added_nodes(client, pool), 180, f"pool {pool} empty")
        name = f"scale-{n}"
        objs = objects(plan, "job", name, SCALE_UP)
        at = time.perf_counter()
        paths = create(client, objs)
        done = watch.wait_running(name, "job", pods, 180)
        nodes = set(watch.running(name, "job"))
        if not nodes <= set(added_nodes(client, pool)) or len(nodes) != pods:
            raise SessionError(f"{name} ran on {sorted(nodes)}, not on {pods} nodes Karpenter added to {pool}")
        seconds.append(done - at)
        progress(f"scale-up {n + 1}/{trials}: {pods} pods Running on {pods} new nodes after {seconds[-1]:.2f}s")
        remove(client, watch, paths, name)
    return seconds


def kind_trials(client: Client, plan, watch: Watch, kind: str, trials: int) -> list[float]:
    shape = KIND_SHAPES[kind]
    count = shape[3] + (1 if kind == "rayjob" else 0)   # the Ray head
    if kind == "lws":   # the shared pool's node, added once (a warm-up submission): the figure is the controllers'
        paths = create(client, objects(plan, kind, "lws-warmup", shape))
        watch.wait_running("lws-warmup", kind, count, 180)
        remove(client, watch, paths, "lws-warmup")
    seconds: list[float] = []
    for n in range(trials):
        name = f"{kind}-{n}"
        paths = create(client, objects(plan, kind, name, shape))
        done = watch.wait_running(name, kind, count, 180)
        wait(lambda: name in watch.admitted, 30, f"{name} admitted")
        seconds.append(done - watch.admitted[name])
        progress(f"{kind} {n + 1}/{trials}: admission -> {count} pods Running {seconds[-1]:.2f}s")
        remove(client, watch, paths, name)
    return seconds


def stats(seconds: list[float]) -> dict[str, Any]:
    return {"trials": len(seconds), "p50_s": round(percentile(seconds, 0.5), 2),
            "p95_s": round(percentile(seconds, 0.95), 2), "max_s": round(max(seconds), 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--parts", default=",".join(PARTS), help=f"comma separated, of {', '.join(PARTS)}")
    ap.add_argument("--kinds", default=",".join(KIND_SHAPES), help=f"comma separated, of {', '.join(KIND_SHAPES)}")
    ap.add_argument("--keep", action="store_true", help="leave the cluster running")
    ap.add_argument("--plot", help="write the distributions to this PNG")
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args(argv)
    parts = [p for p in args.parts.split(",") if p]
    kinds = [k for k in args.kinds.split(",") if k]
    if not parts or any(p not in PARTS for p in parts) or any(k not in KIND_SHAPES for k in kinds) or args.trials < 1:
        ap.error(f"--parts takes {', '.join(PARTS)}; --kinds {', '.join(KIND_SHAPES)}; --trials at least 1")
    interrupt_on_sigterm()  # a SIGTERM stops the benchmark's cluster, as Ctrl-C does
    if tools_missing("elastic", TOOLS, CACHE / "bin"):
        return 3
    tmp = Path(tempfile.mkdtemp(prefix="gpu-platform-bench-elastic-"))
    # workloads "": the controllers the stack installs (all four here).
    session = Session(tmp, STACK_FILE, apiserver_port=APISERVER_PORT, etcd_port=ETCD_PORT, workloads="")
    plan = load_plan(None, str(STACK_FILE))[1]
    figures: dict[str, Any] = {"trials": args.trials}
    samples: dict[str, list[float]] = {}

    def body() -> None:
        progress(f"starting the cluster on {APISERVER_PORT}/{ETCD_PORT} (four workload controllers, Karpenter) ...")
        figures["start_s"] = round(session.start(), 1)
        progress("pulumi up of the live stack ...")
        figures["deploy_s"] = round(session.deploy(), 1)
        client = session.client()
        watch = Watch(client)
        if "scale-up" in parts:
            samples["scale-up"] = scale_up(client, plan, watch, args.trials)
            delay = go_duration_s(os.environ.get(SCALE_UP_DELAY_ENV) or DEFAULT_SCALE_UP_DELAY, SCALE_UP_DELAY_ENV)
            figures["scale_up"] = {**stats(samples["scale-up"]), "registration_delay_s": delay,
                                   "beyond_delay_p50_s": round(percentile(samples["scale-up"], 0.5) - delay, 2),
                                   "beyond_delay_p95_s": round(percentile(samples["scale-up"], 0.95) - delay, 2)}
        if "kinds" in parts:
            figures["admission_to_running"] = {}
            for kind in kinds:
                samples[kind] = kind_trials(client, plan, watch, kind, args.trials)
                figures["admission_to_running"][kind] = stats(samples[kind])
        watch.stop()
        figures["ratios"] = {f"{k}_p95_over_p50": round(v["p95_s"] / v["p50_s"], 2)
                             for k, v in ([("scale_up", figures["scale_up"])] if "scale_up" in figures else [])
                             + list(figures.get("admission_to_running", {}).items()) if v["p50_s"]}
        job = figures.get("admission_to_running", {}).get("job")
        if job and job["p50_s"]:
            figures["ratios"].update({f"{k}_p50_over_job_p50": round(v["p50_s"] / job["p50_s"], 2)
                                      for k, v in figures["admission_to_running"].items() if k != "job"})
        if args.plot:
            plot(samples, Path(args.plot))

    return run_on_session("bench.elastic", session, tmp, args.keep, body, figures, args.json)


def plot(samples: dict[str, list[float]], out: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("bench.elastic: matplotlib not installed; no plot", file=sys.stderr)
        return
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, keys, xlabel, title in (
            (axes[0], ["scale-up"], "submission to all pods Running (s)", "Scale-up from an empty pool (2 nodes)"),
            (axes[1], [k for k in KIND_SHAPES if k in samples], "admission to all pods Running (s)", "Per kind")):
        for key in keys:
            if key in samples:
                s = sorted(samples[key])
                ax.step([s[0], *s], [0.0, *((i + 1) / len(s) for i in range(len(s)))], where="post", label=key)
        ax.set(xlabel=xlabel, ylabel="fraction of submissions", title=title)
        ax.grid(alpha=0.3)
        if len(keys) > 1:
            ax.legend(fontsize=8, loc="lower right")
    fig.suptitle("Live local cluster: Karpenter's KWOK provider and the four workload controllers", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
