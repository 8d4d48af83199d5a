"""Observability: the monitoring stack the platform's rules, dashboards and report read, when the stack installs
it (addons.monitoring.mode in-cluster or managed; gpu_platform/plan/monitoring.py decides everything here).

- in-cluster: the kube-prometheus-stack chart (prometheus-community, pinned) in the `monitoring` namespace on the
  system pool. Its Prometheus keeps `retentionDays` on a gp3 volume of the plan's size and selects rules and
  ServiceMonitors by the `release` label the platform's carry (components/monitoring.py, gpu_operator.py); its
  kube-state-metrics exports the platform's label allowlist and the Kueue Workloads' custom resource state; its
  Grafana loads the platform's dashboard ConfigMaps (the sidecar's label) with Prometheus as data source; its
  Alertmanager sends to the spec's receivers. Every key written here exists in the chart's default values
  (kube-prometheus-stack 88.5.3, kube-state-metrics 8.4.0: tests/unit/components/test_observability.py).
- managed: an Amazon Managed Service for Prometheus workspace (retention), its managed collector scraping
  dcgm-exporter, kube-state-metrics, Kueue and the kubelets' cAdvisor through the API server's node proxy
  (plan/monitoring.scrape_configuration), the platform's rule groups
  as a rule groups namespace, an alert manager definition, kube-state-metrics from its own chart, and an IAM
  policy that lets `report --sigv4` read the workspace. The collector's own IAM is AWS's: it runs as the service-
  linked role AWSServiceRoleForAmazonPrometheusScraper, and on a cluster whose authentication mode is API (the
  stack creates its clusters so) the service makes the collector's EKS access entry itself, with the access policy
  that grants it what it scrapes (docs.aws.amazon.com/prometheus/latest/userguide/AMP-collector-how-to.html,
  "Configure Amazon EKS for scraper access with access entries"): a second entry for the same role would be
  refused (EKS CreateAccessEntry: one access entry per principal ARN). That policy ("Access entry policy created")
  grants get, list and watch of nodes, nodes/proxy, nodes/metrics, services, endpoints and pods (among others) and
  get of /metrics: all the collector's jobs need, cAdvisor's `get` of nodes/proxy included (scrape_jobs.
  managed_cadvisor_job), so the platform binds the collector no ClusterRole of its own.

The kube-prometheus-stack release needs the `monitoring` namespace (Monitoring makes it) and the platform's
PrometheusRule and ServiceMonitors need the release's CRDs, so the release is made when the first of those is
registered (`after_stack`, a transformation GpuPlatform gives Monitoring): namespace, release, rules.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
import yaml

from gpu_platform import conventions as cv
from gpu_platform.karpenter import partition
from gpu_platform.plan import Plan
from gpu_platform.plan.monitoring import (
    CHART_REPO, KSM_CHART, KSM_METRIC_LABELS_ALLOWLIST, KSM_WORKLOAD_RBAC,
    KUBE_PROMETHEUS_STACK_CHART, MODE_IN_CLUSTER, MODE_MANAGED, MonitoringPlan, alertmanager_config,
    amp_alert_manager_definition, amp_scraper_alias, amp_workspace_alias, ksm_custom_resource_state,
    metrics_reader_policy_name, scrape_configuration,
)
from gpu_platform.plan.scrape_jobs import source

from . import alerts, dashboards
from .node_pools.cluster import ClusterAccess

# The Prometheus Operator's kinds the platform makes (Monitoring): they wait for the chart that brings their CRDs.
OPERATOR_KINDS: tuple[str, ...] = (
    "kubernetes:monitoring.coreos.com/v1:PrometheusRule",
    "kubernetes:monitoring.coreos.com/v1:ServiceMonitor",
)
# The rule groups namespace the platform's groups are loaded into (one namespace, one file: AMP-Ruler.html).
RULE_NAMESPACE = f"{cv.MANAGED_BY_VALUE}-gpu"
# What `report` needs to read a workspace: the actions of the AWS managed policy AmazonPrometheusQueryAccess
# (docs.aws.amazon.com/aws-managed-policy/latest/reference/AmazonPrometheusQueryAccess.html), on this workspace only.
QUERY_ACTIONS: tuple[str, ...] = ("aps:GetLabels", "aps:GetMetricMetadata", "aps:GetSeries", "aps:QueryMetrics")


def ksm_values(m: MonitoringPlan) -> dict[str, Any]:
    """kube-state-metrics chart values (8.4.0 keys): the allowlist, the Workloads' custom resource state and the
    RBAC to list and watch them, on the system pool; its ServiceMonitor (in-cluster) with the honor_labels of
    kube-state-metrics' scrape job (gpu_platform/plan/scrape_jobs.py, the managed collector's and the live local
    cluster's too)."""
    return {
        "prometheus": {"monitor": {"http": {"honorLabels": source(cv.KSM_JOB, m.namespace).honor_labels}}},
        "metricLabelsAllowlist": list(KSM_METRIC_LABELS_ALLOWLIST),
        "customResourceState": {"enabled": True, "config": ksm_custom_resource_state()},
        "rbac": {"extraRules": [dict(r) for r in KSM_WORKLOAD_RBAC]},
        "nodeSelector": dict(m.node_selector),
    }


