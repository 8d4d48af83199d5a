"""The observability layer's plan: which monitoring stack the stack runs (addons.monitoring.mode), and everything
the components translate for it, decided once here.

- What kube-state-metrics must export for the rules and the report: the platform's label allowlist (the node
  pool label, the pods' team and queue labels) and the custom resource state of Kueue's Workloads
  (gpu_platform/useful_work.KSM_WORKLOAD_CONDITIONS, the one definition the live cluster's telemetry emulates).
- What the in-cluster Prometheus keeps and how big it is (retention, gp3 volume, memory: monitoring_sizing.py),
  which rules and monitors it selects (the `release` label the platform's own carry), where it runs.
- What the managed collector scrapes (`scrape_configuration`): the three sources the report and the rules
  read, labelled as kube-prometheus-stack's ServiceMonitors would label them, and the kubelets' cAdvisor for the
  per-pod network and block I/O series acceptance step 6 reads.
- Where alerts go (`alertmanager_config`): the spec's receivers, by severity.

The scrape jobs, the Services they find and the metric names the report reads are spelled in
gpu_platform/conventions/monitoring.py; the jobs themselves are built in scrape_jobs.py, for this collector, the
ServiceMonitors and the live local cluster alike. Spelled here for now: the AMP names (amp_workspace_alias,
amp_scraper_alias, metrics_reader_policy_name), NULL_RECEIVER and ALERTMANAGER_SECRETS_DIR.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from .. import catalog, conventions as cv, useful_work as uw
from ..errors import SpecError
from ..pool_derivations import pool_resource_name, pool_units_per_gpu
from ..spec import Platform
from ..spec.monitoring import AlertReceiver
from ..spec.monitoring_checks import NULL_RECEIVER, check_monitoring
from .scrape_jobs import kubernetes_discovery, managed_cadvisor_job, prometheus_job, scrape_sources
from .monitoring_sizing import (
    RETENTION_SHARE_OF_VOLUME, SCRAPE_INTERVAL_SECONDS, TARGET_FLEET_NODES, Fleet, MonitoringSize, PoolShape, QueueShape, estimate, shortfalls,
)

MODE_EXTERNAL, MODE_IN_CLUSTER, MODE_MANAGED = "external", "in-cluster", "managed"

# kube-prometheus-stack and kube-state-metrics: the Helm repository both charts come from (prometheus-community
# helm-charts, charts/kube-prometheus-stack and charts/kube-state-metrics).
CHART_REPO = "https://prometheus-community.github.io/helm-charts"
KUBE_PROMETHEUS_STACK_CHART = "kube-prometheus-stack"
KSM_CHART = "kube-state-metrics"

# kube-state-metrics' --metric-labels-allowlist (kube-prometheus-stack value kube-state-metrics.metricLabelsAllowlist):
# the node pool label the rules join GPU series on (gpu_platform:node_pool:info), and the pod labels that attribute a
# GPU to a team and a queue (gpu_platform:pod_attribution:info). The rules (components/alerts/sources.py) read
# it from here; the report's --check and GpuNodePoolLabelMissing name it.
KSM_METRIC_LABELS_ALLOWLIST: tuple[str, ...] = (
    f"nodes=[{cv.POOL}]",
    f"pods=[{','.join(cv.GPU_METRIC_POD_LABELS)}]",
)
# kube-state-metrics lists and watches the Workloads its custom resource state reads (the chart grants only the
# built-in kinds: kube-state-metrics 8.4.0 values.yaml, rbac.extraRules "Add permissions for CustomResources'
# apiGroups ... in conjunction with Custom Resource State Metrics configuration").
KSM_WORKLOAD_RBAC: tuple[Mapping[str, Any], ...] = (
    {"apiGroups": [uw.KUEUE_WORKLOAD_GVK["group"]], "resources": ["workloads"], "verbs": ["list", "watch"]},
)

# Where Alertmanager finds the Secrets it is given (kube-prometheus-stack 88.5.3 values.yaml,
# alertmanager.alertmanagerSpec.secrets: "mounted into /etc/alertmanager/secrets/").
ALERTMANAGER_SECRETS_DIR = "/etc/alertmanager/secrets"
# Alertmanager's grouping: the platform's alerts speak in teams and pools (components/alerts/).
ALERT_GROUP_BY: tuple[str, ...] = ("alertname", "team", "pool")

# Memory of the system pool's general purpose sizes (m6i, m7i, m7a: 4 GiB per vCPU; docs.aws.amazon.com/ec2/latest/
# instancetypes/gp.html, "Instance specifications"), to warn when Prometheus' memory cannot fit on a system node.
SYSTEM_NODE_MEMORY_GIB: Mapping[str, int] = {"large": 8, "xlarge": 16, "2xlarge": 32, "4xlarge": 64}


def amp_workspace_alias(cluster: str) -> str:
    return f"{cluster}-metrics"


def amp_scraper_alias(cluster: str) -> str:
    return f"{cluster}-collector"


def metrics_reader_policy_name(cluster: str) -> str:
    return f"{cluster}-metrics-reader"


@dataclass(frozen=True, slots=True)
class ReceiverPlan:
    name: str
    type: str
    severities: tuple[str, ...]
    secret_name: str | None = None
    secret_key: str | None = None
    topic_arn: str | None = None
    channel: str | None = None

    @property
    def secret_file(self) -> str | None:
        return None if self.secret_name is None else f"{ALERTMANAGER_SECRETS_DIR}/{self.secret_name}/{self.secret_key}"

    def config(self) -> dict[str, Any]:
        """The receiver as Alertmanager's configuration spells it (prometheus/alertmanager config/notifiers.go:
        slack_configs api_url_file, webhook_configs url_file, pagerduty_configs routing_key_file; sns_configs
        topic_arn with the sigv4 region Amazon Managed Service for Prometheus requires, AMP-alertmanager-receiver-
        config.html: "SigV4 settings are required to have a Region property")."""
        if self.type == "slack":
            slack: dict[str, Any] = {"api_url_file": self.secret_file, "send_resolved": True}
            if self.channel:
                slack["channel"] = self.channel
            return {"name": self.name, "slack_configs": [slack]}
        if self.type == "webhook":
            return {"name": self.name, "webhook_configs": [{"url_file": self.secret_file, "send_resolved": True}]}
        if self.type == "pagerduty":
            return {"name": self.name, "pagerduty_configs": [{"routing_key_file": self.secret_file,
                                                              "send_resolved": True}]}
        region = (self.topic_arn or "").split(":")[3]
        return {"name": self.name, "sns_configs": [{"topic_arn": self.topic_arn, "sigv4": {"region": region},
                                                    "send_resolved": True}]}


@dataclass(frozen=True, slots=True)
class MonitoringSizing:
    """The estimate at the stack's capacity.max and at TARGET_FLEET_NODES nodes of the same pool mix."""

    stack: MonitoringSize
    target: MonitoringSize


