"""MultiKueue across two live local clusters, each with its own Kueue, both deployed by the real engine
from one platform spec (tests/multikueue/stack.yaml), exactly as the README tells a user to do:

1. the worker cluster gets the spec as a stack with `gpu-platform:multiKueueRole: worker`: the same
   namespaces, LocalQueues and ClusterQueues, and a ServiceAccount a manager may act as;
2. `scripts/local-cluster multikueue-kubeconfig` writes the kubeconfig for it (server, CA, token);
3. the manager cluster gets the same spec with that kubeconfig as a Pulumi secret config value
   (`pulumi config set --secret gpu-platform:worker1Kubeconfig < file`).

The manager runs with a 20 s multiKueue.workerLostTimeout (15 minutes in the stacks) so that a lost
worker's consequence can be watched.
"""

from __future__ import annotations

import base64
import json
import statistics
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

import pytest
import yaml

from gpu_platform import conventions as cv
from gpu_platform.stack_files import load_plan
from gpu_platform.jobs import JobRequest, job
from gpu_platform.plan import Plan
from tests.live.conftest import condition, is_true, wait_for
from tests.realtools import (
    CLUSTER_TOOLS, ENGINE_TOOLS, TIMINGS, Cluster, Engine, new_engine, require, running_cluster,
)

FIXTURE = Path(__file__).with_name("stack.yaml")
MANAGER_PORTS = ("32143", "19790")
WORKER_PORTS = ("32243", "19890")
WORKER_LOST_TIMEOUT_S = 20
SECRET_KEY = "gpu-platform:worker1Kubeconfig"


def evictions(wl: dict, reason: str) -> int:
    """How often Kueue evicted the workload for `reason` (status.schedulingStats.evictions, apis/kueue/v1beta2
    workload_types.go WorkloadSchedulingStatsEviction)."""
    stats = wl.get("status", {}).get("schedulingStats", {}).get("evictions", [])
    return sum(e.get("count", 0) for e in stats if e.get("reason") == reason)


