"""`addons.monitoring`: the observability layer, in one of three modes, and where its alerts go.

- `external` (the default, and the platform's behaviour before the modes): the platform makes its
  PrometheusRule, ServiceMonitors and dashboard ConfigMaps for a Prometheus Operator someone else installed
  and configured as docs/gpu-operator-and-monitoring.md ("What the monitoring stack needs") says.
- `in-cluster`: the stack installs that Prometheus Operator itself: the kube-prometheus-stack chart on the
  system pool, configured to read what the report, the alerts and the dashboards read.
- `managed`: Amazon Managed Service for Prometheus: a workspace, its managed collector, the rule groups and
  an alert manager definition, and kube-state-metrics in the cluster.

What only the whole spec can tell (the cluster's provider and subnets, the EBS driver a volume needs) is checked
in monitoring_checks.py; a receiver's own shape is checked here.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from .fields import Strict, dns_label, exact_version

MonitoringMode = Literal["external", "in-cluster", "managed"]
MONITORING_MODES: tuple[str, ...] = ("external", "in-cluster", "managed")
ReceiverType = Literal["slack", "webhook", "pagerduty", "sns"]
RECEIVER_TYPES: tuple[str, ...] = ("slack", "webhook", "pagerduty", "sns")
# The types that read their URL or key from a Secret mounted into Alertmanager (prometheus/alertmanager
# config/notifiers.go: SlackConfig api_url_file, WebhookConfig url_file, PagerdutyConfig routing_key_file),
# and the one Amazon Managed Service for Prometheus accepts ("The only alert receiver currently supported in
# Amazon Managed Service for Prometheus is Amazon SNS", docs.aws.amazon.com/prometheus/latest/userguide/
# AMP-alertmanager-receiver.html).
SECRET_RECEIVER_TYPES: tuple[str, ...] = ("slack", "webhook", "pagerduty")
SNS_RECEIVER_TYPES: tuple[str, ...] = ("sns",)
Severity = Literal["critical", "warning", "info"]
SNS_TOPIC_ARN = re.compile(r"^arn:aws(?:-cn|-us-gov)?:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$")
# A Secret key: alphanumerics, '-', '_' and '.' (Kubernetes IsConfigMapKey).
SECRET_KEY = re.compile(r"^[-._a-zA-Z0-9]{1,253}$")
# kube-prometheus-stack 88.5.3 and the kube-state-metrics chart it depends on (8.4.0): the versions whose default
# values the chart values are checked against (tests/reference_data.py).
KUBE_PROMETHEUS_STACK_VERSION = "88.5.3"
KUBE_STATE_METRICS_VERSION = "8.4.0"
# Amazon Managed Service for Prometheus keeps metrics 150 days unless told otherwise, up to 1095 days
# (docs.aws.amazon.com/prometheus/latest/userguide/AMP-ingest-methods.html, "Metrics ingested into a workspace
# are stored for 150 days by default ... up to a maximum of 1095 days").
AMP_MAX_RETENTION_DAYS = 1095


class SecretKeyRef(Strict):
    """A key of a Secret in the monitoring namespace: Alertmanager mounts the Secret and reads the key's file,
    so the URL or routing key never enters the stack's config or state."""

    name: str = Field(description="the Secret's name, in the `monitoring` namespace", examples=["alert-slack"])
    key: str = Field(description="the key holding the webhook URL or routing key", examples=["url"])

    _name = field_validator("name")(lambda v: dns_label(v))

    @field_validator("key")
    @classmethod
    def _key(cls, v: str) -> str:
        if not SECRET_KEY.match(v):
            raise ValueError(f"{v!r} is not a Secret key: letters, digits, '-', '_' and '.', at most 253")
        return v