@dataclass(frozen=True, slots=True)
class MonitoringPlan:
    # The Prometheus Operator's objects are made (the PrometheusRule, the Kueue ServiceMonitor, dcgm-exporter's
    # ServiceMonitor): modes external and in-cluster. A managed workspace has no operator: its rules are a rule
    # groups namespace and the collector scrapes what the ServiceMonitors would select.
    install: bool
    # The `release` label value the platform's rules and monitors carry, and the Prometheus selects them by.
    prometheus_release: str
    mode: str = MODE_EXTERNAL
    # addons.monitoring.install as written: the layer is wanted at all.
    enabled: bool = True
    chart_version: str = ""
    ksm_chart_version: str = ""
    namespace: str = cv.MONITORING_NAMESPACE
    retention_days: int = 15
    # Prometheus' volume and memory (in-cluster): the spec's, else the estimate's at capacity.max.
    volume_gib: int = 0
    memory_gib: int = 0
    volume_sized: bool = True
    memory_sized: bool = True
    storage_class: str = cv.DEFAULT_STORAGE_CLASS
    # The untainted system nodes when the cluster has a system pool (every GPU node is tainted either way).
    node_selector: Mapping[str, str] = field(default_factory=dict)
    receivers: tuple[ReceiverPlan, ...] = ()
    cluster: str = ""
    sizing: MonitoringSizing | None = None
    warnings: tuple[str, ...] = ()

    @property
    def installs_stack(self) -> bool:
        """The stack installs the monitoring stack itself (in-cluster or managed)."""
        return self.enabled and self.mode in (MODE_IN_CLUSTER, MODE_MANAGED)

    @property
    def retention_size_gib(self) -> int:
        """Prometheus deletes the oldest blocks past this, before the volume fills (monitoring_sizing)."""
        return math.floor(self.volume_gib * RETENTION_SHARE_OF_VOLUME)

    @property
    def alert_secrets(self) -> tuple[str, ...]:
        return tuple(sorted({r.secret_name for r in self.receivers if r.secret_name}))


