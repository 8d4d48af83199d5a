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
- Kueue (controller-runtime v0.22 and Kueue v0.19.2 pkg/metrics): controller_runtime_reconcile_time_seconds
  by controller; controller_runtime_webhook_latency_seconds by webhook path (time inside Kueue's handler, to
  set beside the API server's time for the same webhook); rest_client_request_duration_seconds by verb (Kueue's
  own calls to the API server, when served: Kueue v0.19.2 does not); kueue_admission_attempt_duration_seconds by
  result (one scheduling cycle). The per-policy series above is not served by the local cluster's API server
  either (measured: only the ValidatingAdmissionPolicy plugin's total), so the policies are one figure.
  Kueue serves them over HTTPS to a bearer token a TokenReview accepts (localcluster/prometheus.py: the same
  scraper identity the local Prometheus uses).
"""

from __future__ import annotations

import http.client
import ssl
from collections import defaultdict
from typing import Any

from bench.scale import METRIC_NAMES, parse_metrics, total

API_NAMES = METRIC_NAMES + ("apiserver_validating_admission_policy_check_duration_seconds",
                            "etcd_request_duration_seconds")
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


def summary(split: dict[str, Any], cpu_s: dict[str, float]) -> dict[str, float | None]:
    """The few seconds two replays are compared by: CPU per component, and the request, admission, webhook,
    policy, etcd and Kueue reconcile seconds."""
    api, kueue = split.get("api", {}), split.get("kueue", {})
    out: dict[str, float | None] = {f"cpu {k} (s)": v for k, v in cpu_s.items()}
    out["API server request time (s)"] = api.get("request_s")
    out["  of it admission (s)"] = api.get("admission_s")
    out["  webhooks (s)"] = round(sum(w["s"] for w in api.get("webhooks", {}).values()), 2) if api else None
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
