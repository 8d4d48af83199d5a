"""The scrape jobs the platform's rules and report read, built once for every Prometheus that runs them.

Three sources feed the rules and the report: dcgm-exporter, kube-state-metrics and Kueue. Whoever scrapes them
must give their series the same `job` and target labels, or a join reads 0 (docs/report.md). Three scrapers do:

- in-cluster (and external): kube-prometheus-stack's Prometheus, from ServiceMonitors. The Prometheus Operator turns
  an endpoint into a scrape job whose targets carry namespace, service, pod, container and endpoint
  (prometheus-operator pkg/prometheus/promcfg.go, generateServiceMonitorConfig) and then the endpoint's own
  relabelings. `service_monitor_endpoint` gives that endpoint (Kueue's ServiceMonitor, components/monitoring.py);
  dcgm-exporter's is the GPU Operator's, configured with `honor_labels` and `relabelings` of `SOURCES`
  (components/gpu_operator.py), kube-state-metrics' the chart's, with `honor_labels` (components/observability.py).
- managed: the collector's Prometheus configuration (plan/monitoring.scrape_configuration): `prometheus_job` with
  Kubernetes endpoints discovery, relabelled as the Operator would.
- the live local cluster's Prometheus (localcluster/prometheus.py): the same `prometheus_job`, with static and HTTP
  discovery of the local processes; each target carries the Kubernetes discovery labels `discovery_labels` gives, so
  the same relabelings run on it and give the same labels. Only the addresses differ.

tests/unit/gpu_platform/test_scrape_jobs.py fails when the renderings drift apart.

A fourth job is kube-prometheus-stack's own, which the platform does not configure: the kubelets, cAdvisor's per-pod
network and block I/O series among them (`kubelet_jobs`, written out so the live local cluster can run it on its
real node: tests/unit/gpu_platform/test_acceptance_scrape.py holds it to the chart's values). The managed collector
has no such job of its own, so the platform gives it one for cAdvisor (`managed_cadvisor_job`), which keeps only the
series the platform reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from .. import conventions as cv

# The labels Prometheus' Kubernetes service discovery gives an endpoints-role target (prometheus/prometheus
# discovery/kubernetes/endpoints.go and pod.go): what the relabelings below read.
META_NAMESPACE = "__meta_kubernetes_namespace"
META_SERVICE = "__meta_kubernetes_service_name"
META_PORT = "__meta_kubernetes_endpoint_port_name"
META_POD = "__meta_kubernetes_pod_name"
META_CONTAINER = "__meta_kubernetes_pod_container_name"
META_NODE = "__meta_kubernetes_pod_node_name"
# Where a target is scraped from, when not the job's metrics_path (Prometheus' reserved target label).
METRICS_PATH_LABEL = "__metrics_path__"
METRICS_PATH = "/metrics"
# `node` from the scraped pod's node, so GPU series join kube-state-metrics' node series: the relabeling the GPU
# Operator chart's values give as dcgmExporter.serviceMonitor's example, in Prometheus' spelling.
NODE_RELABELING: Mapping[str, Any] = {"source_labels": [META_NODE], "target_label": cv.NODE_LABEL, "action": "replace"}


@dataclass(frozen=True, slots=True)
class ScrapeSource:
    """One source the rules and the report read, and how it must be scraped."""

    job: str
    namespace: str
    service: str
    port: str
    # The series' own labels win over the target's: a GPU keeps the namespace and pod of the workload using it
    # (dcgm-exporter), an object's labels are its own (kube-state-metrics). Their ServiceMonitors' honorLabels.
    honor_labels: bool = False
    # HTTPS with a certificate nobody can verify, and the scraper's bearer token: Kueue serves /metrics so, with a
    # certificate controller-runtime signs itself unless cert-manager is on, and lets a request in only with a token
    # that a TokenReview accepts and a SubjectAccessReview allows to get /metrics (kueue v0.19.2 cmd/kueue/main.go;
    # its chart's own ServiceMonitor skips verification for that reason: kubernetes-sigs/kueue v0.19.2
    # charts/kueue/values.yaml metrics.serviceMonitor.tlsConfig.insecureSkipVerify: true, the tlsConfig of the
    # endpoint in templates/prometheus/monitor.yaml). Only Kueue's source sets it (tests/unit/components/
    # test_observability.py holds everything the stack renders to that).
    https_unverified: bool = False
    bearer_token: bool = False
    # Relabelings after the ServiceMonitor's own (Prometheus' spelling).
    relabelings: tuple[Mapping[str, Any], ...] = ()


def scrape_sources(ksm_namespace: str = cv.MONITORING_NAMESPACE) -> tuple[ScrapeSource, ...]:
    """dcgm-exporter, kube-state-metrics and Kueue, in that order. kube-state-metrics runs in the monitoring stack's
    namespace."""
    return (
        ScrapeSource(cv.DCGM_JOB, cv.GPU_OPERATOR_NAMESPACE, cv.DCGM_SERVICE, cv.DCGM_PORT, honor_labels=True,
                     relabelings=(NODE_RELABELING,)),
        ScrapeSource(cv.KSM_JOB, ksm_namespace, cv.KSM_SERVICE, cv.KSM_PORT, honor_labels=True),
        ScrapeSource(cv.KUEUE_JOB, cv.KUEUE_NAMESPACE, cv.KUEUE_METRICS_SERVICE, cv.KUEUE_METRICS_PORT,
                     https_unverified=True, bearer_token=True),
    )


def source(job: str, ksm_namespace: str = cv.MONITORING_NAMESPACE) -> ScrapeSource:
    return next(s for s in scrape_sources(ksm_namespace) if s.job == job)


def relabel_configs(src: ScrapeSource) -> list[dict[str, Any]]:
    """Keep the source's Service and port, then label the target as a ServiceMonitor does (namespace, service, pod,
    container, endpoint), then the source's own relabelings."""
    return [
        {"action": "keep", "source_labels": [META_SERVICE, META_PORT], "regex": f"{src.service};{src.port}"},
        {"source_labels": [META_NAMESPACE], "target_label": cv.NAMESPACE_LABEL},
        {"source_labels": [META_SERVICE], "target_label": cv.SERVICE_LABEL},
        {"source_labels": [META_POD], "target_label": cv.POD_LABEL},
        {"source_labels": [META_CONTAINER], "target_label": cv.CONTAINER_LABEL},
        {"target_label": cv.ENDPOINT_LABEL, "replacement": src.port},
        *(dict(r) for r in src.relabelings),
    ]


