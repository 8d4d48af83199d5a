"""The live local cluster's Prometheus: its configuration, the platform's rule files and its scrape identity.

Prometheus (scripts/tools/prometheus.sh: the github.com/prometheus/prometheus module at the promtool release)
runs as a host process of scripts/local-cluster, like Kueue. It scrapes:

- Kueue's metrics endpoint on loopback. Kueue serves it over HTTPS with a certificate of its own (self-signed
  by controller-runtime when internal certificate management is on) and lets a request in only with a bearer
  token that a TokenReview accepts and a SubjectAccessReview allows to `get` the non-resource URL /metrics
  (kueue v0.19.2 cmd/kueue/main.go: metricsserver.Options SecureServing, FilterProvider
  filters.WithAuthenticationAndAuthorization; controller-runtime pkg/metrics/filters/filters.go takes tokens
  only, no client certificates). So the scraper is a ServiceAccount with a token Secret and a ClusterRole for
  /metrics, as kube-prometheus-stack's Prometheus is on a real cluster, and TLS is not verified, as the
  stack's own Kueue ServiceMonitor does (components/monitoring.kueue_service_monitor_spec);
- the GPU telemetry process (localcluster/telemetry.py): one dcgm-exporter target per simulated GPU node
  through HTTP service discovery, and the kube-state-metrics families the rules read;
- the real node's kubelet, when one runs (localcluster/realnode): its /metrics and /metrics/cadvisor, the real
  pods' network and block I/O series, with the jobs of kube-prometheus-stack's kubelet ServiceMonitor
  (scrape_jobs.kubelet_jobs: the same relabelings and dropped families), found at the node's address and kubelet port
  as the API server knows them. Where that Prometheus sends its ServiceAccount's token, this one presents the API
  server's kubelet client certificate, which the kubelet's client CA signed and which may get nodes/metrics
  (system:kubelet-api-admin, bound when the real node starts: localcluster/realnode/prepare.py); neither verifies
  the kubelet's self-signed serving certificate (the chart's insecureSkipVerify: true);
- Karpenter's metrics (plain HTTP) and Prometheus itself.

The jobs of Kueue, dcgm-exporter and kube-state-metrics are the ones EKS gets, from the same code
(gpu_platform/plan/scrape_jobs.py: the managed collector's jobs, and the ServiceMonitors of kube-prometheus-stack):
the same job names, honor_labels, TLS settings and relabelings. Only how targets are found differs: static and HTTP
discovery of the local processes instead of Kubernetes endpoints discovery, each target carrying the discovery labels
Kubernetes would give it (scrape_jobs.discovery_labels), so the same relabelings give it the same labels. A drift
fails tests/unit/gpu_platform/test_scrape_jobs.py.

Its rule file is the PrometheusRule the stack deploys, rendered from the plan: components/alerts.rule_file,
the same groups tests/promtool checks and the Monitoring component puts in the PrometheusRule's spec.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Sequence

import yaml

from components import alerts
from gpu_platform import conventions as cv
from gpu_platform.plan import Plan
from gpu_platform.plan.monitoring import KUBE_PROMETHEUS_STACK_CHART
from gpu_platform.plan.scrape_jobs import (
    discovery_labels, kubelet_discovery_labels, kubelet_jobs, kubelet_service, prometheus_job, source,
)

from .api import ApiError, Client

SCRAPE_INTERVAL = "15s"
EVALUATION_INTERVAL = "15s"
# A shorter interval for scraping, evaluating and the telemetry's reads of the cluster (a Go duration of whole
# seconds, such as 1s): the test that compares a compressed replay's report with the live one samples every
# second, so a run of 30 wall seconds is not measured to the nearest 15 (docs/report.md).
SCRAPE_INTERVAL_ENV = "LOCAL_CLUSTER_SCRAPE_INTERVAL"


def intervals() -> tuple[str, str]:
    """(scrape, evaluation) interval: LOCAL_CLUSTER_SCRAPE_INTERVAL for both when set, else 15 s each."""
    value = os.environ.get(SCRAPE_INTERVAL_ENV, "").strip()
    if not value:
        return SCRAPE_INTERVAL, EVALUATION_INTERVAL
    if not re.fullmatch(r"[1-9][0-9]*s", value):
        raise ValueError(f"{SCRAPE_INTERVAL_ENV} {value!r} is not a whole number of seconds such as 1s or 15s")
    return value, value
RULE_FILE = "gpu-platform.rules.yaml"
TOKEN_FILE = "scrape.token"
CONFIG_FILE = "prometheus.yml"
# The scraper's identity: a ServiceAccount in kube-system (present before any stack is deployed), its
# long-lived token Secret (filled by kube-controller-manager's token controller) and the ClusterRole a
# Prometheus needs for endpoints that authorize /metrics (kube-prometheus-stack's prometheus ClusterRole has
# the same nonResourceURLs rule).
SCRAPER = "gpu-platform-prometheus"
SCRAPER_NAMESPACE = "kube-system"
TOKEN_SECRET = f"{SCRAPER}-token"
# The report's sources' jobs (gpu_platform/conventions/monitoring.py), and the local cluster's own.
KUEUE_JOB, DCGM_JOB, KSM_JOB = cv.KUEUE_JOB, cv.DCGM_JOB, cv.KSM_JOB
KARPENTER_JOB = "karpenter"
PROMETHEUS_JOB = "prometheus"
# Where the telemetry serves what kube-state-metrics would (localcluster/telemetry_server.py).
KSM_METRICS_PATH = "/ksm/metrics"
TOKEN_WAIT_SECONDS = 60
# The certificate (localcluster/pki.py) the local Prometheus presents to a real node's kubelet: the API server's own
# kubelet client, under <state>/pki.
KUBELET_CLIENT_CERT = "apiserver-kubelet-client"


@dataclass(frozen=True, slots=True)
class Kubelet:
    """A real node's kubelet: the node's name and where its server listens (host:port)."""

    node: str
    address: str


def real_kubelets(client: Client) -> list[Kubelet]:
    """The kubelets of the real nodes (label NODE_KIND_LABEL=real) as their Node objects give them: the InternalIP
    and the kubelet's port (status.daemonEndpoints.kubeletEndpoint.Port, which the kubelet reports)."""
    nodes = client.get("/api/v1/nodes", labelSelector=f"{cv.NODE_KIND_LABEL}={cv.NODE_KIND_REAL}").get("items", [])
    out = []
    for n in nodes:
        status = n.get("status", {})
        ip = next((a["address"] for a in status.get("addresses") or [] if a.get("type") == "InternalIP"), None)
        port = (status.get("daemonEndpoints") or {}).get("kubeletEndpoint", {}).get("Port")
        if ip and port:
            out.append(Kubelet(n["metadata"]["name"], f"{ip}:{port}"))
    return sorted(out, key=lambda k: k.node)


