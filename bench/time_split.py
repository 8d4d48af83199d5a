"""Where a replay's time goes, from the components' own metrics over its window: the API server's request time
per admission policy and webhook and etcd's request time under it, Kueue's reconcile, webhook and client
time, and the CPU each process of the cluster burned. Read before and after a replay and differenced
(bench/scale.py parse_metrics / delta), so two replays on one cluster are split the same way.

Series (all cumulative since the process started):
- kube-apiserver (k8s.io/apiserver v0.33): apiserver_request_duration_seconds by verb and resource;
  apiserver_admission_webhook_admission_duration_seconds by webhook name; apiserver_admission_controller_
  admission_duration_seconds by admission plugin (ValidatingAdmissionPolicy: all the CEL policies at once);
  apiserver_validating_admission_policy_check_duration_seconds by policy (pkg/admission/plugin/policy/
  validating/metrics/metrics.go, BETA; listed when the server serves it); etcd_request_duration_seconds by
  operation and type (the API server's calls into etcd, storage/etcd3/metrics).
- Kueue (controller-runtime v0.24.1, Kueue v0.19.2's go.mod's, and Kueue v0.19.2 pkg/metrics):
  controller_runtime_reconcile_time_seconds by controller; controller_runtime_webhook_latency_seconds by webhook
  path (time inside Kueue's handler, to set beside the API server's time for the same webhook);
  rest_client_request_duration_seconds by verb (Kueue's own calls to the API server, when served: Kueue v0.19.2
  does not); kueue_admission_attempt_duration_seconds by result (one scheduling cycle). The per-policy series
  above is not served by the local cluster's API server either (measured: only the ValidatingAdmissionPolicy
  plugin's total), so the policies are one figure. Kueue serves them over HTTPS to a bearer token a TokenReview
  accepts (localcluster/prometheus.py: the same scraper identity the local Prometheus uses).
- Waiting for a CPU, which the seconds above include: the API server's go_sched_latencies_seconds (Go's
  runtime/metrics /sched/latencies:seconds, served by its Go collector: how long runnable goroutines waited
  for one of its GOMAXPROCS threads) and, per process, the kernel's run_delay over all its threads
  (/proc/<pid>/task/<tid>/schedstat, second field, nanoseconds runnable but not running).

A webhook's seconds at the API server (apiserver_admission_webhook_admission_duration_seconds: from before the
call to after the patch is applied, k8s.io/apiserver v0.33.13 pkg/admission/plugin/webhook/mutating/
dispatcher.go) less its handler's seconds in Kueue (controller_runtime_webhook_latency_seconds: the whole
ServeHTTP, body read to response written, sigs.k8s.io/controller-runtime v0.24.1 pkg/webhook/internal/metrics/
metrics.go InstrumentedHook) is the time neither spent working on the call: encoding, the network and, on a
saturated machine, mostly both processes' goroutines waiting to run (`outside_handler`; docs/performance.md
"Where the time went: the webhook gap").
"""

from __future__ import annotations

import http.client
import ssl
import urllib.parse
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable

from bench.scale import METRIC_NAMES, parse_metrics, total

API_NAMES = METRIC_NAMES + ("apiserver_validating_admission_policy_check_duration_seconds",
                            "etcd_request_duration_seconds", "go_sched_latencies_seconds")
KUEUE_NAMES = ("controller_runtime_reconcile_time_seconds", "controller_runtime_webhook_latency_seconds",
               "rest_client_request_duration_seconds", "kueue_admission_attempt_duration_seconds")
# scripts/local-cluster: Kueue's metrics port is the API server's + 3 (KUEUE_METRICS_PORT).
KUEUE_METRICS_OFFSET = 3