@dataclass
class MK:
    manager: Cluster
    worker: Cluster
    engine: Engine
    plan: Plan
    tenant: Path
    token: str
    up_output: str
    manager_config: Path

    def get(self, c: Cluster, *args: str) -> Any:
        return json.loads(c.kubectl("get", *args, "-o", "json").stdout)

    def workload(self, c: Cluster, name: str) -> dict | None:
        for w in self.get(c, "workloads.kueue.x-k8s.io", "-n", "ml")["items"]:
            if any(o.get("name") == name and o.get("kind") == "Job" for o in w["metadata"].get("ownerReferences", [])):
                return w
        return None

    def submit(self, name: str, duration: str = "5s") -> float:
        objs = job(self.plan, JobRequest(team="ml", pool="batch", gpus=1, name=name, duration=duration))
        at = time.perf_counter()
        self.manager.kubectl("create", "-f", "-", kubeconfig=self.tenant,
                             input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
        return at


class PodWatch:
    """The worker's pods as its API server streams them (`kubectl get pods --watch`), each job's first pod
    seen Running (or already Succeeded) with the time it was seen. Polling `kubectl get` misses pods: a
    short job's pod runs, succeeds and is deleted by MultiKueue (its remote objects go once the manager's
    job is finished) within about 12 s, while ten tenant `kubectl create`s on two loaded cores can take
    longer than that, so the first pods of a wave were gone before the first poll."""

    def __init__(self, cluster: Cluster, namespace: str) -> None:
        self.running: dict[str, float] = {}
        self.node: dict[str, str] = {}
        self._lock = threading.Lock()
        self._watching = threading.Event()
        # -v=6 logs the watch request once the list is served: from then on no pod is missed.
        self._proc = subprocess.Popen(
            ["kubectl", "--kubeconfig", str(cluster.kubeconfig), "get", "pods", "-n", namespace, "--watch",
             "--output-watch-events", "-o", "json", "-v=6"],
            env=cluster.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._read_events, daemon=True).start()
        threading.Thread(target=self._read_log, daemon=True).start()
        if not self._watching.wait(60):
            self.close()
            raise AssertionError("kubectl get pods --watch on the worker did not start within 60 s")

    def _read_log(self) -> None:
        assert self._proc.stderr is not None
        for line in self._proc.stderr:
            if "watch=true" in line:
                self._watching.set()

    def _read_events(self) -> None:
        assert self._proc.stdout is not None
        doc = ""
        for line in self._proc.stdout:   # an event a line (kubectl 1.33); whole documents either way
            doc += line
            try:
                event = json.loads(doc)
            except json.JSONDecodeError:
                continue
            doc = ""
            pod = event.get("object", {})
            job = pod.get("metadata", {}).get("labels", {}).get("batch.kubernetes.io/job-name")
            if job and pod.get("status", {}).get("phase") in ("Running", "Succeeded"):
                with self._lock:
                    self.running.setdefault(job, time.perf_counter())
                    self.node.setdefault(job, pod["spec"].get("nodeName", ""))

    def seen_running(self, jobs: Iterable[str]) -> dict[str, float] | None:
        with self._lock:
            return {j: self.running[j] for j in jobs} if all(j in self.running for j in jobs) else None

    def close(self) -> None:
        self._proc.terminate()
        try:
            self._proc.wait(10)
        except subprocess.TimeoutExpired:
            self._proc.kill()


@pytest.fixture(scope="module")
def mk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MK]:
    require(CLUSTER_TOOLS + ENGINE_TOOLS)
    tmp = tmp_path_factory.mktemp("multikueue")
    doc = yaml.safe_load(FIXTURE.read_text())
    worker_file, manager_file = tmp / "Pulumi.mk-worker.yaml", tmp / "Pulumi.mk-manager.yaml"
    worker_doc = {"config": {**doc["config"], f"gpu-platform:{cv.MULTIKUEUE_ROLE_CONFIG}": "worker"}}
    worker_file.write_text(yaml.safe_dump(worker_doc, sort_keys=False))
    manager_file.write_text(yaml.safe_dump(doc, sort_keys=False))
    engine = new_engine(tmp / "backend")
    with running_cluster(tmp / "worker", *WORKER_PORTS, "multikueue worker",
                         {"LOCAL_CLUSTER_STACK": str(worker_file)}) as worker:
        engine.ensure_stack("mk-worker", worker_file)
        engine.timed("pulumi up (MultiKueue worker)", "up", "--yes", "--stack", "mk-worker", "--config-file",
                     str(worker_file), extra_env={"KUBECONFIG": str(worker.kubeconfig)})
        out = worker.driver.script("multikueue-kubeconfig", str(tmp / "worker-1.kubeconfig"), timeout=120)
        kubeconfig = Path(out.stdout.strip().splitlines()[-1]).read_text()
        token = yaml.safe_load(kubeconfig)["users"][0]["user"]["token"]
        with running_cluster(tmp / "manager", *MANAGER_PORTS, "multikueue manager",
                             {"LOCAL_CLUSTER_STACK": str(manager_file),
                              "LOCAL_CLUSTER_WORKER_LOST_TIMEOUT": f"{WORKER_LOST_TIMEOUT_S}s"}) as manager:
            engine.ensure_stack("mk-manager", manager_file)
            # The value from stdin: never on a command line, never in a file of the checkout.
            engine.pulumi("config", "set", "--secret", SECRET_KEY, "--stack", "mk-manager",
                          "--config-file", str(manager_file), input=kubeconfig)
            up = engine.timed("pulumi up (MultiKueue manager)", "up", "--yes", "--stack", "mk-manager",
                              "--config-file", str(manager_file), extra_env={"KUBECONFIG": str(manager.kubeconfig)})
            plan = load_plan(None, str(manager_file))[1]
            tenant = manager.user("ml-alice", "ml-engineers")
            m = MK(manager, worker, engine, plan, tenant, token, up.stdout + up.stderr, manager_file)
            wait_for(lambda: is_true(m.get(manager, "multikueuecluster.kueue.x-k8s.io", "worker-1"), "Active"), 90,
                     "the manager's MultiKueueCluster Active (connected to the worker)")
            wait_for(lambda: is_true(m.get(manager, "admissioncheck.kueue.x-k8s.io", cv.MULTIKUEUE_NAME), "Active"), 60,
                     "the MultiKueue admission check Active")
            yield m


@pytest.fixture(scope="module")
def worker_pods(mk: MK) -> Iterator[PodWatch]:
    watch = PodWatch(mk.worker, "ml")
    try:
        yield watch
    finally:
        watch.close()