def scraper_objects() -> list[dict[str, Any]]:
    labels = {cv.MANAGED_BY: cv.MANAGED_BY_VALUE}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": SCRAPER, "namespace": SCRAPER_NAMESPACE, "labels": labels}},
        {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
         "metadata": {"name": TOKEN_SECRET, "namespace": SCRAPER_NAMESPACE, "labels": labels,
                      "annotations": {"kubernetes.io/service-account.name": SCRAPER}}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": SCRAPER, "labels": labels},
         "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": SCRAPER, "labels": labels},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": SCRAPER},
         "subjects": [{"kind": "ServiceAccount", "name": SCRAPER, "namespace": SCRAPER_NAMESPACE}]},
    ]


_PATHS = {
    "ServiceAccount": f"/api/v1/namespaces/{SCRAPER_NAMESPACE}/serviceaccounts",
    "Secret": f"/api/v1/namespaces/{SCRAPER_NAMESPACE}/secrets",
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
}


def scrape_token(client: Client, timeout: float = TOKEN_WAIT_SECONDS) -> str:
    """Create the scraper's objects (kept when they exist) and return its token once the token controller
    has written it."""
    import base64

    for obj in scraper_objects():
        try:
            client.create(_PATHS[obj["kind"]], obj)
        except ApiError as err:
            if err.status != 409:
                raise
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        secret = client.get(f"{_PATHS['Secret']}/{TOKEN_SECRET}")
        token = (secret.get("data") or {}).get("token")
        if token:
            return base64.b64decode(token).decode()
        time.sleep(0.5)
    raise RuntimeError(f"no token in {SCRAPER_NAMESPACE}/{TOKEN_SECRET} after {timeout:.0f}s: is "
                       "kube-controller-manager running with --service-account-private-key-file?")