class AlertReceiver(Strict):
    """Where alerts of the chosen severities go: Slack, a webhook or PagerDuty from the in-cluster Alertmanager
    (the URL or routing key from a Secret), an SNS topic from the managed workspace's alert manager."""

    name: str = Field(description="the receiver's name in the Alertmanager configuration", examples=["gpu-oncall"])
    type: ReceiverType = Field(
        description="slack | webhook | pagerduty (mode in-cluster), sns (mode managed)", examples=["slack"])
    secret: SecretKeyRef | None = Field(
        default=None,
        description="slack, webhook, pagerduty: the Secret key holding the Slack webhook URL, the webhook URL or "
                    "the PagerDuty routing key",
        examples=[{"name": "alert-slack", "key": "url"}],
    )
    topicArn: str | None = Field(
        default=None, description="sns: the topic's ARN (the workspace's region)",
        examples=["arn:aws:sns:us-east-1:123456789012:gpu-alerts"])
    channel: str | None = Field(default=None, description="slack: the channel, when the webhook has none",
                                examples=["#gpu-alerts"])
    severities: list[Severity] = Field(
        default_factory=lambda: ["critical", "warning"],
        description="the alert severities this receiver gets (every platform alert has one)",
        examples=[["critical"]],
    )

    _name = field_validator("name")(lambda v: dns_label(v))

    @model_validator(mode="after")
    def _shape(self) -> "AlertReceiver":
        if self.type in SECRET_RECEIVER_TYPES:
            if self.secret is None:
                raise ValueError(f"type {self.type!r} needs secret: {{name, key}} of the Secret holding its "
                                 + ("routing key" if self.type == "pagerduty" else "URL"))
            if self.topicArn is not None:
                raise ValueError(f"topicArn is only for type 'sns', not {self.type!r}")
        else:
            if self.topicArn is None or not SNS_TOPIC_ARN.match(self.topicArn):
                raise ValueError(f"type 'sns' needs topicArn: an SNS topic ARN (arn:aws:sns:<region>:<account>:<name>), "
                                 f"got {self.topicArn!r}")
            if self.secret is not None:
                raise ValueError("type 'sns' takes topicArn, not secret")
        if self.channel is not None and self.type != "slack":
            raise ValueError(f"channel is only for type 'slack', not {self.type!r}")
        if not self.severities:
            raise ValueError("severities is empty: the receiver would get nothing; valid: critical, warning, info")
        return self


class AddonMonitoring(Strict):
    install: bool = Field(
        default=True,
        description="ServiceMonitors, PrometheusRules and dashboards (and, in modes in-cluster and managed, the "
                    "monitoring stack itself)",
        examples=[True],
    )
    # Prometheus Operator's serviceMonitorSelector label value, so our monitors are picked up.
    prometheusRelease: str = Field(
        default="kube-prometheus-stack",
        description="the `release` label value your Prometheus selects monitors and rules by (mode in-cluster: "
                    "the name of the kube-prometheus-stack release the stack installs)",
        examples=["kube-prometheus-stack"],
    )
    mode: MonitoringMode = Field(
        default="external",
        description=(
            "external: a Prometheus Operator installed by someone else (docs/gpu-operator-and-monitoring.md, What "
            "the monitoring stack needs); in-cluster: the stack installs kube-prometheus-stack on the system pool; "
            "managed: an Amazon Managed Service for Prometheus workspace with its managed collector (eks only)"
        ),
        examples=["in-cluster"],
    )
    version: str = Field(
        default=KUBE_PROMETHEUS_STACK_VERSION,
        description="in-cluster: exact kube-prometheus-stack chart version",
        examples=[KUBE_PROMETHEUS_STACK_VERSION],
    )
    kubeStateMetricsVersion: str = Field(
        default=KUBE_STATE_METRICS_VERSION,
        description="managed: exact kube-state-metrics chart version (the one kube-prometheus-stack ships in-cluster)",
        examples=[KUBE_STATE_METRICS_VERSION],
    )
    retentionDays: int = Field(
        default=15,
        ge=1,
        description="days of metrics kept (in-cluster: Prometheus' retention, which sizes its volume; managed: the "
                    f"workspace's, at most {AMP_MAX_RETENTION_DAYS})",
        examples=[15],
    )
    volumeGiB: int | None = Field(
        default=None,
        ge=1,
        description="in-cluster: Prometheus' gp3 volume; unset, sized from the fleet (`plan` prints the estimate "
                    "and warns when a size set here is short)",
        examples=[500],
    )
    memoryGiB: int | None = Field(
        default=None,
        ge=1,
        description="in-cluster: Prometheus' memory request and limit; unset, sized from the fleet's active series",
        examples=[64],
    )
    receivers: list[AlertReceiver] = Field(
        default_factory=list,
        description="in-cluster and managed: where the alerts go (none: they are only on the Alertmanager's page "
                    "or the workspace's alert manager)",
        examples=[[{"name": "gpu-oncall", "type": "pagerduty", "secret": {"name": "pagerduty", "key": "routingKey"},
                    "severities": ["critical"]}]],
    )

    _versions = field_validator("version", "kubeStateMetricsVersion")(lambda v: exact_version(v))