def prometheus_job(src: ScrapeSource, token_file: str = cv.SERVICE_ACCOUNT_TOKEN) -> dict[str, Any]:
    """The source's <scrape_config> without its discovery section (the caller adds kubernetes_sd_configs, or static
    or HTTP discovery whose targets carry `discovery_labels`). `token_file`: where this scraper's bearer token is."""
    job: dict[str, Any] = {"job_name": src.job}
    if src.honor_labels:
        job["honor_labels"] = True
    if src.https_unverified:
        job["scheme"] = "https"
        # Prometheus verifies a target's certificate unless told not to (<tls_config> insecure_skip_verify, default
        # false: prometheus/prometheus docs/configuration/configuration.md), so this is for Kueue's self-signed
        # endpoint only (ScrapeSource.https_unverified). No job or option of the platform's talks to Amazon Managed
        # Service for Prometheus: the managed collector remote-writes to its workspace itself, through a VPC endpoint
        # (AMP user guide, AMP-collector.html), the in-cluster stack configures no remote_write, and `report --sigv4`
        # reads the workspace with Python's default certificate checks (platform_cli/prometheus_api.py). The kubelet
        # and cAdvisor jobs are kube-prometheus-stack's own, which skip verification of the kubelets' self-signed
        # serving certificates by the chart's default (88.5.3 values.yaml kubelet.serviceMonitor.insecureSkipVerify:
        # true), not the platform's.
        job["tls_config"] = {"insecure_skip_verify": True}
    if src.bearer_token:
        job["authorization"] = {"type": "Bearer", "credentials_file": token_file}
    job["relabel_configs"] = relabel_configs(src)
    return job


def kubernetes_discovery(src: ScrapeSource) -> dict[str, Any]:
    """Endpoints discovery in the source's namespace (the role a ServiceMonitor's job uses)."""
    return {"kubernetes_sd_configs": [{"role": "endpoints", "namespaces": {"names": [src.namespace]}}]}


def discovery_labels(src: ScrapeSource, *, pod: str | None = None, container: str | None = None,
                     node: str | None = None, metrics_path: str | None = None) -> dict[str, str]:
    """The labels Kubernetes endpoints discovery would give a target of the source, for a scraper that finds its
    targets another way (the live local cluster: no Service, no pod for a host process). Prometheus relabels a
    target's discovered and group labels alike (a static_config's `labels` included), and takes __metrics_path__ from
    them before the job's metrics_path (prometheus/prometheus scrape/target.go, PopulateLabels)."""
    labels = {META_NAMESPACE: src.namespace, META_SERVICE: src.service, META_PORT: src.port}
    for key, value in ((META_POD, pod), (META_CONTAINER, container), (META_NODE, node),
                       (METRICS_PATH_LABEL, metrics_path)):
        if value:
            labels[key] = value
    return labels