def kube_prometheus_stack_values(m: MonitoringPlan, dashboard_label: str, dashboard_label_value: str) -> dict[str, Any]:
    """kube-prometheus-stack chart values (88.5.3 keys). Selectors are written out rather than left to the chart's
    `*SelectorNilUsesHelmValues` (which selects `release: <release name>` too), so what Prometheus selects is the
    label the platform's own objects carry whatever the chart defaults to; the namespace selectors stay `{}` (every
    namespace: the dcgm-exporter ServiceMonitor is in the GPU Operator's)."""
    release = {cv.PROMETHEUS_RELEASE_LABEL: m.prometheus_release}
    on_system = {"nodeSelector": dict(m.node_selector)}
    return {
        "prometheus": {"prometheusSpec": {
            "retention": f"{m.retention_days}d",
            # The storage docs' advice: the retention size at most 85% of the volume (monitoring_sizing).
            "retentionSize": f"{m.retention_size_gib}GiB",
            "storageSpec": {"volumeClaimTemplate": {"spec": {
                "storageClassName": m.storage_class, "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": f"{m.volume_gib}Gi"}}}}},
            "resources": {"requests": {"memory": f"{m.memory_gib}Gi"}, "limits": {"memory": f"{m.memory_gib}Gi"}},
            "ruleSelector": {"matchLabels": release},
            "ruleNamespaceSelector": {},
            "serviceMonitorSelector": {"matchLabels": release},
            "serviceMonitorNamespaceSelector": {},
            **on_system,
        }},
        "alertmanager": {
            "config": alertmanager_config(m.receivers),
            "alertmanagerSpec": {"secrets": list(m.alert_secrets), **on_system},
        },
        "grafana": {"sidecar": {
            "dashboards": {"enabled": True, "label": dashboard_label, "labelValue": dashboard_label_value,
                           "searchNamespace": m.namespace},
            "datasources": {"enabled": True, "defaultDatasourceEnabled": True, "isDefaultDatasource": True},
        }},
        "prometheusOperator": dict(on_system),
        "kube-state-metrics": ksm_values(m),
    }


def workspace_arn(region: str | None, account: str, workspace_id: str) -> str:
    """arn:<partition>:aps:<region>:<account>:workspace/<id> (the form ListScrapers reports a destination in,
    AMP-collector-how-to.html, "Find and delete scrapers")."""
    if not region:
        raise ValueError("the workspace's region is unknown: set aws:region (an eks stack knows its region)")
    return f"arn:{partition(region)}:aps:{region}:{account}:workspace/{workspace_id}"


def reader_policy(workspace_arn: str) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": list(QUERY_ACTIONS), "Resource": workspace_arn}]}


def rule_groups_data(plan: Plan) -> str:
    """The rule groups namespace's data: a Prometheus rule file, the same groups the PrometheusRule holds."""
    return yaml.safe_dump(alerts.rule_file(plan), sort_keys=False)


def alert_manager_definition(m: MonitoringPlan) -> str:
    """`alertmanager_config` is itself a YAML document held as text (AMP-alertmanager-config.html)."""
    doc = amp_alert_manager_definition(m)
    return yaml.safe_dump({"alertmanager_config": yaml.safe_dump(doc["alertmanager_config"], sort_keys=False)},
                          sort_keys=False)


