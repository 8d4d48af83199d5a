"""Seed scale, apples to apples: Kueue's scheduler baseline on bare Kueue and through the platform, on one
cluster in one run, and the platform's overhead as a ratio per figure Kueue's checker reads.

One live local cluster with the seed-scale stack and the baseline's 30 platform teams (bench/scale.py
stack_config, started and deployed as bench.scale does). Then, in the order --phases gives:

  bare      Kueue's runner's own objects and Workloads (bench/bare_kueue.py, bench/bare_replay.py): a
            ResourceFlavor, 30 ClusterQueues in 5 cohorts with cpu quotas, namespaces no platform policy
            selects, Workloads created directly at the generator's intervals and finished by the replay
            after their running time, as the runner's controller does; removed afterwards as its Cleanup does
  platform  the same baseline as the platform's Jobs in the 30 teams' namespaces (bench/scale.py Replay:
            tenant admission policies, ResourceQuotas, Kueue's Job webhooks and integration, the Job
            controller, kube-scheduler, KWOK); its Jobs deleted afterwards

Per phase: Kueue's figures (bench/kueue_baseline.py figures: wall, average time to admission per class),
and where the time went over the phase (bench/time_split.py: the API server's request, admission, webhook,
policy and etcd seconds, Kueue's reconcile, webhook and client seconds, CPU seconds per process and how long
each waited for a CPU, and per Kueue webhook the API server's seconds outside Kueue's handler). Printed:
the figures as bare / platform / ratio (target: the platform within 1.5x), and the time split side by side.

    python -m bench.kueue_compare [--fraction 0.1] [--node-scale 1] [--phases bare,platform] [--json out.json]

Ports: LOCAL_CLUSTER_APISERVER_PORT / LOCAL_CLUSTER_ETCD_PORT (default 17443 / 24790; the cluster takes the
API server's port to +23, Kueue's metrics at +3). Exit status: 0 done, 2 a step failed, 3 tools missing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Callable

from bench import bare_kueue, time_split
from bench.bare_replay import BareReplay
from bench.common import report_figures, tools_missing
from bench.kueue_baseline import compare, expected_at, format_table
from bench.scale import (TOOLS, Replay, clean, cpu_seconds, delta, deploy, load, metrics_text, parse_metrics,
                         parse_seed_arguments, progress, registration, seed_stack, wait_ready)
from localcluster.api import ApiError, Client
from localcluster.prometheus import scrape_token
from localcluster.session import Session, SessionError
from localcluster.toolcache import CACHE

PHASES = ("bare", "platform")


def parse_phases(text: str) -> list[str]:
    phases = [p.strip() for p in text.split(",") if p.strip()]
    bad = [p for p in phases if p not in PHASES]
    if bad or not phases or len(set(phases)) != len(phases):
        raise argparse.ArgumentTypeError(f"--phases {text!r}: a comma-separated order of {', '.join(PHASES)}, "
                                         "each at most once")
    return phases


class Meter:
    """A phase's window: the API server's and Kueue's series and each process's CPU, before and after."""

    def __init__(self, client: Client, state: Path, kueue_port: int, token: str | None):
        self.client, self.state, self.kueue_port, self.token = client, state, kueue_port, token

    def _read(self) -> tuple[dict, dict, dict[str, float], dict[str, float]]:
        api = parse_metrics(metrics_text(self.client), time_split.API_NAMES)
        kueue: dict = {}
        if self.token:
            try:
                kueue = time_split.kueue_metrics(self.client.host, self.kueue_port, self.token)
            except (OSError, RuntimeError) as err:
                progress(f"Kueue's metrics not read: {err}")
        return api, kueue, cpu_seconds(self.state), time_split.run_queue_seconds(self.state)

    def _webhook_paths(self) -> dict[str, str]:
        """Which Kueue handler path each webhook name calls, to set the two sides of a call side by side."""
        configs = [c for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations")
                   for c in self.client.get(f"/apis/admissionregistration.k8s.io/v1/{kind}")["items"]]
        return time_split.webhook_paths(configs)

    def measure(self, run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        paths = self._webhook_paths()
        api0, kueue0, cpu0, runq0 = self._read()
        result = run()
        api1, kueue1, cpu1, runq1 = self._read()
        cpu = {k: round(cpu1[k] - cpu0.get(k, 0), 1) for k in sorted(cpu1, key=lambda k: -(cpu1[k] - cpu0.get(k, 0)))}
        runq = {k: round(v - runq0.get(k, 0), 1) for k, v in runq1.items()}
        d_api, d_kueue = delta(api1, api0), delta(kueue1, kueue0)
        split = {"api": time_split.api_split(d_api), "kueue": time_split.kueue_split(d_kueue),
                 "webhooks_outside_handler": time_split.outside_handler(d_api, d_kueue, paths)}
        return {**result, "load_after": load(), "cpu_s": cpu, "run_queue_s": runq, "where": split,
                "summary": time_split.summary(split, cpu, runq)}


def run_bare(client: Client, meter: Meter, fraction: float, timeout: float) -> dict[str, Any]:
    ready = bare_kueue.set_up(client)
    progress(f"bare Kueue: 30 ClusterQueues active in {ready:.1f}s; replay of {expected_at(fraction)} Workloads "
             f"(load {load()}) ...")
    result = meter.measure(lambda: BareReplay(client, fraction).run(timeout))
    result["queues_active_s"] = round(ready, 1)
    result["cleaned_up_s"] = round(bare_kueue.clean_up(client), 1)
    return result


def run_platform(client: Client, plan: Any, meter: Meter, fraction: float, timeout: float) -> dict[str, Any]:
    progress(f"the platform: replay of {expected_at(fraction)} Jobs (load {load()}) ...")
    result = meter.measure(lambda: Replay(client, plan, fraction, "cmp").run(timeout))
    started = time.perf_counter()
    clean(client, plan)
    result["cleaned_up_s"] = round(time.perf_counter() - started, 1)
    return result


def report(figures: dict[str, Any]) -> None:
    """The tables, when both phases ran."""
    bare, platform = figures.get("bare"), figures.get("platform")
    if not bare or not platform:
        return
    figures["ratios"] = compare(bare, platform)
    print(f"\nKueue's baseline at fraction {figures['fraction']}: bare Kueue vs the platform (load "
          f"{bare['load_after']} / {platform['load_after']} after each)\n", file=sys.stderr)
    print(format_table(figures["ratios"]), file=sys.stderr)
    print("\nwhere the time went, over each replay\n", file=sys.stderr)
    print(time_split.compare(bare["summary"], platform["summary"]), file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fraction", type=float, default=0.1, help="of Kueue's 15,000 workloads (default 0.1)")
    ap.add_argument("--node-scale", type=float, default=1.0, help="multiply the seed pools' nodes (default 1)")
    ap.add_argument("--phases", type=parse_phases, default=list(PHASES),
                    help="which replays, in which order (default bare,platform)")
    args = parse_seed_arguments(ap, argv)
    if tools_missing("kueue_compare", TOOLS, CACHE / "bin"):
        return 3
    state, stack_file, plan = seed_stack(args.state, args.node_scale, "gpu-platform-bench-compare-")
    apiserver_port = int(os.environ.get("LOCAL_CLUSTER_APISERVER_PORT", "17443"))
    session = Session(state, stack_file, apiserver_port=apiserver_port,
                      etcd_port=int(os.environ.get("LOCAL_CLUSTER_ETCD_PORT", "24790")))
    gpu_nodes = sum(p.max_nodes for p in plan.pools)
    figures: dict[str, Any] = {"fraction": args.fraction, "workloads": expected_at(args.fraction),
                               "phases": args.phases, "stack": {"gpu_nodes": gpu_nodes, "teams": len(plan.teams)},
                               "load_before": load()}
    try:
        progress(f"starting the cluster: {gpu_nodes} GPU nodes, {len(plan.teams)} teams (load {load()}) ...")
        (session.state / "backend").mkdir(exist_ok=True)
        shutil.copy(stack_file, session.config_file)
        t = time.perf_counter()
        out = session.cluster().script("start", timeout=1800)
        figures["start"] = {"cold_s": round(time.perf_counter() - t, 1), "registration": registration(out.stderr)}
        progress(f"started in {figures['start']['cold_s']}s; pulumi up ...")
        figures["deploy"] = deploy(session)
        client = session.client()
        figures["ready_after_deploy_s"] = round(wait_ready(client, gpu_nodes), 1)
        try:
            token: str | None = scrape_token(client)
        except (ApiError, RuntimeError) as err:
            progress(f"no token for Kueue's metrics, its side of the split is left out: {err}")
            token = None
        meter = Meter(client, state, apiserver_port + time_split.KUEUE_METRICS_OFFSET, token)
        for phase in args.phases:
            if phase == "bare":
                figures["bare"] = run_bare(client, meter, args.fraction, args.timeout)
            else:
                figures["platform"] = run_platform(client, plan, meter, args.fraction, args.timeout)
            progress(f"{phase}: wall {figures[phase]['wall_s']}s, {figures[phase]['finished']}/"
                     f"{figures[phase]['expected']} finished (load {load()})")
        report(figures)
    except (SessionError, ApiError, RuntimeError) as err:
        print(f"bench.kueue_compare: {err}", file=sys.stderr)
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
