"""The what-if at seed scale: wall time per trace hour of `simulate` on the seed-scale stack (bench/seed_stack.py,
1,000 GPU nodes, 100 teams) in both modes, where that time goes, and the fast mode's fidelity to the full one.

One live cluster (ports 28643/26990 unless GPU_PLATFORM_SIM_APISERVER_PORT / _ETCD_PORT say), deployed once by
the real engine; on it the same trace is replayed twice, drained in between:

  pods       every job a real Job: Kueue's Job integration, the Job controller, the scheduler, KWOK's pods
             (simulator/replay.py, the default mode of `simulate`)
  workloads  Kueue Workloads created directly and finished by the replay (simulator/direct_workloads.py)

The trace is a week of the Helios-profile synthetic trace (simulator/synthetic.py) at --load, of which the
first --window-h hours are replayed (the arrival rate of a week's steady state; a full week is the window's
wall time times 168 / window, stated as an extrapolation). For each mode: wall seconds, wall seconds per
trace hour, the week extrapolated, CPU seconds per process of the cluster (API server, etcd, Kueue, KWOK,
controller manager, scheduler) and of the replay itself, and the API server's own split of its request
time (the admission webhooks' share: Kueue's run inside the Kueue process). Then the fidelity of the
workloads mode to the pods mode on that trace (simulator/fidelity.py compare_runs): admitted order, wait
p50/p95, GPU-hours per team.

    python -m bench.whatif_scale [--scale 1] [--window-h 0.1] [--speed 6] [--modes pods,workloads] [--json f]

--scale shrinks every pool (bench/seed_stack.py) for a cluster of the same shape that queues under fewer jobs.
Prints one JSON object. Exit status: 0 done, 2 a step failed, 3 tools missing.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench.common import emit, process_cpu_seconds, report_figures
from bench.seed_stack import seed_config

WEEK_H = 168.0
# The cluster's processes (their pids from `scripts/local-cluster pid`, looked up once before measuring).
PROCESSES = ("kube-apiserver", "etcd", "kueue", "kwok", "kube-controller-manager", "kube-scheduler", "karpenter-kwok")
# The API server's own histograms (its /metrics): request time by verb, and the admission webhooks' time.
REQUEST_SUM = "apiserver_request_duration_seconds_sum"
WEBHOOK_SUM = "apiserver_admission_webhook_admission_duration_seconds_sum"


def cluster_pids(session) -> dict[str, int]:
    """The running components' pids, asked of the driver once (a lookup between two CPU readings would be
    counted as the cluster's CPU)."""
    cluster = session.cluster()
    return {name: pid for name in PROCESSES if (pid := cluster.pid(name)) is not None}


def cluster_cpu(pids: dict[str, int]) -> dict[str, float]:
    out = {}
    for name, pid in pids.items():
        try:
            out[name] = process_cpu_seconds(pid)
        except (OSError, ValueError):
            continue
    out["replay (this process)"] = sum(getattr(resource.getrusage(resource.RUSAGE_SELF), f) for f in ("ru_utime", "ru_stime"))
    return out


def api_times(client) -> dict[str, float] | None:
    """Seconds the API server spent on requests other than watches, and in admission webhooks, so far (its
    /metrics, on a connection of its own: the client's may have been closed by the server while idle);
    None when the server does not answer."""
    import http.client

    for _ in range(3):
        conn = http.client.HTTPSConnection(client.host, client.port, context=client.context, timeout=60)
        try:
            conn.request("GET", "/metrics", headers={"Accept": "text/plain"})
            text = conn.getresponse().read().decode()
            break
        except (http.client.HTTPException, OSError):
            time.sleep(1)
        finally:
            conn.close()
    else:
        return None
    requests = webhooks = 0.0
    for line in text.splitlines():
        if line.startswith(REQUEST_SUM) and 'verb="WATCH"' not in line and 'verb="CONNECT"' not in line:
            requests += float(line.rsplit(" ", 1)[1])
        elif line.startswith(WEBHOOK_SUM):
            webhooks += float(line.rsplit(" ", 1)[1])
    return {"requests_s": requests, "webhooks_s": webhooks}


def release_lag(run) -> list[float]:
    """Wall seconds from when each run that ended by itself should have released its quota (admission plus
    its compressed duration) to Kueue's Finished seen: the simulator's own time per job in that mode."""
    admitted: dict[int, float] = {}
    out = []
    for e in run.events:
        if e.kind == "admitted":
            admitted[e.job] = e.t
        elif e.kind == "finished" and e.job in admitted:
            out.append((e.t - admitted.pop(e.job) - run.jobs[e.job].duration) / run.speed)
    return out


