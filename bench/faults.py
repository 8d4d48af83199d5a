"""Fault benchmark: the full trial counts of tests/faults on one fresh local cluster (ports of its own,
31443/20790), with the scenarios of tests/faults/scenarios.py (over the runbook's localcluster/recovery.py)
and the configs of tests/faults/configs.py.

  local   the throwaway `local` config without checkpoints: --trials kills of `up` at seeded steps
          (alternating between configs A and B), each recovered as docs/runbook.md says and converged;
          then the restart round (Kueue, kube-scheduler, etcd under admitted and pending jobs) and the
          drift round (ClusterQueue quota, a default-deny NetworkPolicy, a namespace label)
  ckpt    a synthetic checkpointed stack of --teams teams (20: 300+ objects): --trials kills, --outages
          API server outages mid-`up`, --concurrent pairs of simultaneous `up`s

    python -m bench.faults [--trials 10] [--teams 20] [--outages 3] [--concurrent 3] [--seed 17]
                           [--json faults.json] [--plot faults.png] [--keep]

Reports per trial (progress lines on stderr) and, at the end, one JSON object: trials, converged, orphans /
missing / duplicates left after recovery (target 0), what the kills left before recovery, recovery and
converging-up seconds, the time a stopped API server takes to fail the CLI, lock refusals, restarts and
drift. Exit status: 0 every trial converged, 1 one did not, 2 a step failed, 3 tools missing.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench.common import tools_missing
from localcluster import recovery as R
from tests.faults import scenarios as F

TOOLS = ("pulumi", "pulumi-language-python", "pulumi-resource-kubernetes", "etcd", "kube-apiserver",
         "kube-controller-manager", "kube-scheduler", "kueue", "kwok", "helm")
PORTS = ("31443", "20790")


def progress(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def summarize(trials: list[F.Trial]) -> dict[str, Any]:
    killed = [t for t in trials if not t.kill.finished_first]
    return {
        "trials": len(trials),
        "killed_mid_update": len(killed),
        "converged": sum(1 for t in trials if t.final.converged and t.no_changes),
        "orphans_after_recovery": sum(len(t.final.orphans) for t in trials),
        "missing_after_recovery": sum(len(t.final.missing) for t in trials),
        "duplicates_after_recovery": sum(len(t.final.duplicates) for t in trials),
        "pending_after_recovery": sum(t.final.pending for t in trials),
        "orphans_left_by_kills": sum(len(t.after_kill.orphans) for t in trials),
        "absent_after_kills": sum(len(t.after_kill.missing) for t in trials),
        "pending_operations_left_by_kills": sum(t.recovery.pending_before for t in trials),
        "trials_with_pending": sum(1 for t in trials if t.recovery.pending_before),
        "lock_refused": sum(1 for t in killed if t.recovery.lock_refused),
        "plugin_stragglers": sum(t.kill.stragglers for t in trials),
        "recovery_p50_s": round(statistics.median(t.recovery.seconds for t in trials), 1),
        "converging_up_p50_s": round(statistics.median(t.converge_s for t in trials), 1),
        "killed_at_step": [t.kill.after_steps for t in trials],
    }


def kill_round(stack: F.StackRig, label: str, trials: int, seed: int) -> tuple[list[F.Trial], bool]:
    targets = ["B" if (trials - i) % 2 else "A" for i in range(trials)]
    stack.up("A" if targets[0] == "B" else "B")
    changes = len(stack.declared["A"] ^ stack.declared["B"])
    out = []
    for i, (step, jitter) in enumerate(F.seeded_kill_points(seed, trials, changes)):
        t = stack.trial(targets[i], step, jitter)
        out.append(t)
        progress(f"{label} kill {i + 1}/{trials} {t.line()}")
    stack.up("B2")
    inv = stack.inventory("B2")
    adopted_ok = inv.converged and stack.no_changes()
    progress(f"{label}: a change of the adopted objects (B2): {inv}")
    return out, adopted_ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--teams", type=int, default=20)
    ap.add_argument("--outages", type=int, default=3)
    ap.add_argument("--concurrent", type=int, default=3)
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--parts", default="local,restarts,drift,ckpt,concurrent,outage",
                    help="comma-separated subset of: local (kills), restarts, drift, ckpt (kills), concurrent, outage")
    ap.add_argument("--keep", action="store_true", help="leave the cluster and its state directory")
    ap.add_argument("--json", help="write the figures to this file")
    ap.add_argument("--plot", help="write recovery + converging-up seconds against the kill step to this PNG")
    args = ap.parse_args(argv)
    parts = set(args.parts.split(","))
    from localcluster.signals import interrupt_on_sigterm
    interrupt_on_sigterm()  # a SIGTERM stops the benchmark's cluster, as Ctrl-C does

    from tests.realtools import BIN, new_engine, start_cluster, stop_cluster
    from tests.faults.configs import SECRET_KEY, ckpt_configs, kubectl_of, local_configs, make_stack

    if tools_missing("faults", TOOLS, BIN):
        return 3
    tmp = Path(tempfile.mkdtemp(prefix="gpu-platform-bench-faults-"))
    figures: dict[str, Any] = {"seed": args.seed}
    cluster = None
    try:
        progress("cluster start ...")
        cluster = start_cluster(tmp / "cluster", *PORTS, "bench faults")
        engine = new_engine(tmp / "backend")
        token = "bench-faults-token"
        kubeconfig = yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "users": [{"name": "w", "user": {"token": token}}],
                                     "clusters": [{"name": "w", "cluster": {"server": "https://127.0.0.1:9"}}],
                                     "contexts": [{"name": "w", "context": {"cluster": "w", "user": "w"}}],
                                     "current-context": "w"})
        local = make_stack(engine, cluster, tmp, "faults-local", local_configs(), skip_checkpoints=True)
        ckpt = make_stack(engine, cluster, tmp, "faults-ckpt", ckpt_configs(args.teams), skip_checkpoints=False,
                        secret_config={SECRET_KEY: kubeconfig})
        ckpt.pulumi("config", "set", "--secret", SECRET_KEY, *ckpt.stack_args, input=kubeconfig)
        kinds = R.kinds_of(set().union(*local.declared.values(), *ckpt.declared.values()))
        local.baseline = ckpt.baseline = set(R.cluster_objects(kubectl_of(cluster), kinds))
        figures["objects"] = {"local": len(local.declared["A"]), "ckpt": len(ckpt.declared["A"]),
                              "ckpt_B": len(ckpt.declared["B"])}

        local_trials: list[F.Trial] = []
        ckpt_trials: list[F.Trial] = []
        if parts & {"local", "restarts", "drift"}:
            if "local" in parts:
                progress(f"local stack ({figures['objects']['local']} objects, no checkpoints): {args.trials} kills ...")
                local_trials, local_adopted = kill_round(local, "local", args.trials, args.seed)
                figures["local"] = {**summarize(local_trials), "adopted_objects_change_ok": local_adopted}
            local.up("A")
            if "restarts" in parts:
                progress("restart round ...")
                figures["restarts"] = restart_round(local, cluster)
            if "drift" in parts:
                progress("drift round ...")
                figures["drift"] = drift_round(local, cluster)
            local.pulumi("destroy", "--yes", "--skip-preview", *local.stack_args)

        if "ckpt" in parts:
            progress(f"checkpointed stack ({figures['objects']['ckpt']} objects): {args.trials} kills ...")
            ckpt_trials, ckpt_adopted = kill_round(ckpt, "ckpt", args.trials, args.seed + 1)
            figures["ckpt"] = {**summarize(ckpt_trials), "adopted_objects_change_ok": ckpt_adopted}
        elif parts & {"concurrent", "outage"}:
            ckpt.up("A")

        conc = []
        for i in range(args.concurrent if "concurrent" in parts else 0):
            r = F.concurrent_ups(ckpt, "A" if ckpt.current != "A" else "B")
            inv = ckpt.inventory()
            conc.append({"first_rc": r.first_rc, "second_rc": r.second_rc, "lock_named": r.lock_named,
                         "refused_after_s": r.second_s, "converged": inv.converged})
            progress(f"concurrent {i + 1}/{args.concurrent}: second refused={r.second_rc != 0} "
                     f"lock named={r.lock_named} in {r.second_s}s; {inv}")
        if conc:
            figures["concurrent"] = {"pairs": len(conc), "one_refused_lock_named": sum(
                1 for c in conc if c["first_rc"] == 0 and c["second_rc"] != 0 and c["lock_named"]),
                "converged": sum(1 for c in conc if c["converged"]),
                "refused_after_s_max": max((c["refused_after_s"] for c in conc), default=0)}

        outages = []
        for i in range(args.outages if "outage" in parts else 0):
            target = "A" if ckpt.current != "A" else "B"
            o = F.apiserver_outage(ckpt, target, cluster.driver, at_step=3 + 5 * i)
            outages.append(o)
            progress(f"outage {i + 1}/{args.outages}: rc {o.rc}, failed {o.detect_s}s after the stop, names the "
                     f"cluster {o.names_cluster} ({o.message[:140]}); back in {o.restart_s}s, pending {o.pending}, "
                     f"up {o.converge_s}s; {o.final}")
        figures["outage"] = outages and {
            "trials": len(outages), "failed": sum(1 for o in outages if o.rc != 0),
            "named_the_cluster": sum(1 for o in outages if o.names_cluster),
            "converged": sum(1 for o in outages if o.final.converged and o.no_changes),
            "detect_s": [o.detect_s for o in outages],
            "detect_max_s": max((o.detect_s for o in outages), default=0),
            "message": outages[0].message[:300],
            "restart_attempts": [o.restart_attempts for o in outages],
        }
        if args.plot and (local_trials or ckpt_trials):
            plot(local_trials, ckpt_trials, Path(args.plot))
    except (F.FaultError, AssertionError, RuntimeError) as err:
        print(f"bench.faults: {err}", file=sys.stderr)
        print(json.dumps(figures, indent=2))
        return 2
    finally:
        if cluster is not None and not args.keep:
            stop_cluster(cluster)
            shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    ok = all(figures[s]["converged"] == figures[s]["trials"] and figures[s]["adopted_objects_change_ok"]
             for s in ("local", "ckpt") if s in figures)
    ok = ok and (not figures.get("outage") or figures["outage"]["converged"] == figures["outage"]["trials"])
    return 0 if ok else 1


def restart_round(local: F.StackRig, cluster) -> list[dict[str, Any]]:
    from gpu_platform.jobs import JobRequest, job
    from gpu_platform.plan import build_plan
    from gpu_platform.spec import load_platform

    plan = build_plan(load_platform(local.configs["A"], "us-east-1"), "us-east-1")
    objs = []
    for i in range(4):
        objs += job(plan, JobRequest(team="vision", pool="train", gpus=4, name=f"restart-{i}", duration="1h"))
    objs += job(plan, JobRequest(team="serving", pool="infer", gpus=1, name="restart-infer", duration="1h"))
    cluster.kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    deadline = time.monotonic() + 60
    while sum(F.queue_snapshot(local.kubectl)["workloads"].values()) < 4 and time.monotonic() < deadline:
        time.sleep(0.5)
    snap = F.queue_snapshot(local.kubectl)
    progress(f"restart round: {len(snap['workloads'])} workloads, {sum(snap['workloads'].values())} admitted")
    out = []
    for component in ("kueue", "kube-scheduler", "etcd"):
        r = F.restart_component(component, cluster.driver, local.kubectl)
        out.append({"component": component, "workloads": len(snap["workloads"]),
                    "admitted": sum(snap["workloads"].values()), "seconds": r.seconds, "lost": len(r.lost), "unadmitted": len(r.unadmitted),
                    "newly_admitted": len(r.newly_admitted), "recreated": len(r.recreated), "usage_equal": r.usage_equal})
        progress(f"restart {component}: {out[-1]}")
    for team in ("vision", "serving"):
        cluster.kubectl("delete", "jobs", "--all", "-n", team, "--wait=true", "--timeout=60s")
    return out


def drift_round(local: F.StackRig, cluster) -> dict[str, Any]:
    from gpu_platform import conventions as cv

    cluster.kubectl("patch", "clusterqueue.kueue.x-k8s.io", "vision", "--type=json", "-p", json.dumps(
        [{"op": "replace", "path": "/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota", "value": "99"}]))
    cluster.kubectl("delete", "networkpolicy", cv.NETWORK_POLICY_DEFAULT_DENY, "-n", "vision")
    cluster.kubectl("label", "namespace", "nlp", f"{cv.TEAM}=someone-else", "--overwrite")
    started = time.perf_counter()
    preview = local.pulumi("preview", "--refresh", "--json", *local.stack_args)
    detect = round(time.perf_counter() - started, 1)
    changes = sorted(u.rsplit("::", 1)[1] + ":" + op for u, op in F.planned_changes(preview.stdout).items())
    started = time.perf_counter()
    local.pulumi("up", "--refresh", "--yes", "--skip-preview", *local.stack_args)
    undo = round(time.perf_counter() - started, 1)
    clean = local.no_changes(refresh=True)
    progress(f"drift: {changes} found in {detect}s, undone in {undo}s, clean after: {clean}")
    return {"edits": 3, "planned_changes": changes, "preview_refresh_s": detect, "up_refresh_s": undo,
            "clean_after": clean}


def plot(local: list[F.Trial], ckpt: list[F.Trial], out: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("bench.faults: matplotlib not installed; no plot", file=sys.stderr)
        return
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for trials, label in ((local, "local (no checkpoints)"), (ckpt, "checkpointed")):
        ax.scatter([t.kill.after_steps for t in trials], [t.recovery.seconds + t.converge_s for t in trials], label=label)
    ax.set_xlabel("killed after step")
    ax.set_ylabel("recovery + converging up (s)")
    ax.set_title("Killed `pulumi up`: time back to converged")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


if __name__ == "__main__":
    sys.exit(main())