def operator_relabeling(r: Mapping[str, Any]) -> dict[str, Any]:
    """A relabeling as the Prometheus Operator's RelabelConfig spells it (sourceLabels, targetLabel, ...)."""
    camel = {"source_labels": "sourceLabels", "target_label": "targetLabel"}
    return {camel.get(k, k): (list(v) if isinstance(v, (list, tuple)) else v) for k, v in r.items()}


def service_monitor_endpoint(src: ScrapeSource) -> dict[str, Any]:
    """The source as a ServiceMonitor endpoint (monitoring.coreos.com/v1): the Operator's job for it is
    `prometheus_job` with endpoints discovery."""
    ep: dict[str, Any] = {"port": src.port, "path": METRICS_PATH}
    if src.honor_labels:
        ep["honorLabels"] = True
    if src.https_unverified:
        ep["scheme"] = "https"
        # prometheus_job's tls_config in the Operator's spelling (TLSConfig insecureSkipVerify): Kueue's only.
        ep["tlsConfig"] = {"insecureSkipVerify": True}
    if src.bearer_token:
        ep["bearerTokenFile"] = cv.SERVICE_ACCOUNT_TOKEN
    if src.relabelings:
        ep["relabelings"] = [operator_relabeling(r) for r in src.relabelings]
    return ep


# ==== The kubelet: kube-prometheus-stack's own job, which the pods' network and block I/O series come from =========
# Mode in-cluster's Prometheus scrapes every node's kubelet with the chart's kubelet ServiceMonitor, which the platform
# leaves as it is (kube-prometheus-stack 88.5.3 templates/exporters/kubelet/servicemonitor.yaml, values.yaml
# kubelet.serviceMonitor): through the Service the Prometheus Operator keeps of the nodes (kube-system/<fullname>-
# kubelet, port https-metrics: prometheusOperator.kubeletService), the job named after its `k8s-app` label (jobLabel),
# HTTPS without verifying the kubelets' self-signed serving certificates (insecureSkipVerify: true), honorLabels, and
# of its endpoints /metrics and /metrics/cadvisor (/metrics/resource is off, `resource: false`; /metrics/probes has
# no pod's figures), each with `metrics_path` from __metrics_path__ and its metricRelabelings (cAdvisor's drop some
# families and every cgroup without a pod). An endpoint whose target is a Node gets `node` (prometheus-operator
# pkg/prometheus/promcfg.go, generateServiceMonitorConfig). cAdvisor labels a container's series with its pod's
# namespace, pod and container (k8s.io/kubernetes v1.33.13 pkg/kubelet/server/server.go containerPrometheusLabelsFunc).
# Mode managed scrapes cAdvisor with `managed_cadvisor_job` below; mode external, whatever its Prometheus does. The
# live local cluster's Prometheus runs these jobs on its real node's kubelet (localcluster/prometheus.py), each target
# labelled as that Service's endpoint.
KUBELET_JOB = cv.KUBELET_JOB
KUBELET_NAMESPACE = "kube-system"
KUBELET_PORT = "https-metrics"
KUBELET_JOB_LABEL = "__meta_kubernetes_service_label_k8s_app"
META_TARGET_KIND = "__meta_kubernetes_endpoint_address_target_kind"
META_TARGET_NAME = "__meta_kubernetes_endpoint_address_target_name"
METRICS_PATH_TARGET_LABEL = "metrics_path"
CADVISOR_PATH = "/metrics/cadvisor"
# The Operator's relabelings for a target that is a Node and for the job's name, then the chart's own.
KUBELET_RELABELINGS: tuple[Mapping[str, Any], ...] = (
    {"source_labels": [META_TARGET_KIND, META_TARGET_NAME], "separator": ";", "regex": "Node;(.*)",
     "replacement": "${1}", "target_label": cv.NODE_LABEL},
    {"source_labels": [KUBELET_JOB_LABEL], "target_label": "job", "regex": "(.+)", "replacement": "${1}"},
    {"action": "replace", "source_labels": [METRICS_PATH_LABEL], "target_label": METRICS_PATH_TARGET_LABEL},
)
# Two of the chart's cAdvisor metricRelabelings, which the managed collector's job runs too: a host-network pod's
# network series on the node's CNI interfaces, and a cgroup's series (`id`) with no pod (the node's, a system slice's).
CNI_INTERFACE_DROP: Mapping[str, Any] = {"source_labels": ["__name__", cv.INTERFACE_LABEL], "action": "drop",
                                         "regex": "container_network_.*;(cali|cilium|cni|lxc|nodelocaldns|tunl).*"}
