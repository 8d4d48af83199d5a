"""Seed scale, live: the local cluster at 1,000 GPU nodes and 100 teams, and Kueue's own scheduler performance
baseline replayed through it as real Jobs and pods.

One cluster (scripts/local-cluster through localcluster/session.Session, as bench/live.py), stack: the
seed-scale fleet (bench/seed_stack.py: 1,000 nodes, 8,000 GPUs, 100 teams in a cohort tree) plus the
baseline's queues as platform teams: 5 cohorts x 6 teams, each team's ClusterQueue 20 units nominal with a
borrowing limit of 100 on a MIG pool of its own, exactly the queue shape of Kueue's baseline
(kubernetes-sigs/kueue v0.19.2 test/performance/scheduler/configs/baseline/generator.yaml). Then:

  start     `local-cluster start` cold, and the node registration step's share of it (its step log)
  idle      what 1,000 simulated nodes cost when nothing runs: API requests per second by resource and
            the CPU each component burns over a window (KWOK heartbeats every node, localcluster/kwok.py)
  replay    the baseline's workloads, per ClusterQueue three generators as Kueue's runner has them
            (runner/generator/generator.go generateWlSet: sleep creationIntervalMs, create, `count` times):
            small (1 unit, 200 ms, every 100 ms), medium (5, 500 ms, every 500 ms), large (20, 1 s, every
            1.2 s), as Jobs of the platform (gpu_platform/jobs.py: queue label, priority, tolerations) whose
            pods the job controller creates, the platform's ValidatingAdmissionPolicies and Kueue's webhooks
            check, kube-scheduler binds and KWOK runs and completes
  policies  (--policies-off) the same replay again with the platform's ValidatingAdmissionPolicyBindings
            removed: the policies' share of the latency, beside the API server's own admission metrics
            (apiserver_admission_step_admission_duration_seconds and the per-webhook and per-policy series)

Figures as Kueue's checker reads them (test/performance/scheduler/checker/checker_test.go, rangespec.yaml):
wall time from the first creation to the last workload finished (budget 425 s) and the average time to
admission per class (budgets large 23 s, medium 90 s, small 260 s; a re-admitted workload counts from its
creation to its last admission, runner/recorder/recorder.go), each as a ratio to its budget.

--fraction F runs F of every generator's count (class mix and creation intervals kept, so the arrival rate
is Kueue's); the budgets are scaled by F too. That scaling is an approximation, said with every figure:
Kueue's times are those of a backlog that grows with the count, while a Job's fixed path (Job -> Workload
-> admission -> pod -> scheduler -> KWOK) does not shrink with F, so small fractions are harsh on us.

    python -m bench.scale [--fraction 0.02] [--node-scale 1] [--policies-off] [--keep] [--json out.json]

Ports: LOCAL_CLUSTER_APISERVER_PORT / LOCAL_CLUSTER_ETCD_PORT (default 17443 / 24790); state in a
temporary directory (--state to choose). Exit status: 0 done, 2 a step failed, 3 tools missing.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bench.common import report_figures, tools_missing
from bench.engine import NO_ADDONS
from bench.kueue_baseline import (BORROWING_LIMIT, CLASSES, COHORTS, NOMINAL, QUEUES_PER_COHORT, Record,
                                   WorkloadClass, counts_at, expected_at, figures)
from bench.seed_stack import seed_config
from gpu_platform.jobs import JobRequest, job
from gpu_platform import conventions as cv
from gpu_platform.stack_files import load_plan
from localcluster.api import ApiError, Client, path_of
from localcluster.driver import pulumi_bin, run
from localcluster.session import Session, SessionError
from localcluster.toolcache import CACHE
from localcluster.signals import interrupt_on_sigterm

TOOLS = ("pulumi", "kube-apiserver", "kube-scheduler", "kueue", "kwok", "etcd")

# The client limits and server limits checked at seed scale (figures in docs/performance.md, Seed scale: live):
# - kube-controller-manager: --kube-api-qps / --kube-api-burst (k8s.io/controller-manager v0.33.13
#   options/generic.go), default 20 / 30 (kubernetes v1.33.13 pkg/controller/apis/config/v1alpha1/defaults.go),
#   one limiter per controller with --use-service-account-credentials. The ttl controller annotates every new
#   node at ~20 patches/s over 1,000 registering nodes; 300 / 500 was tried and did not help (the API server,
#   not the limiter, paces it, and a faster node controller competes with the registration), so it stays.
# - kube-scheduler: clientConnection.qps / burst, default 50 / 100 (k8s.io/component-base v0.33.13
#   config/v1alpha1/defaults.go); the local cluster already writes 300 / 500 (localcluster/__main__.py).
# - Kueue: Configuration clientConnection.qps / burst, default 300 / 500 (kubernetes-sigs/kueue v0.19.2
#   apis/config/v1beta2/defaults.go); the platform writes the same (gpu_platform/kueue_config.py).
# - kube-apiserver: --max-requests-inflight 400 / --max-mutating-requests-inflight 200 (k8s.io/apiserver
#   v0.33.13 pkg/server/config.go, options/server_run_options.go), the total concurrency API Priority and
#   Fairness shares out: the replay reports its queue wait and rejections (apf_queue_wait_s, apf_rejected).
# - KWOK: its client has no rate limiter (kubernetes-sigs/kwok v0.8.0 pkg/utils/client/clientset.go sets
#   flowcontrol.NewFakeAlwaysRateLimiter), so it has no QPS to raise.
WORKLOADS = "/apis/kueue.x-k8s.io/v1beta2/workloads"
VAP_BINDINGS = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"

# Kueue's baseline (its 5 cohorts x 6 ClusterQueues, the three workload classes and their budgets) and the
# figures its checker reads: bench/kueue_baseline.py, shared with the bare-Kueue replay.
BASELINE_POOL = "kueue-baseline"
# MIG 1g.10gb on p4de.24xlarge: 56 units a node, so the large class's 20-unit pod fits on one node (a
# time-sliced pool refuses more than one replica per container, components/admission.py). 12 nodes = 672
# units >= the 600 the 30 queues' nominal quotas hold.
BASELINE_NODES = 12


def baseline_team(cohort: int, queue: int) -> str:
    return f"kb-c{cohort}-q{queue}"


def stack_config(node_scale: float = 1.0) -> dict[str, Any]:
    """The seed-scale stack with the baseline's 30 queues beside its 100 teams; add-ons off (the local
    cluster runs Kueue itself; the charts need downloads), as the live tests' stack has them."""
    config = seed_config(scale=node_scale)
    p = config["gpu-platform:platform"]
    p["environment"] = "local"
    p["addons"] = dict(NO_ADDONS)
    p["pools"].append({
        "name": BASELINE_POOL, "accelerator": "a100-80gb", "instanceType": "p4de.24xlarge", "fabric": "ethernet",
        "workload": "batch", "sharing": {"mode": "mig", "profile": "1g.10gb"},
        "capacity": {"type": "on-demand", "min": BASELINE_NODES, "max": BASELINE_NODES},
    })
    p["cohorts"] += [{"name": f"kb-cohort-{c}"} for c in range(COHORTS)]
    for c in range(COHORTS):
        for q in range(QUEUES_PER_COHORT):
            name = baseline_team(c, q)
            p["teams"].append({
                "name": name, "costCenter": f"cc-kb{c}{q}", "cohort": f"kb-cohort-{c}",
                "groups": {"member": [f"{name}-engineers"]},
                "quotas": {BASELINE_POOL: {"units": NOMINAL, "borrowingLimit": BORROWING_LIMIT}},
            })
    return config