def config(*, kueue_metrics: str, telemetry: str, prometheus: str, karpenter_metrics: str | None,
           token_file: Path, rule_file: Path, kubelets: Sequence[Kubelet] = (), kubelet_service_name: str = "",
           kubelet_client: tuple[Path, Path] | None = None) -> dict[str, Any]:
    """prometheus.yml (Prometheus 3 configuration file format). Kueue, dcgm-exporter and kube-state-metrics are
    scraped with EKS's jobs (gpu_platform/plan/scrape_jobs.prometheus_job): Kueue and kube-state-metrics (the
    telemetry) at static addresses, labelled as Kubernetes would discover their Services' endpoints (host processes:
    no pod, no node); dcgm-exporter's targets from the telemetry's HTTP discovery, which labels each as its pod's
    endpoint (localcluster/telemetry.py, targets). KUBELETS (the real nodes'), with KUBELET_CLIENT (certificate,
    key): kube-prometheus-stack's kubelet jobs, each kubelet labelled as its node's endpoint of KUBELET_SERVICE_NAME."""
    scrape_interval, evaluation_interval = intervals()
    kueue, dcgm, ksm = source(KUEUE_JOB), source(DCGM_JOB), source(KSM_JOB)
    scrape: list[dict[str, Any]] = [
        {**prometheus_job(kueue, token_file=str(token_file)),
         "static_configs": [{"targets": [kueue_metrics], "labels": discovery_labels(kueue)}]},
        {**prometheus_job(dcgm),
         "http_sd_configs": [{"url": f"http://{telemetry}/targets", "refresh_interval": scrape_interval}]},
        {**prometheus_job(ksm),
         "static_configs": [{"targets": [telemetry], "labels": discovery_labels(ksm, metrics_path=KSM_METRICS_PATH)}]},
        {"job_name": PROMETHEUS_JOB, "static_configs": [{"targets": [prometheus]}]},
    ]
    if karpenter_metrics:
        scrape.append({"job_name": KARPENTER_JOB, "static_configs": [{"targets": [karpenter_metrics]}]})
    if kubelets and kubelet_client is not None:
        groups = [{"targets": [k.address], "labels": kubelet_discovery_labels(kubelet_service_name, k.node)}
                  for k in kubelets]
        scrape += [{**job, "static_configs": groups} for job in kubelet_jobs(
            kubelet_service_name, token_file=None, client_cert=(str(kubelet_client[0]), str(kubelet_client[1])))]
    return {
        "global": {"scrape_interval": scrape_interval, "evaluation_interval": evaluation_interval},
        "rule_files": [str(rule_file)],
        "scrape_configs": scrape,
    }


def write(plan: Plan, out: Path, *, kueue_metrics: str, telemetry: str, prometheus: str,
          karpenter_metrics: str | None, client: Client | None) -> list[Path]:
    """The rule file, the scrape token (when a client is given) and prometheus.yml, in `out` (the state
    directory's `prometheus`: the PKI is its sibling). With a client, the real nodes' kubelets are scraped too."""
    out.mkdir(parents=True, exist_ok=True)
    rules = out / RULE_FILE
    rules.write_text(yaml.safe_dump(alerts.rule_file(plan), sort_keys=False))
    token = out / TOKEN_FILE
    token.touch(mode=0o600)  # Prometheus refuses a configuration naming a missing credentials file
    token.chmod(0o600)
    kubelets: list[Kubelet] = []
    if client is not None:
        token.write_text(scrape_token(client))
        kubelets = real_kubelets(client)
    pki = out.parent / "pki"
    cert, key = pki / f"{KUBELET_CLIENT_CERT}.crt", pki / f"{KUBELET_CLIENT_CERT}.key"
    cfg = out / CONFIG_FILE
    cfg.write_text(yaml.safe_dump(config(
        kueue_metrics=kueue_metrics, telemetry=telemetry, prometheus=prometheus, karpenter_metrics=karpenter_metrics,
        token_file=token, rule_file=rules, kubelets=kubelets,
        kubelet_service_name=kubelet_service(plan.addons.monitoring.prometheus_release, KUBE_PROMETHEUS_STACK_CHART),
        kubelet_client=(cert, key) if cert.exists() else None), sort_keys=False))
    return [cfg, rules, token]


def local_url(state_dir: Path) -> str | None:
    """The Prometheus of a running local cluster: the port the local cluster started it on (cluster.env
    PROMETHEUS_PORT; none when the cluster runs without it)."""
    env = state_dir / "cluster.env"
    if not env.exists():
        return None
    for line in env.read_text().splitlines():
        key, _, value = line.partition("=")
        if key == "PROMETHEUS_PORT" and value.strip().isdigit():
            return f"http://127.0.0.1:{int(value)}"
    return None