NO_POD_DROP: Mapping[str, Any] = {"source_labels": ["id", cv.POD_LABEL], "action": "drop", "regex": ".+;"}
# Each endpoint's path and metricRelabelings, as the chart's values give them (kubelet.serviceMonitor.
# metricRelabelings and cAdvisorMetricRelabelings), in Prometheus' spelling.
KUBELET_ENDPOINTS: tuple[tuple[str, tuple[Mapping[str, Any], ...]], ...] = (
    (METRICS_PATH, (
        {"action": "drop", "source_labels": ["__name__", "le"],
         "regex": r"(csi_operations|storage_operation_duration)_seconds_bucket;(0.25|2.5|15|25|120|600)(\.0)?"},
    )),
    (CADVISOR_PATH, (
        {"source_labels": ["__name__"], "action": "drop",
         "regex": "container_cpu_(cfs_throttled_seconds_total|load_average_10s|system_seconds_total|"
                  "user_seconds_total)"},
        {"source_labels": ["__name__"], "action": "drop",
         "regex": "container_fs_(io_current|io_time_seconds_total|io_time_weighted_seconds_total|reads_merged_total|"
                  "sector_reads_total|sector_writes_total|writes_merged_total)"},
        {"source_labels": ["__name__"], "action": "drop", "regex": "container_memory_(mapped_file|swap)"},
        {"source_labels": ["__name__"], "action": "drop",
         "regex": "container_(file_descriptors|tasks_state|threads_max)"},
        {"source_labels": ["__name__", "scope"], "action": "drop",
         "regex": "container_memory_failures_total;hierarchy"},
        CNI_INTERFACE_DROP,
        {"source_labels": ["__name__"], "action": "drop", "regex": "container_spec.*"},
        NO_POD_DROP,
    )),
)


def kubelet_service(release: str, chart: str) -> str:
    """The Operator's kubelet Service as the chart names it: `<fullname>-kubelet`, where fullname is the release
    when it contains the chart's name, else `<release>-<chart>`, at most 26 characters (templates/_helpers.tpl
    kube-prometheus-stack.fullname; templates/prometheus-operator/deployment.yaml --kubelet-service)."""
    fullname = release if chart in release else f"{release}-{chart}"
    return f"{fullname[:26].rstrip('-')}-kubelet"


def kubelet_source(service: str) -> ScrapeSource:
    return ScrapeSource(KUBELET_JOB, KUBELET_NAMESPACE, service, KUBELET_PORT, honor_labels=True,
                        https_unverified=True, bearer_token=True, relabelings=KUBELET_RELABELINGS)


def kubelet_jobs(service: str, *, token_file: str | None = cv.SERVICE_ACCOUNT_TOKEN,
                 client_cert: tuple[str, str] | None = None) -> list[dict[str, Any]]:
    """The kubelet ServiceMonitor's endpoints as <scrape_config>s without their discovery section, one per path,
    named as the Operator names them (serviceMonitor/<namespace>/<name>/<index>; the `job` label is the Service's
    k8s-app). How the scraper proves who it is differs: its ServiceAccount's token (TOKEN_FILE), or a client
    certificate the kubelet's client CA signed (CLIENT_CERT: certificate and key files, TOKEN_FILE None)."""
    src = kubelet_source(service)
    jobs = []
    for index, (path, metric_relabelings) in enumerate(KUBELET_ENDPOINTS):
        job = prometheus_job(src, token_file or cv.SERVICE_ACCOUNT_TOKEN)
        if token_file is None:
            del job["authorization"]
        if client_cert is not None:
            job["tls_config"] = {**job["tls_config"], "cert_file": client_cert[0], "key_file": client_cert[1]}
        jobs.append({**job, "job_name": f"serviceMonitor/{KUBELET_NAMESPACE}/{service}/{index}", "metrics_path": path,
                     "metric_relabel_configs": [dict(r) for r in metric_relabelings]})
    return jobs


def kubelet_discovery_labels(service: str, node: str) -> dict[str, str]:
    """What endpoints discovery gives a node's address in the Operator's kubelet Service: the Service's labels and
    the endpoint's target, the Node."""
    return {**discovery_labels(kubelet_source(service)), KUBELET_JOB_LABEL: KUBELET_JOB, META_TARGET_KIND: "Node",
            META_TARGET_NAME: node}