def progress(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


# ---------------------------------------------------------------------------------------------------------
# the API server's own figures

def metrics_text(client: Client) -> str:
    conn = http.client.HTTPSConnection(client.host, client.port, context=client.context, timeout=60)
    try:
        conn.request("GET", "/metrics")
        resp = conn.getresponse()
        body = resp.read().decode()
        if resp.status >= 400:
            raise ApiError(resp.status, body, "GET /metrics")
        return body
    finally:
        conn.close()


_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$')
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text: str, names: tuple[str, ...]) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """{(name, sorted labels): value} for the series whose name starts with one of `names` (histograms:
    their _sum and _count only)."""
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for line in text.splitlines():
        if not line or line[0] == "#" or not line.startswith(names):
            continue
        m = _SAMPLE.match(line)
        if not m or m.group(1).endswith("_bucket"):
            continue
        labels = tuple(sorted(_LABEL.findall(m.group(2) or "")))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def delta(after: dict, before: dict) -> dict:
    return {k: v - before.get(k, 0.0) for k, v in after.items() if v - before.get(k, 0.0) > 0}


def total(series: dict, name: str, **match: str) -> float:
    return sum(v for (n, labels), v in series.items()
               if n == name and all(dict(labels).get(k) == want for k, want in match.items()))


METRIC_NAMES = ("apiserver_request_total", "apiserver_request_duration_seconds",
                "apiserver_admission_step_admission_duration_seconds",
                "apiserver_admission_controller_admission_duration_seconds",
                "apiserver_admission_webhook_admission_duration_seconds",
                "apiserver_flowcontrol_request_wait_duration_seconds", "apiserver_flowcontrol_rejected_requests_total")