def kueue_metrics(host: str, port: int, token: str) -> dict:
    """Kueue's series of KUEUE_NAMES. TLS is not verified: Kueue serves a certificate of its own (as the
    stack's ServiceMonitor for it does, components/monitoring)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    conn = http.client.HTTPSConnection(host, port, context=context, timeout=60)
    try:
        conn.request("GET", "/metrics", headers={"Authorization": f"Bearer {token}"})
        resp = conn.getresponse()
        body = resp.read().decode()
        if resp.status >= 400:
            raise RuntimeError(f"Kueue's /metrics: HTTP {resp.status}: {body[:200]}")
    finally:
        conn.close()
    return parse_metrics(body, KUEUE_NAMES)


def by_label(d: dict, name: str, *labels: str, top: int = 8) -> dict[str, dict[str, float]]:
    """A histogram's seconds, count and mean per value of `labels` (joined by a space), most seconds first."""
    sums: dict[str, float] = defaultdict(float)
    counts: dict[str, float] = defaultdict(float)
    for (n, labs), v in d.items():
        lab = dict(labs)
        key = " ".join(lab.get(x, "?") for x in labels)
        if n == f"{name}_sum":
            sums[key] += v
        elif n == f"{name}_count":
            counts[key] += v
    out = {}
    for key in sorted(sums, key=lambda k: -sums[k])[:top]:
        n = counts.get(key, 0)
        out[key] = {"s": round(sums[key], 2), "count": int(n),
                    "mean_ms": round(1000 * sums[key] / n, 2) if n else None}
    return out


def webhook_paths(configurations: Iterable[dict[str, Any]]) -> dict[str, str]:
    """{webhook name: the path it is called at} over Mutating/ValidatingWebhookConfiguration objects: the
    clientConfig URL's path (the local cluster's loopback webhooks) or the service's path (a real cluster's)."""
    out = {}
    for config in configurations:
        for hook in config.get("webhooks") or []:
            client = hook.get("clientConfig") or {}
            url = client.get("url")
            path = urllib.parse.urlsplit(url).path if url else (client.get("service") or {}).get("path")
            if path:
                out[hook["name"]] = path
    return out


def outside_handler(api: dict, kueue: dict, paths: dict[str, str]) -> dict[str, dict[str, float]]:
    """Per webhook Kueue served in the window: the API server's mean time per call, Kueue's handler's, and the
    API server's seconds outside the handler (its seconds less the handler's), most first."""
    def seconds(d: dict, name: str, label: str) -> tuple[dict[str, float], dict[str, float]]:
        sums: dict[str, float] = defaultdict(float)
        counts: dict[str, float] = defaultdict(float)
        for (n, labels), v in d.items():
            key = dict(labels).get(label, "?")
            if n == f"{name}_sum":
                sums[key] += v
            elif n == f"{name}_count":
                counts[key] += v
        return sums, counts

    api_s, api_n = seconds(api, "apiserver_admission_webhook_admission_duration_seconds", "name")
    handler_s, handler_n = seconds(kueue, "controller_runtime_webhook_latency_seconds", "webhook")
    out = {}
    for name, total_s in api_s.items():
        path = paths.get(name)
        if path not in handler_s or not api_n.get(name) or not handler_n.get(path):
            continue
        out[name] = {"api_mean_ms": round(1000 * total_s / api_n[name], 1),
                     "handler_mean_ms": round(1000 * handler_s[path] / handler_n[path], 1),
                     "outside_s": round(total_s - handler_s[path], 2)}
    return dict(sorted(out.items(), key=lambda kv: -kv[1]["outside_s"]))


def scheduler_wait_ms(d: dict) -> float | None:
    """The API server's goroutines' mean wait to run over a window's delta (go_sched_latencies_seconds)."""
    n = total(d, "go_sched_latencies_seconds_count")
    return round(1000 * total(d, "go_sched_latencies_seconds_sum") / n, 2) if n else None


def run_queue_seconds(state: Path) -> dict[str, float]:
    """Seconds each running component of the cluster has spent runnable but not running, all its threads
    summed (the kernel's run_delay); empty where the kernel keeps no schedstat."""
    out = {}
    for pidfile in sorted((state / "cluster" / "run").glob("*.pid")):
        try:
            tasks = Path(f"/proc/{int(pidfile.read_text().split()[0])}/task")
            delays = [int((t / "schedstat").read_text().split()[1]) for t in tasks.iterdir()]
        except (OSError, ValueError, IndexError):
            continue
        out[pidfile.stem] = sum(delays) / 1e9
    return out


# Long-running requests: a watch's or a proxy's duration is how long the client kept it open, not work.
LONG_RUNNING_VERBS = ("WATCH", "CONNECT")