class Observability(pulumi.ComponentResource):
    """The stack's monitoring stack. AWS resources use the default AWS provider; the charts the Kubernetes
    provider of `opts`."""

    def __init__(self, name: str, plan: Plan, cluster: ClusterAccess | None, cluster_arn: pulumi.Input[str] | None,
                 cluster_ready: Sequence[pulumi.Resource] = (), opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:observability:Observability", name, None, opts)
        self.plan = plan
        self.m = m = plan.addons.monitoring
        self.release: k8s.helm.v3.Release | None = None
        self.ksm: k8s.helm.v3.Release | None = None
        self.workspace: aws.amp.Workspace | None = None
        self.scraper: aws.amp.Scraper | None = None
        self.reader: aws.iam.Policy | None = None
        if m.mode == MODE_MANAGED:
            if cluster is None or cluster_arn is None:
                raise ValueError("addons.monitoring.mode managed needs the EKS cluster (cluster.provider eks)")
            self._managed(cluster, cluster_arn, cluster_ready)
        self.register_outputs({})

    # -- in-cluster ------------------------------------------------------------------------------------

    def after_stack(self, args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult | None:
        """Monitoring's transformation: a PrometheusRule or ServiceMonitor waits for the kube-prometheus-stack
        release (made here the first time, after what the object itself waits for: the monitoring namespace)."""
        if self.m.mode != MODE_IN_CLUSTER or args.type_ not in OPERATOR_KINDS:
            return None
        after = args.opts.depends_on if args.opts is not None else None
        self.in_namespace(list(after) if isinstance(after, (list, tuple)) else ([after] if after else []))
        opts = pulumi.ResourceOptions.merge(args.opts or pulumi.ResourceOptions(),
                                            pulumi.ResourceOptions(depends_on=[self.release]))
        return pulumi.ResourceTransformationResult(args.props, opts)

    def in_namespace(self, after: Sequence[Any]) -> None:
        """The charts that go in the monitoring namespace, once it exists (`after`: what makes it)."""
        child = pulumi.ResourceOptions(parent=self, depends_on=[r for r in after if isinstance(r, pulumi.Resource)])
        m = self.m
        if m.mode == MODE_IN_CLUSTER and self.release is None:
            self.values = kube_prometheus_stack_values(m, cv.GRAFANA_DASHBOARD_LABEL, cv.GRAFANA_DASHBOARD_LABEL_VALUE)
            self.release = k8s.helm.v3.Release(
                m.prometheus_release, name=m.prometheus_release, chart=KUBE_PROMETHEUS_STACK_CHART,
                version=m.chart_version, repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=CHART_REPO),
                namespace=m.namespace, create_namespace=False, values=self.values, opts=child)
        if m.mode == MODE_MANAGED and self.ksm is None:
            self.values = ksm_values(m)
            self.ksm = k8s.helm.v3.Release(
                cv.KSM_RELEASE_NAME, name=cv.KSM_RELEASE_NAME, chart=KSM_CHART, version=m.ksm_chart_version,
                repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=CHART_REPO), namespace=m.namespace,
                create_namespace=False, values={**self.values, "fullnameOverride": cv.KSM_RELEASE_NAME}, opts=child)

    # -- managed ---------------------------------------------------------------------------------------

    def _managed(self, cluster: ClusterAccess, cluster_arn: pulumi.Input[str],
                 cluster_ready: Sequence[pulumi.Resource]) -> None:
        m, plan = self.m, self.plan
        tags = plan.platform_tags
        child = pulumi.ResourceOptions(parent=self)
        self.workspace = aws.amp.Workspace("monitoring-workspace", alias=amp_workspace_alias(m.cluster), tags=tags,
                                           opts=child)
        self.workspace_configuration = aws.amp.WorkspaceConfiguration(
            "monitoring-workspace", workspace_id=self.workspace.id, retention_period_in_days=m.retention_days,
            opts=child)
        self.rules = aws.amp.RuleGroupNamespace(
            "monitoring-rules", name=RULE_NAMESPACE, workspace_id=self.workspace.id, data=rule_groups_data(plan),
            tags=tags, opts=child)
        account = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self)).account_id
        self.workspace_arn = pulumi.Output.all(account, self.workspace.id).apply(
            lambda a: workspace_arn(plan.region, a[0], a[1]))
        self.alert_manager = aws.amp.AlertManagerDefinition(
            "monitoring-alert-manager", workspace_id=self.workspace.id, definition=alert_manager_definition(m),
            opts=child)
        self.scraper = aws.amp.Scraper(
            "monitoring-collector", alias=amp_scraper_alias(m.cluster),
            source=aws.amp.ScraperSourceArgs(eks=aws.amp.ScraperSourceEksArgs(
                cluster_arn=cluster_arn, subnet_ids=list(cluster.subnet_ids),
                # the cluster security group, which the nodes' interfaces carry: the collector reaches the pods
                security_group_ids=[cluster.security_group_id])),
            destination=aws.amp.ScraperDestinationArgs(amp=aws.amp.ScraperDestinationAmpArgs(
                workspace_arn=self.workspace_arn)),
            scrape_configuration=yaml.safe_dump(scrape_configuration(m), sort_keys=False), tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(cluster_ready)))
        self.reader = aws.iam.Policy(
            "monitoring-reader", name=metrics_reader_policy_name(m.cluster),
            description=f"read the {m.cluster} metrics workspace (python -m platform_cli report --sigv4)",
            policy=self.workspace_arn.apply(lambda arn: json.dumps(reader_policy(arn), sort_keys=True)),
            tags=tags, opts=child)

    def exports(self) -> dict[str, Any]:
        m = self.m
        out: dict[str, Any] = {"mode": m.mode, "dashboards": [d.uid for d in dashboards.dashboards(self.plan)]}
        if m.mode == MODE_IN_CLUSTER:
            out |= {"release": m.prometheus_release, "chartVersion": m.chart_version, "volumeGiB": m.volume_gib,
                    "memoryGiB": m.memory_gib, "retentionDays": m.retention_days}
        if self.workspace is not None and self.reader is not None:
            out |= {"workspaceQueryUrl": self.workspace.prometheus_endpoint, "readerPolicyArn": self.reader.arn,
                    "retentionDays": m.retention_days}
        return {"observability": out}