def request_rates(d: dict, seconds: float, top: int = 8) -> dict[str, float]:
    """Requests per second by verb and resource[/subresource] over a window, busiest first."""
    by: Counter[str] = Counter()
    for (n, labels), v in d.items():
        if n == "apiserver_request_total":
            lab = dict(labels)
            res = lab.get("resource", "") + (f"/{lab['subresource']}" if lab.get("subresource") else "")
            by[f"{lab.get('verb')} {res}"] += v
    return {k: round(v / seconds, 1) for k, v in by.most_common(top)}


def admission_figures(d: dict) -> dict[str, Any]:
    """Where the API server's admission time went over a window: per step (mutating admit / validate), per
    admission plugin (ValidatingAdmissionPolicy: the platform's CEL policies, all of them; the webhook
    plugins: Kueue's webhooks) and per webhook, against the time it spent serving the mutating requests;
    and the time requests queued in API Priority and Fairness (the in-flight limits, --max-requests-inflight
    and --max-mutating-requests-inflight, are its total concurrency) and how many it rejected.
    apiserver_validating_admission_policy_check_duration_seconds is not served by this API server, so the
    policies are read through the plugin's series (apiserver_admission_controller_admission_duration_seconds,
    label name="ValidatingAdmissionPolicy")."""
    def mean_ms(name: str, **match: str) -> float | None:
        n = total(d, f"{name}_count", **match)
        return round(1000 * total(d, f"{name}_sum", **match) / n, 2) if n else None

    step = "apiserver_admission_step_admission_duration_seconds"
    served = sum(total(d, "apiserver_request_duration_seconds_sum", verb=v)
                 for v in ("POST", "PUT", "PATCH", "DELETE", "APPLY"))
    admission = total(d, f"{step}_sum")
    webhooks: dict[str, float] = defaultdict(float)
    plugins: dict[str, float] = defaultdict(float)
    apf_wait: dict[str, float] = defaultdict(float)
    for (n, labels), v in d.items():
        lab = dict(labels)
        if n == "apiserver_admission_webhook_admission_duration_seconds_sum":
            webhooks[lab.get("name", "?")] += v
        elif n == "apiserver_admission_controller_admission_duration_seconds_sum":
            plugins[lab.get("name", "?")] += v
        elif n == "apiserver_flowcontrol_request_wait_duration_seconds_sum":
            apf_wait[lab.get("priority_level", "?")] += v
    return {
        "admission_s": round(admission, 2),
        "mutating_requests_served_s": round(served, 2),
        "admission_share_of_mutating_request_time": round(admission / served, 3) if served else None,
        "mean_ms": {"validate": mean_ms(step, type="validate"), "admit": mean_ms(step, type="admit"),
                    "POST jobs": mean_ms("apiserver_request_duration_seconds", verb="POST", resource="jobs"),
                    "POST pods": mean_ms("apiserver_request_duration_seconds", verb="POST", resource="pods"),
                    "POST workloads": mean_ms("apiserver_request_duration_seconds", verb="POST",
                                              resource="workloads")},
        "webhooks_s": {k: round(v, 2) for k, v in sorted(webhooks.items(), key=lambda kv: -kv[1])[:6]},
        "plugins_s": {k: round(v, 2) for k, v in sorted(plugins.items(), key=lambda kv: -kv[1])[:6]},
        "apf_queue_wait_s": {k: round(v, 2) for k, v in sorted(apf_wait.items(), key=lambda kv: -kv[1])[:4]},
        "apf_rejected": int(total(d, "apiserver_flowcontrol_rejected_requests_total")),
    }


