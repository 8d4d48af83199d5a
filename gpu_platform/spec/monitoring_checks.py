"""The observability layer's cross-field checks: what `addons.monitoring` can only be told against the rest of
the spec (the cluster's provider and subnets, the EBS driver the in-cluster volume needs) and its receivers
against its mode. Each problem names the field to change and the values that would work."""

from __future__ import annotations

from ..errors import Problem
from .monitoring import AMP_MAX_RETENTION_DAYS, MONITORING_MODES, SECRET_RECEIVER_TYPES, SNS_RECEIVER_TYPES
from .platform import Platform

AT = "addons.monitoring"
# Helm refuses a release name longer than 53 characters (helm/helm pkg/chartutil/validate_name.go,
# maxReleaseNameLen): in-cluster, prometheusRelease is the kube-prometheus-stack release's name.
HELM_RELEASE_NAME_MAX = 53
# The managed collector's network interfaces go in at least two subnets of two availability zones
# (docs.aws.amazon.com/prometheus/latest/userguide/AMP-collector-how-to.html, "Create a scraper": "You must
# include at least two subnets, in at least two availability zones").
AMP_SCRAPER_MIN_SUBNETS = 2
# Receiver types each mode can deliver to (spec/monitoring.py says why).
RECEIVER_TYPES_BY_MODE: dict[str, tuple[str, ...]] = {
    "external": (),
    "in-cluster": SECRET_RECEIVER_TYPES,
    "managed": SNS_RECEIVER_TYPES,
}


def check_monitoring(p: Platform) -> list[Problem]:
    m = p.addons.monitoring
    out: list[Problem] = []
    if not m.install:
        if m.mode != "external":
            out.append(Problem(f"{AT}.mode", f"mode {m.mode!r} installs a monitoring stack, and install is false: set "
                                             "install true, or leave mode unset (external)"))
        return out
    if m.mode == "managed" and p.cluster.provider != "eks":
        valid = [x for x in MONITORING_MODES if x != "managed"]
        out.append(Problem(f"{AT}.mode", f"mode 'managed' needs cluster.provider 'eks': the managed collector scrapes an "
                                         f"EKS cluster by its ARN; valid with provider {p.cluster.provider!r}: "
                                         f"{', '.join(valid)}"))
    if (m.mode == "managed" and p.cluster.provider == "eks" and p.cluster.vpc is None
            and len(p.cluster.subnetIds) < AMP_SCRAPER_MIN_SUBNETS):
        out.append(Problem("cluster.subnetIds", f"mode 'managed': the managed collector needs at least "
                                                f"{AMP_SCRAPER_MIN_SUBNETS} subnets in two availability zones, got "
                                                f"{len(p.cluster.subnetIds)}"))
    if m.mode == "managed" and m.retentionDays > AMP_MAX_RETENTION_DAYS:
        out.append(Problem(f"{AT}.retentionDays", f"{m.retentionDays} days: an Amazon Managed Service for Prometheus "
                                                  f"workspace keeps metrics at most {AMP_MAX_RETENTION_DAYS} days"))
    if m.mode == "in-cluster" and p.cluster.provider == "eks" and not p.data.ebsCsi.manage:
        out.append(Problem("data.ebsCsi.manage", "mode 'in-cluster' keeps Prometheus' data on a gp3 volume, which "
                                                 "the stack's EBS CSI add-on and gp3 StorageClass provide: set it true, "
                                                 f"or set {AT}.mode to managed or external"))
    if m.mode == "in-cluster" and len(m.prometheusRelease) > HELM_RELEASE_NAME_MAX:
        out.append(Problem(f"{AT}.prometheusRelease", f"mode 'in-cluster' names the kube-prometheus-stack release "
                                                      f"after it, and Helm allows at most {HELM_RELEASE_NAME_MAX} "
                                                      f"characters (got {len(m.prometheusRelease)})"))
    for field in ("volumeGiB", "memoryGiB"):
        if getattr(m, field) is not None and m.mode != "in-cluster":
            out.append(Problem(f"{AT}.{field}", f"only mode 'in-cluster' runs a Prometheus the stack sizes; mode "
                                                f"{m.mode!r} has none (remove {field} or set mode in-cluster)"))
    allowed = RECEIVER_TYPES_BY_MODE[m.mode]
    seen: set[str] = set()
    for i, r in enumerate(m.receivers):
        if r.type not in allowed:
            why = {"external": "mode 'external' configures no Alertmanager (receivers go in the one you run)",
                   "in-cluster": "the in-cluster Alertmanager has no AWS credentials to publish to SNS",
                   "managed": "Amazon Managed Service for Prometheus delivers alerts only to Amazon SNS"}[m.mode]
            out.append(Problem(f"{AT}.receivers[{i}].type", f"{r.type!r} cannot be used with mode {m.mode!r}: {why}; "
                                                            f"valid: {', '.join(allowed) or 'none'}"))
        if r.name in seen or r.name == NULL_RECEIVER:
            out.append(Problem(f"{AT}.receivers[{i}].name", f"duplicate receiver {r.name!r}"
                               + (f" ({NULL_RECEIVER!r} is the receiver of unrouted alerts)" if r.name == NULL_RECEIVER else "")))
        seen.add(r.name)
    return out


# The receiver of alerts no receiver's severities match (kube-prometheus-stack's default config names it so).
NULL_RECEIVER = "null"