def load_avg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every pool's node count (default 1: 1,000 nodes)")
    ap.add_argument("--window-h", type=float, default=0.1, help="trace hours replayed (default 0.1)")
    ap.add_argument("--trace", choices=("week", "window"), default="week",
                    help="week: the first window of a week's trace (its steady arrival rate); window: a trace "
                         "generated for the window alone (--load of work inside it: a dense burst that queues)")
    ap.add_argument("--load", type=float, default=1.2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--speed", type=float, default=6.0, help="time compression of both replays (default 6)")
    ap.add_argument("--modes", default="pods,workloads")
    ap.add_argument("--json")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]

    from gpu_platform.stack_files import load_plan
    from localcluster.session import Session, SessionError
    from simulator import direct_workloads, fidelity, metrics, synthetic
    from simulator.progress import Printer
    from simulator.replay import drain, replay
    from simulator.stackfile import write_kubernetes_layer

    for mode in modes:
        direct_workloads.check_mode(mode)
    state = Path(tempfile.mkdtemp(prefix="gpu-platform-whatif-scale-"))
    stack = state / "Pulumi.seed.yaml"
    stack.write_text(yaml.safe_dump({"config": seed_config(scale=args.scale)}, sort_keys=False))
    layer = write_kubernetes_layer(stack, state / "seed.stack.yaml")
    plan = load_plan(None, str(layer))[1]
    horizon = args.window_h * 3600
    t0 = time.perf_counter()
    if args.trace == "week":
        week = synthetic.generate(plan, args.seed, WEEK_H, args.load)
        jobs = [j for j in week if j.submit < horizon]
        week_jobs = len(week)
    else:
        jobs = synthetic.generate(plan, args.seed, args.window_h, args.load)
        week_jobs = None
    generated_s = time.perf_counter() - t0
    nodes = sum(p.capacity_units // p.units_per_node for p in plan.pools)
    figures: dict[str, Any] = {
        "stack": {"nodes": nodes, "gpus": sum(p.capacity_units // p.units_per_gpu for p in plan.pools),
                  "teams": len(plan.teams), "scale": args.scale},
        "trace": {"kind": args.trace, "load": args.load, "seed": args.seed, "window_h": args.window_h,
                  "jobs_in_window": len(jobs), "jobs_in_week": week_jobs, "generated_s": round(generated_s, 1),
                  "speed": args.speed},
    }
    session = Session(state / "cluster-state", layer)
    runs: dict[str, Any] = {}
    try:
        figures["setup"] = {"start_s": round(session.start(), 1), "deploy_s": round(session.deploy(), 1),
                            "load": load_avg()}
        client = session.client()
        pids = cluster_pids(session)
        for mode in modes:
            cpu0, api0 = cluster_cpu(pids), api_times(client)
            print(f"whatif_scale: {mode}: {len(jobs)} jobs over {args.window_h:g} h at {args.speed:g}x "
                  f"(load {load_avg()})", file=sys.stderr)
            progress = Printer(every=10)
            if mode == "workloads":
                run = direct_workloads.replay(client, plan, jobs, args.speed, horizon, progress)
            else:
                # The whole horizon, as the workloads mode runs it: the two modes' wall times are compared.
                run = replay(client, plan, jobs, args.speed, horizon, progress, stop_when_idle=False)
            cpu1, api1 = cluster_cpu(pids), api_times(client)
            r = metrics.compute(run, plan)
            runs[mode] = (run, r)
            cpu = {k: round(cpu1[k] - cpu0.get(k, 0.0), 1) for k in cpu1}
            requests = api1["requests_s"] - api0["requests_s"] if api0 and api1 else 0.0
            figures[mode] = {
                "wall_s": round(run.wall_seconds, 1),
                "wall_s_per_trace_h": round(run.wall_seconds / args.window_h, 1),
                "week_wall_h_extrapolated": round(run.wall_seconds / args.window_h * WEEK_H / 3600, 2),
                "jobs_submitted": sum(1 for e in run.events if e.kind == "submitted"),
                "jobs_finished": r["jobs_finished"],
                "submit_lag_p95_s": r["simulator"]["submit_lag_p95_s"],
                "cpu_s": dict(sorted(cpu.items(), key=lambda kv: -kv[1])),
                "cpu_s_total": round(sum(cpu.values()), 1),
                "api_request_s": round(requests, 1),
                "api_webhook_share": (round((api1["webhooks_s"] - api0["webhooks_s"]) / requests, 3)
                                      if api0 and api1 and requests else None),
                "release_lag_p50_s": None if not (lag := release_lag(run)) else round(fidelity.quantile(lag, 0.5), 2),
                "release_lag_p95_s": None if not lag else round(fidelity.quantile(lag, 0.95), 2),
                "patch_failures": run.patch_failures,
                "load_after": load_avg(),
            }
            print(f"whatif_scale: {mode}: {figures[mode]}", file=sys.stderr)   # kept if a later step fails
            if mode == modes[-1]:
                break   # the cluster goes: no drain (draining a loaded cluster's pods took over ten minutes)
            if mode == "workloads":
                direct_workloads.drain(client, plan)
            drain(client, plan, timeout=600)
        if "pods" in runs and "workloads" in runs:
            hours = {m: {t: v["gpu_hours_used"] for t, v in runs[m][1]["teams"].items()} for m in runs}
            figures["fidelity"] = fidelity.compare_runs(runs["pods"][0], runs["workloads"][0], hours["pods"],
                                                        hours["workloads"])
            figures["ratio_wall_pods_over_workloads"] = round(figures["pods"]["wall_s"] / figures["workloads"]["wall_s"], 2)
    except (SessionError, TimeoutError) as err:
        print(f"whatif_scale: {err}", file=sys.stderr)
        emit(figures)
        return 2
    finally:
        if args.keep:
            print(f"whatif_scale: cluster kept: KUBECONFIG={session.kubeconfig}", file=sys.stderr)
        else:
            session.stop()
            shutil.rmtree(state, ignore_errors=True)
    report_figures(figures, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