def cpu_seconds(state: Path) -> dict[str, float]:
    """CPU seconds (user + system) each running component of the cluster has used so far."""
    out = {}
    tick = os.sysconf("SC_CLK_TCK")
    for pidfile in sorted((state / "cluster" / "run").glob("*.pid")):
        try:
            stat = Path(f"/proc/{int(pidfile.read_text().split()[0])}/stat").read_text()
        except (OSError, ValueError):
            continue
        fields = stat.rsplit(")", 1)[1].split()
        out[pidfile.stem] = (int(fields[11]) + int(fields[12])) / tick
    return out


# ---------------------------------------------------------------------------------------------------------
# the replay

@dataclass
class Replay:
    client: Client
    plan: Any
    fraction: float
    tag: str
    records: dict[tuple[str, str], Record] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def counts(self) -> dict[str, int]:
        return counts_at(self.fraction)

    def expected(self) -> int:
        return expected_at(self.fraction)

    def _job(self, team: str, c: WorkloadClass, index: int) -> dict[str, Any]:
        (obj,) = job(self.plan, JobRequest(team=team, pool=BASELINE_POOL, gpus=c.units, priority=c.priority,
                                           name=f"{self.tag}-{c.name}-{index}", duration="1s"))
        # Kueue's runtimes are under a second; KWOK reads the annotation as a Go duration (localcluster/kwok.py).
        obj["spec"]["template"]["metadata"]["annotations"][cv.SIM_DURATION_ANNOTATION] = f"{c.runtime_ms}ms"
        return obj

    def _generate(self, team: str, c: WorkloadClass, count: int) -> None:
        for i in range(count):
            time.sleep(c.interval_ms / 1000)
            obj = self._job(team, c, i)
            key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
            with self.lock:
                self.records[key] = Record(c.name)
            try:
                self.client.create(path_of(obj, "jobs"), obj)
            except (ApiError, OSError) as err:
                with self.lock:
                    self.errors.append(str(err)[:300])
                    del self.records[key]
                continue
            with self.lock:
                self.records[key].created = time.perf_counter()

    def _watch(self, rv: str, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                for event in self.client.watch(WORKLOADS, rv, timeout_seconds=60):
                    obj = event["object"]
                    rv = obj["metadata"].get("resourceVersion", rv)
                    if event["type"] not in ("ADDED", "MODIFIED"):
                        continue
                    owner = next((o["name"] for o in obj["metadata"].get("ownerReferences", [])
                                  if o.get("kind") == "Job"), None)
                    now = time.perf_counter()
                    conds = {c["type"]: c["status"] == "True" for c in obj.get("status", {}).get("conditions", [])}
                    with self.lock:
                        rec = self.records.get((obj["metadata"]["namespace"], owner or ""))
                        if rec is None:
                            continue
                        if rec.first_seen is None:
                            rec.first_seen = now
                        if conds.get("Admitted") and rec.admitted is None:
                            rec.admitted = now
                        elif not conds.get("Admitted") and rec.admitted is not None and rec.finished is None:
                            rec.evictions += 1   # evicted: counts again from its next admission
                            rec.admitted = None
                        if conds.get("Finished") and rec.finished is None:
                            rec.finished = now
                    if stop.is_set():
                        return
            except (ApiError, OSError, http.client.HTTPException) as err:
                if "410" in str(err) or "too old" in str(err):
                    rv = self.client.get(WORKLOADS, limit="1")["metadata"]["resourceVersion"]
                time.sleep(0.5)

    def run(self, timeout: float) -> dict[str, Any]:
        counts = self.counts()
        stop = threading.Event()
        rv = self.client.get(WORKLOADS, limit="1")["metadata"]["resourceVersion"]
        watcher = threading.Thread(target=self._watch, args=(rv, stop), daemon=True)
        watcher.start()
        start = time.perf_counter()
        gens = [threading.Thread(target=self._generate, args=(baseline_team(co, q), c, counts[c.name]), daemon=True)
                for co in range(COHORTS) for q in range(QUEUES_PER_COHORT) for c in CLASSES]
        for g in gens:
            g.start()
        expected = self.expected()
        last = 0.0
        while True:
            time.sleep(1)
            now = time.perf_counter()
            with self.lock:
                recs = list(self.records.values())
            done = sum(r.finished is not None for r in recs)
            generating = any(g.is_alive() for g in gens)
            if not generating and done >= len(recs):
                break
            if now - start > timeout:
                self.errors.append(f"timed out after {timeout:.0f}s with {len(recs) - done} workloads unfinished")
                break
            if now - last >= 10:
                last = now
                rate = done / (now - start)
                eta = (expected - done) / rate if rate > 0 else float("inf")
                progress(f"replay {self.tag}: created {sum(r.created is not None for r in recs)}/{expected}, "
                         f"admitted {sum(r.admitted is not None for r in recs)}, finished {done}, "
                         f"{now - start:.0f}s, ETA {eta:.0f}s (load {load()})")
        stop.set()
        return {**figures(recs, start, now, self.fraction, expected), "create_errors": len(self.errors),
                "first_errors": self.errors[:3]}


def clean(client: Client, plan: Any, timeout: float = 300) -> None:
    """Delete the baseline teams' Jobs and wait until their Workloads and pods are gone."""
    namespaces = [ns for t in plan.teams if t.name.startswith("kb-") for ns in t.namespaces]
    for ns in namespaces:
        client.delete(f"/apis/batch/v1/namespaces/{ns}/jobs", propagationPolicy="Background")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = sum(len(client.get(f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{ns}/workloads")["items"]) +
                   len(client.get(f"/api/v1/namespaces/{ns}/pods")["items"]) for ns in namespaces)
        if not left:
            return
        time.sleep(2)
    raise SessionError("the baseline's Jobs, Workloads and pods were not gone in time")


# ---------------------------------------------------------------------------------------------------------
# the cluster

def step_seconds(log: str) -> dict[str, int]:
    """`local-cluster start`'s step lines ("[12s] registered 1014 simulated nodes ...") as {step: second}."""
    out = {}
    for m in re.finditer(r"\[(\d+)s\] (.+)", log):
        out[m.group(2).strip()] = int(m.group(1))
    return out


def registration(log: str) -> dict[str, Any]:
    steps = list(step_seconds(log).items())
    for i, (text, at) in enumerate(steps):
        if text.startswith("registered "):
            before = steps[i - 1][1] if i else 0
            return {"nodes": int(text.split()[1]), "register_step_s": at - before, "at_s": at}
    return {}


def wait_ready(client: Client, nodes: int, timeout: float = 600) -> float:
    """Seconds until every node is Ready and untainted of not-ready, and every ClusterQueue active."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        items = client.get("/api/v1/nodes")["items"]
        ready = sum(1 for n in items
                    if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions", []))
                    and not any(t["key"] == "node.kubernetes.io/not-ready" for t in n["spec"].get("taints") or []))
        cqs = client.get("/apis/kueue.x-k8s.io/v1beta2/clusterqueues")["items"]
        active = sum(1 for q in cqs if any(c["type"] == "Active" and c["status"] == "True"
                                           for c in q.get("status", {}).get("conditions", [])))
        if ready >= nodes and cqs and active == len(cqs):
            return time.perf_counter() - start
        time.sleep(2)
    raise SessionError(f"nodes Ready {ready}/{nodes}, ClusterQueues active {active}/{len(cqs)} after {timeout:.0f}s")


def idle_costs(client: Client, state: Path, seconds: float) -> dict[str, Any]:
    before, cpu0, t0 = parse_metrics(metrics_text(client), ("apiserver_request_total",)), cpu_seconds(state), time.perf_counter()
    time.sleep(seconds)
    after, cpu1, t1 = parse_metrics(metrics_text(client), ("apiserver_request_total",)), cpu_seconds(state), time.perf_counter()
    span = t1 - t0
    return {"window_s": round(span, 1), "load": load(),
            "requests_per_s": request_rates(delta(after, before), span),
            "cpu_cores": {k: round((cpu1[k] - cpu0.get(k, 0)) / span, 3) for k in sorted(cpu1, key=lambda k: -(cpu1[k] - cpu0.get(k, 0)))}}


def replay_once(client: Client, plan: Any, state: Path, fraction: float, tag: str, timeout: float) -> dict[str, Any]:
    before, cpu0 = parse_metrics(metrics_text(client), METRIC_NAMES), cpu_seconds(state)
    result = Replay(client, plan, fraction, tag).run(timeout)
    after, cpu1 = parse_metrics(metrics_text(client), METRIC_NAMES), cpu_seconds(state)
    d = delta(after, before)
    result["load_after"] = load()
    result["admission"] = admission_figures(d)
    result["requests_per_s"] = request_rates(d, max(result["wall_s"], 1.0))
    result["cpu_s"] = {k: round(cpu1[k] - cpu0.get(k, 0), 1) for k in sorted(cpu1, key=lambda k: -(cpu1[k] - cpu0.get(k, 0)))}
    return result


def deploy(session: Session, attempts: int = 3) -> dict[str, Any]:
    """`pulumi up` (Session.deploy), again when it fails: on a loaded machine Kueue's webhooks can time out
    under the first `up`'s burst of ClusterQueues and LocalQueues; the next `up` creates what is left. The
    failed attempts' error lines are kept (the whole output in <state>/pulumi-up-<n>.log)."""
    failures: list[str] = []
    started = time.perf_counter()
    for attempt in range(1, attempts + 1):
        if attempt == 1:
            try:
                session.deploy()
                break
            except SessionError:
                pass
        out = run([pulumi_bin(), "up", "--yes", "--skip-preview", "--stack", session.stack, "--config-file",
                   str(session.config_file), "--non-interactive"], session.env(), timeout=1800, check=False)
        (session.state / f"pulumi-up-{attempt}.log").write_text(out.stdout + out.stderr)
        errors = [line.strip()[:300] for line in (out.stdout + out.stderr).splitlines() if "error:" in line]
        if out.returncode == 0:
            break
        failures += errors[:3]
        progress(f"pulumi up attempt {attempt} failed: {errors[:2]}")
    else:
        raise SessionError(f"pulumi up failed {attempts} times: {failures}")
    return {"up_s": round(time.perf_counter() - started, 1), "attempts": attempt, "errors": failures,
            "load": load()}


def parse_seed_arguments(ap: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """The options every seed-scale replay shares (this one's and bench.kueue_compare's) added and all parsed; a
    fraction outside (0, 1] refused; from here SIGTERM interrupts, so the session's teardown runs."""
    ap.add_argument("--timeout", type=float, default=3600.0, help="most seconds one replay may take")
    ap.add_argument("--state", help="state directory (default: a temporary one, removed at the end)")
    ap.add_argument("--keep", action="store_true", help="leave the cluster running")
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args(argv)
    if not 0 < args.fraction <= 1:
        ap.error("--fraction must be in (0, 1]")
    interrupt_on_sigterm()
    return args


def seed_stack(state_dir: str | None, node_scale: float, prefix: str) -> tuple[Path, Path, Any]:
    """The run's state directory (STATE_DIR, or a new temporary one named PREFIX...), the seed-scale stack file
    written into it, and that stack's plan."""
    state = Path(state_dir) if state_dir else Path(tempfile.mkdtemp(prefix=prefix))
    state.mkdir(parents=True, exist_ok=True)
    stack_file = state / "seed-scale.yaml"
    stack_file.write_text(yaml.safe_dump({"config": stack_config(node_scale)}, sort_keys=False))
    return state, stack_file, load_plan(None, str(stack_file))[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fraction", type=float, default=0.02, help="of Kueue's 15,000 workloads (default 0.02)")
    ap.add_argument("--node-scale", type=float, default=1.0, help="multiply the seed pools' nodes (default 1)")
    ap.add_argument("--policies-off", action="store_true", help="replay again without the platform's policies")
    ap.add_argument("--idle", type=float, default=30.0, help="seconds to measure the idle cluster (default 30)")
    args = parse_seed_arguments(ap, argv)
    if tools_missing("scale", TOOLS, CACHE / "bin"):
        return 3
    state, stack_file, plan = seed_stack(args.state, args.node_scale, "gpu-platform-bench-scale-")
    session = Session(state, stack_file,
                      apiserver_port=int(os.environ.get("LOCAL_CLUSTER_APISERVER_PORT", "17443")),
                      etcd_port=int(os.environ.get("LOCAL_CLUSTER_ETCD_PORT", "24790")))
    gpu_nodes = sum(p.max_nodes for p in plan.pools)
    figures: dict[str, Any] = {"stack": {"gpu_nodes": gpu_nodes, "teams": len(plan.teams),
                                         "cluster_queues_of_the_baseline": COHORTS * QUEUES_PER_COHORT},
                               "fraction": args.fraction}
    try:
        progress(f"starting the cluster: {gpu_nodes} GPU nodes, {len(plan.teams)} teams (load {load()}) ...")
        session.state.mkdir(parents=True, exist_ok=True)
        (session.state / "backend").mkdir(exist_ok=True)
        shutil.copy(stack_file, session.config_file)
        t = time.perf_counter()
        out = session.cluster().script("start", timeout=1800)
        figures["start"] = {"cold_s": round(time.perf_counter() - t, 1), "load": load(),
                            "registration": registration(out.stderr), "steps": step_seconds(out.stderr)}
        progress(f"started in {figures['start']['cold_s']}s; pulumi up ...")
        figures["deploy"] = deploy(session)
        client = session.client()
        progress(f"deployed in {figures['deploy']['up_s']}s; waiting for nodes Ready and queues active ...")
        figures["ready_after_deploy_s"] = round(wait_ready(client, gpu_nodes), 1)
        if args.idle > 0:
            progress(f"idle cluster for {args.idle:.0f}s ...")
            figures["idle"] = idle_costs(client, state, args.idle)
        progress(f"replay of Kueue's baseline at fraction {args.fraction} (load {load()}) ...")
        figures["replay"] = replay_once(client, plan, state, args.fraction, "on", args.timeout)
        if args.policies_off:
            clean(client, plan)
            platform_bindings = [b["metadata"]["name"] for b in client.get(VAP_BINDINGS)["items"]]
            for name in platform_bindings:
                client.delete(f"{VAP_BINDINGS}/{name}")
            progress(f"removed {len(platform_bindings)} policy bindings; replay again (load {load()}) ...")
            time.sleep(2)
            figures["replay_policies_off"] = replay_once(client, plan, state, args.fraction, "off", args.timeout)
            figures["replay_policies_off"]["bindings_removed"] = platform_bindings
    except (SessionError, ApiError) as err:
        print(f"bench.scale: {err}", file=sys.stderr)
        report_figures(figures, args.json)
        return 2
    finally:
        if not args.keep:
            session.stop()
            if not args.state:
                shutil.rmtree(state, ignore_errors=True)
    report_figures(figures, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