def ksm_custom_resource_state() -> dict[str, Any]:
    """kube-state-metrics' --custom-resource-state-config: the Workloads' conditions the report reads."""
    return uw.KSM_WORKLOAD_CONDITIONS


def alertmanager_config(receivers: tuple[ReceiverPlan, ...]) -> dict[str, Any]:
    """Route each alert to every receiver whose severities include its `severity` (continue: several may), the rest
    to NULL_RECEIVER (no integration: shown, not sent)."""
    routes = [{"receiver": r.name, "matchers": [f'severity=~"{"|".join(r.severities)}"'], "continue": True}
              for r in receivers]
    return {
        "route": {"receiver": NULL_RECEIVER, "group_by": list(ALERT_GROUP_BY), "routes": routes},
        "receivers": [{"name": NULL_RECEIVER}, *(r.config() for r in receivers)],
    }


def scrape_configuration(m: MonitoringPlan) -> dict[str, Any]:
    """The managed collector's Prometheus configuration: the jobs kube-prometheus-stack's ServiceMonitors would make
    (scrape_jobs.py: the same jobs the live local cluster's Prometheus runs), found by Kubernetes endpoints discovery,
    every 30 s. A managed collector takes <global>, <scrape_config>, <relabel_config>, <metric_relabel_configs> and
    <kubernetes_sd_config> sections, and sends only its own ServiceAccount token, from cv.SERVICE_ACCOUNT_TOKEN (AMP
    user guide, AMP-collector-how-to.html, "Scraper configuration"; the pulumi-aws Scraper example scrapes cAdvisor
    so).
    tls_config is a field the managed collectors take ("TLS configuration for HTTPS targets", docs.aws.amazon.com/
    AmazonCloudWatch/latest/monitoring/managed-prometheus-collectors-scraper-configuration.html, "Supported
    configuration sections"): Kueue's job uses it to accept Kueue's self-signed certificate, which no CA the
    collector could be given has signed (scrape_jobs.ScrapeSource.https_unverified). Then every node's cAdvisor through
    the API server, its per-pod network and block I/O byte counters only (scrape_jobs.managed_cadvisor_job): the
    series kube-prometheus-stack's kubelet job gives mode in-cluster and acceptance step 6 reads."""
    jobs = [{**prometheus_job(src), **kubernetes_discovery(src)} for src in scrape_sources(m.namespace)]
    jobs.append(managed_cadvisor_job())
    return {"global": {"scrape_interval": f"{SCRAPE_INTERVAL_SECONDS}s"}, "scrape_configs": jobs}


def amp_alert_manager_definition(m: MonitoringPlan) -> dict[str, Any]:
    """The workspace's alert manager definition: `alertmanager_config` holds Alertmanager's configuration as text
    (AMP-alertmanager-config.html: template_files and alertmanager_config)."""
    return {"alertmanager_config": alertmanager_config(m.receivers)}


# ---------------------------------------------------------------------------------------------------
# The fleet as the estimate sees it