def api_split(d: dict) -> dict[str, Any]:
    """The API server's side of a window's delta."""
    requests = "apiserver_request_duration_seconds"
    served = {k: v for k, v in d.items() if not (k[0].startswith(requests) and dict(k[1]).get("verb") in LONG_RUNNING_VERBS)}
    return {
        "request_s": round(total(served, f"{requests}_sum"), 2),
        "requests": by_label(served, requests, "verb", "resource", "subresource"),
        "admission_s": round(total(d, "apiserver_admission_step_admission_duration_seconds_sum"), 2),
        "admission_plugins": by_label(d, "apiserver_admission_controller_admission_duration_seconds", "name", "type"),
        "webhooks": by_label(d, "apiserver_admission_webhook_admission_duration_seconds", "name"),
        "policies": by_label(d, "apiserver_validating_admission_policy_check_duration_seconds", "policy"),
        "etcd_s": round(total(d, "etcd_request_duration_seconds_sum"), 2),
        "etcd": by_label(d, "etcd_request_duration_seconds", "operation", "type"),
        "apf_queue_wait_s": round(total(d, "apiserver_flowcontrol_request_wait_duration_seconds_sum"), 2),
        "goroutine_wait_mean_ms": scheduler_wait_ms(d),
    }


def kueue_split(d: dict) -> dict[str, Any]:
    """Kueue's side of a window's delta."""
    reconcile = "controller_runtime_reconcile_time_seconds"
    return {
        "reconcile_s": round(total(d, f"{reconcile}_sum"), 2),
        "reconcile": by_label(d, reconcile, "controller"),
        "webhooks": by_label(d, "controller_runtime_webhook_latency_seconds", "webhook"),
        "client_requests": by_label(d, "rest_client_request_duration_seconds", "verb"),
        "admission_attempts": by_label(d, "kueue_admission_attempt_duration_seconds", "result"),
    }


# The processes whose wait for a CPU the summary shows: the API server, the webhook server it calls, its store.
RUN_QUEUE_SHOWN = ("kube-apiserver", "kueue", "etcd")


def summary(split: dict[str, Any], cpu_s: dict[str, float],
            run_queue_s: dict[str, float] | None = None) -> dict[str, float | None]:
    """The few seconds two replays are compared by: CPU per component and how long it waited for one, the
    request, admission, webhook (and of it outside Kueue's handler), policy, etcd and Kueue reconcile seconds."""
    api, kueue = split.get("api", {}), split.get("kueue", {})
    out: dict[str, float | None] = {f"cpu {k} (s)": v for k, v in cpu_s.items()}
    for k in RUN_QUEUE_SHOWN:
        if run_queue_s and k in run_queue_s:
            out[f"waiting for a CPU, {k} (s)"] = run_queue_s[k]
    out["API server goroutines' wait to run, mean (ms)"] = api.get("goroutine_wait_mean_ms")
    out["API server request time (s)"] = api.get("request_s")
    out["  of it admission (s)"] = api.get("admission_s")
    out["  webhooks (s)"] = round(sum(w["s"] for w in api.get("webhooks", {}).values()), 2) if api else None
    gaps = split.get("webhooks_outside_handler")
    outside = round(sum(g["outside_s"] for g in gaps.values()), 2) if gaps else None
    out["    of it outside Kueue's handler (s)"] = outside
    plugins = api.get("admission_plugins", {})
    out["  ValidatingAdmissionPolicy plugin (s)"] = round(sum(
        v["s"] for k, v in plugins.items() if k.startswith("ValidatingAdmissionPolicy ")), 2) if api else None
    out["  ResourceQuota plugin (s)"] = round(sum(
        v["s"] for k, v in plugins.items() if k.startswith("ResourceQuota ")), 2) if api else None
    out["etcd request time (s)"] = api.get("etcd_s")
    out["Kueue reconcile time (s)"] = kueue.get("reconcile_s")
    return out


def compare(bare: dict[str, float | None], platform: dict[str, float | None]) -> str:
    """The two summaries side by side, as a Markdown table."""
    lines = ["| where | bare Kueue | platform | platform / bare |", "| --- | --- | --- | --- |"]
    for key in list(dict.fromkeys(list(bare) + list(platform))):
        b, p = bare.get(key), platform.get(key)
        ratio = f"{p / b:.2f}x" if b and p is not None else "-"
        lines.append(f"| {key} | {'-' if b is None else b} | {'-' if p is None else p} | {ratio} |")
    return "\n".join(lines)