def test_the_worker_mirrors_the_teams_queues_from_the_same_spec(mk: MK) -> None:
    for c in (mk.manager, mk.worker):
        lq = mk.get(c, "localqueue.kueue.x-k8s.io", cv.LOCAL_QUEUE_NAME, "-n", "ml")
        assert lq["spec"]["clusterQueue"] == "ml"
    mgr_cq = mk.get(mk.manager, "clusterqueue.kueue.x-k8s.io", "ml")["spec"]
    wrk_cq = mk.get(mk.worker, "clusterqueue.kueue.x-k8s.io", "ml")["spec"]
    assert mgr_cq["resourceGroups"] == wrk_cq["resourceGroups"]
    assert [c["name"] for c in mgr_cq["admissionChecksStrategy"]["admissionChecks"]] == [cv.MULTIKUEUE_NAME]
    assert "admissionChecksStrategy" not in wrk_cq, "a worker runs what it is given; it dispatches nothing"


def test_a_job_admitted_on_the_manager_runs_on_the_worker_and_reports_back(mk: MK, worker_pods: PodWatch) -> None:
    mk.submit("dispatched", duration="5s")
    wl = wait_for(lambda: (w := mk.workload(mk.manager, "dispatched")) and is_true(w, "Admitted") and w, 60,
                  "admitted on the manager")
    assert wl["status"]["admissionChecks"][0]["state"] == "Ready"
    assert wl["status"].get("clusterName") == "worker-1"
    manager_job = mk.get(mk.manager, "job", "dispatched", "-n", "ml")
    assert manager_job["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"   # Kueue's job webhook set it
    wait_for(lambda: worker_pods.seen_running(["dispatched"]), 60, "the job's pod running on the worker")
    node = mk.get(mk.worker, "node", worker_pods.node["dispatched"])
    assert node["metadata"]["labels"][cv.POOL] == "batch"
    assert not mk.get(mk.manager, "pods", "-n", "ml")["items"], "nothing runs on the manager"
    # The worker's status comes back: the manager's Job completes.
    wait_for(lambda: is_true(mk.get(mk.manager, "job", "dispatched", "-n", "ml"), "Complete"), 90,
             "the manager's Job Complete")
    wait_for(lambda: is_true(mk.workload(mk.manager, "dispatched"), "Finished"), 60, "the manager's Workload Finished")


def test_dispatch_latency_over_fifty_jobs(mk: MK, worker_pods: PodWatch) -> None:
    """Submit on the manager to Running on the worker, in waves of 10 that fit the pool (16 GPUs, 1 each: no
    queueing, so the figure is MultiKueue's dispatch and the worker's admission)."""
    latencies: list[float] = []
    for wave in range(5):
        started = {f"lat-{wave}-{i}": mk.submit(f"lat-{wave}-{i}", duration="8s") for i in range(10)}
        running = wait_for(lambda: worker_pods.seen_running(started), 120, f"wave {wave} running on the worker",
                           interval=0.1)
        latencies += [running[n] - t for n, t in started.items()]
        wait_for(lambda: all(is_true(mk.get(mk.manager, "job", n, "-n", "ml"), "Complete") for n in started), 120,
                 f"wave {wave} complete on the manager")
    assert len(latencies) == 50
    q = statistics.quantiles(latencies, n=20)
    TIMINGS["multikueue: dispatch p50 (submit -> running on worker)"] = round(statistics.median(latencies), 2)
    TIMINGS["multikueue: dispatch p95"] = round(q[18], 2)


def test_the_worker_kubeconfig_never_appears_in_plaintext(mk: MK) -> None:
    secrets = [mk.token, base64.b64encode(mk.token.encode()).decode()]
    state = mk.engine.pulumi("stack", "export", "--stack", "mk-manager").stdout
    config = mk.manager_config.read_text()
    for where, text in (("the state", state), ("the stack config", config), ("the output of up", mk.up_output)):
        for s in secrets:
            assert s not in text, f"the worker's token appears in {where}"
    assert "secure:" in config   # the config holds it encrypted
    # The cluster has it where Kueue reads it, in Kueue's namespace (platform admins only).
    secret = mk.get(mk.manager, "secret", cv.multikueue_secret_name("worker-1"), "-n", cv.KUEUE_NAMESPACE)
    assert mk.token in base64.b64decode(secret["data"][cv.MULTIKUEUE_KUBECONFIG_KEY]).decode()


def test_zz_a_lost_worker_keeps_its_job_until_the_timeout_then_it_is_evicted_and_dispatched_again(mk: MK) -> None:
    """Kueue v0.19.2 (apis/config/v1beta2 MultiKueue.workerLostTimeout; pkg/controller/admissionchecks/
    multikueue): a workload's MultiKueue admission check stays Ready while its worker is unreachable, for
    workerLostTimeout. Then the check goes to Retry and the workload is evicted on the manager (the check
    back to Pending); the eviction completes, and the manager's quota is released, only once the worker's
    copy can be removed. When the worker is back, the old run is deleted there and the job is requeued and
    dispatched again: it restarts from the beginning (what checkpoints are for)."""
    mk.submit("long-running", duration="1h")

    def worker_pods() -> dict[str, dict]:
        """The job's pods on the worker by name: phase, and whether they are being deleted."""
        return {p["metadata"]["name"]: {"phase": p["status"].get("phase"),
                                        "deleting": "deletionTimestamp" in p["metadata"],
                                        "node": p["spec"].get("nodeName"),
                                        "unscheduled": [c.get("message") for c in p["status"].get("conditions", [])
                                                        if c["type"] == "PodScheduled" and c["status"] != "True"]}
                for p in mk.get(mk.worker, "pods", "-n", "ml")["items"]
                if p["metadata"]["name"].startswith("long-running-")}

    def running(pods: dict[str, dict], but: str | None = None) -> str | None:
        return next((n for n, p in sorted(pods.items())
                     if n != but and p["phase"] == "Running" and not p["deleting"]), None)

    first_run = wait_for(lambda: running(worker_pods()), 90, "running on the worker")
    mk.worker.driver.script("stop", timeout=120)
    lost = time.perf_counter()
    time.sleep(WORKER_LOST_TIMEOUT_S / 2)
    wl = mk.workload(mk.manager, "long-running")
    assert is_true(wl, "Admitted") and wl["status"]["admissionChecks"][0]["state"] == "Ready", \
        "within workerLostTimeout the manager keeps the job as dispatched"
    # The eviction is read from the workload's eviction record, which stays: the Evicted condition and the
    # check's "Reset to Pending after eviction" message are written in one patch (pkg/workload/evict/evict.go
    # prepareForEviction) but last only until the manager re-reserves quota and MultiKueue nominates a
    # worker again, a second or so later on a loaded machine, so a poll may land after them.
    wl = wait_for(lambda: (w := mk.workload(mk.manager, "long-running")) and evictions(w, "AdmissionCheck") and w,
                  WORKER_LOST_TIMEOUT_S + 90, "evicted on the manager after workerLostTimeout")
    TIMINGS["multikueue: worker lost -> evicted on the manager"] = round(time.perf_counter() - lost, 1)
    assert evictions(wl, "AdmissionCheck") == 1, wl["status"].get("schedulingStats")
    if (evicted := condition(wl, "Evicted")) and evicted["status"] == "True":
        assert evicted["reason"] == "AdmissionCheck", evicted
    # The manager no longer counts the job as dispatched: the check is back to Pending (or Retry on the way)
    # and no worker holds it while the only one is down.
    check = wl["status"]["admissionChecks"][0]
    assert check["state"] in ("Pending", "Retry"), check
    assert not wl["status"].get("clusterName"), wl["status"]
    mk.worker.driver.start(timeout=600)
    back = wait_for(lambda: (w := mk.workload(mk.manager, "long-running")) and is_true(w, "Requeued")
                    and w["status"]["admissionChecks"][0]["state"] == "Ready" and w, 180,
                    "requeued and dispatched again once the worker is back")
    assert back["status"].get("clusterName") == "worker-1"
    # The old Job is deleted on the worker before the new one (same name) is created; its pod goes with it by
    # the worker's garbage collector, which after a restart first resyncs every resource it watches, so the
    # old pod may still read Running (being deleted or not yet) beside the new one: look past it.
    seen: list[dict[str, dict]] = [{}]

    def new_run() -> str | None:
        seen[0] = worker_pods()
        return running(seen[0], but=first_run)

    try:
        second_run = wait_for(new_run, 180, "a new run on the worker")
    except AssertionError as e:
        raise AssertionError(f"{e}; the first run was {first_run}; the job's pods on the worker: {seen[0]}") from None
    # The first run does not go on holding its GPUs beside the second.
    gone = wait_for(lambda: (now := worker_pods()).get(first_run, {}).get("deleting", True) and now, 180,
                    f"the first run {first_run} deleted on the worker")
    assert second_run in gone, gone