def fleet(spec: Platform) -> Fleet:
    pools = tuple(PoolShape(nodes=p.capacity.max, gpus_per_node=catalog.INSTANCE_TYPES[p.instanceType].gpus,
                            units_per_gpu=pool_units_per_gpu(p), vcpus=catalog.INSTANCE_TYPES[p.instanceType].vcpus)
                  for p in spec.pools)
    by_name = {p.name: p for p in spec.pools}
    all_priorities = len(spec.priorities)
    queues = []
    for t in spec.teams:
        gpu_resources = {pool_resource_name(by_name[pool]) for pool in t.quotas if pool in by_name}
        queues.append(QueueShape(
            # its quotas' flavors and the CPU-only one; cpu and memory and its pools' GPU resources
            # (components/queues/objects.resource_groups)
            flavors=len(t.quotas) + 1, resources=2 + len(gpu_resources), namespaces=len(t.namespace_names),
            # the team's priorities (all when it names none) and no priority class
            priority_classes=(len(t.priorities) if t.priorities is not None else all_priorities) + 1,
            quotas=len(t.quotas)))
    return Fleet(pools=pools, queues=tuple(queues), pool_count=len(spec.pools))


def _warnings(spec: Platform, m: MonitoringPlan) -> list[str]:
    out: list[str] = []
    if m.sizing is None:
        return out
    if m.mode == MODE_IN_CLUSTER:
        out += shortfalls(m.sizing.stack, None if m.volume_sized else m.volume_gib,
                          None if m.memory_sized else m.memory_gib)
        sp = spec.cluster.systemPool
        if sp is not None:
            node = SYSTEM_NODE_MEMORY_GIB.get(sp.instanceType.split(".")[-1])
            if node is not None and m.memory_gib >= node:
                out.append(f"addons.monitoring: Prometheus needs {m.memory_gib} GiB of memory and a system node "
                           f"({sp.instanceType}) has {node} GiB: it cannot be scheduled; raise "
                           "cluster.systemPool.instanceType")
    if m.mode == MODE_MANAGED:
        if not spec.cluster.create:  # a created cluster has its private endpoint on (ClusterPlan)
            out.append("addons.monitoring.mode managed: the attached cluster must use authentication mode API or "
                       "API_AND_CONFIG_MAP (the collector's access entry is made by the service) and have private "
                       "endpoint access on")
    return out


def plan_monitoring(spec: Platform) -> MonitoringPlan:
    """The monitoring plan. Refuses (SpecError) a spec whose monitoring settings cannot work, whichever caller
    built it: the checks also run with the spec's own (gpu_platform/spec/monitoring_checks.py)."""
    problems = check_monitoring(spec)
    if problems:
        raise SpecError(problems)
    a = spec.addons.monitoring
    sp = spec.cluster.systemPool
    in_cluster, managed = a.mode == MODE_IN_CLUSTER, a.mode == MODE_MANAGED
    shape = fleet(spec)
    sizing = MonitoringSizing(stack=estimate(shape, a.retentionDays, in_cluster, managed=managed),
                              target=estimate(shape, a.retentionDays, in_cluster, TARGET_FLEET_NODES, managed=managed))
    m = MonitoringPlan(
        install=a.install and not managed,
        prometheus_release=a.prometheusRelease,
        mode=a.mode,
        enabled=a.install,
        chart_version=a.version,
        ksm_chart_version=a.kubeStateMetricsVersion,
        retention_days=a.retentionDays,
        volume_gib=a.volumeGiB if a.volumeGiB is not None else sizing.stack.volume_gib,
        memory_gib=a.memoryGiB if a.memoryGiB is not None else sizing.stack.memory_gib,
        volume_sized=a.volumeGiB is None,
        memory_sized=a.memoryGiB is None,
        node_selector={cv.NODE_ROLE: cv.SYSTEM_NODE_ROLE} if sp is not None else {},
        receivers=tuple(_receiver(r) for r in a.receivers),
        cluster=spec.cluster.name,
        sizing=sizing if a.install else None,
    )
    return m if not a.install or a.mode == MODE_EXTERNAL else replace(m, warnings=tuple(_warnings(spec, m)))


def _receiver(r: AlertReceiver) -> ReceiverPlan:
    return ReceiverPlan(name=r.name, type=r.type, severities=tuple(r.severities),
                        secret_name=r.secret.name if r.secret else None, secret_key=r.secret.key if r.secret else None,
                        topic_arn=r.topicArn, channel=r.channel)