# ==== cAdvisor for the managed collector ============================================================================
# A managed collector scrapes cAdvisor as the AMP user guide's sample configuration does (docs.aws.amazon.com/
# prometheus/latest/userguide/AMP-collector-how-to.html, "Scraper configuration", job `cadvisor`; the default
# configuration GetDefaultScraperConfiguration returns has the same job): node discovery (kubernetes_sd_configs role
# node), every target's address the API server's, kubernetes.default.svc:443 (the only host name a collector resolves,
# "DNS resolution"), and the node's cAdvisor through the API server's node proxy, __metrics_path__
# /api/v1/nodes/$1/proxy/metrics/cadvisor from the node's name, over https with the collector's bearer token (the only
# authorization it may send, "Authorization") and no tls_config. The API server authorizes that request as `get` of
# the subresource nodes/proxy, and discovery as list and watch of nodes (k8s.io/apiserver pkg/endpoints/request/
# requestinfo.go: /api/v1/nodes/<name>/proxy/... is resource nodes, subresource proxy, name <name>). The access entry
# policy the service gives a scraper on a cluster in authentication mode API or API_AND_CONFIG_MAP grants both (same
# page, "Configure Amazon EKS for scraper access with access entries", "Access entry policy created": nodes,
# nodes/proxy and nodes/metrics with get, list and watch), so the platform makes no RBAC of its own for this job
# (components/observability.py).
API_SERVER_ADDRESS = "kubernetes.default.svc:443"
META_NODE_NAME = "__meta_kubernetes_node_name"
NODE_PROXY_CADVISOR_PATH = "/api/v1/nodes/$1/proxy" + CADVISOR_PATH
# What the collector keeps of a cAdvisor series: its name, the target's labels (job, instance, node, metrics_path) and
# the labels that tell the platform's series apart (namespace, pod, container, interface, device).
CADVISOR_KEPT_LABELS: tuple[str, ...] = (
    "__name__", "job", "instance", cv.NODE_LABEL, METRICS_PATH_TARGET_LABEL, cv.NAMESPACE_LABEL, cv.POD_LABEL,
    cv.CONTAINER_LABEL, cv.INTERFACE_LABEL, cv.DEVICE_LABEL,
)


def managed_cadvisor_job(token_file: str = cv.SERVICE_ACCOUNT_TOKEN) -> dict[str, Any]:
    """The managed collector's <scrape_config> for every node's cAdvisor, its discovery included.

    Why it exists: acceptance step 6 reads a job's network and block I/O series from cAdvisor (platform_cli/
    acceptance_labels.py), which kube-prometheus-stack's kubelet job gives mode in-cluster and the live local cluster;
    a managed collector scrapes only what its configuration names. Labelled as the in-cluster series are: job
    `kubelet`, `node`, and `metrics_path` /metrics/cadvisor (what the chart's kubelet job gives them), so a query
    reads the same series in either mode; `instance` is the API server's address on every target.

    Why it keeps so little: Amazon Managed Service for Prometheus charges per sample ingested and per series stored,
    and cAdvisor serves dozens of families per container (kube-prometheus-stack keeps most of them:
    monitoring_sizing.CADVISOR_SERIES_PER_POD). The job keeps the four byte counters the platform reads
    (cv.CADVISOR_POD_METRICS), drops what the chart's job drops of them (a host-network pod's series on
    the node's CNI interfaces, every series of no pod: CNI_INTERFACE_DROP, NO_POD_DROP), and keeps
    only the labels in CADVISOR_KEPT_LABELS: cAdvisor's `id`, `image` and `name` go, the labels that tell one of a
    pod's series from another (container, interface, device) stay, or two series would become one."""
    return {
        "job_name": cv.KUBELET_JOB,
        "scheme": "https",
        "authorization": {"type": "Bearer", "credentials_file": token_file},
        "kubernetes_sd_configs": [{"role": "node"}],
        "relabel_configs": [
            {"target_label": "__address__", "replacement": API_SERVER_ADDRESS},
            {"source_labels": [META_NODE_NAME], "regex": "(.+)", "target_label": METRICS_PATH_LABEL,
             "replacement": NODE_PROXY_CADVISOR_PATH},
            {"source_labels": [META_NODE_NAME], "target_label": cv.NODE_LABEL},
            {"target_label": METRICS_PATH_TARGET_LABEL, "replacement": CADVISOR_PATH},
        ],
        "metric_relabel_configs": [
            {"source_labels": ["__name__"], "action": "keep", "regex": "|".join(cv.CADVISOR_POD_METRICS)},
            dict(CNI_INTERFACE_DROP),
            dict(NO_POD_DROP),
            {"action": "labelkeep", "regex": "|".join(CADVISOR_KEPT_LABELS)},
        ],
    }
