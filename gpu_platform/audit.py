"""What the control plane records: one place for the EKS log types and the local API server's audit policy.

The checklist asks for an audit trail of job submission, secret access, exec/attach and admin
operations. On EKS the API server's audit policy is AWS's own; the stack decides which control-plane log
types reach CloudWatch Logs (`audit` for the API requests, `authenticator` to tie a Kubernetes user name
to the IAM identity behind it). On the live local cluster the API server is ours, so it gets a policy that
records exactly those four kinds of request, each with the user, groups, verb, namespace and object (the
audit.k8s.io/v1 Event fields), and nothing else.
"""

from __future__ import annotations

from typing import Any, Literal, Sequence

from . import conventions as cv

# EKS control-plane log types (EKS user guide, "Send control plane logs to CloudWatch Logs",
# https://docs.aws.amazon.com/eks/latest/userguide/control-plane-logs.html; CloudFormation
# AWS::EKS::Cluster LoggingTypeConfig: api | audit | authenticator | controllerManager | scheduler).
EksLogType = Literal["api", "audit", "authenticator", "controllerManager", "scheduler"]
# Always on: `audit` is the Kubernetes audit log (who did what to which object); `authenticator` maps the
# user name in it to the IAM role session that signed in. The other three are diagnostics.
REQUIRED_EKS_LOG_TYPES: tuple[str, ...] = ("audit", "authenticator")
DEFAULT_EKS_LOG_TYPES: tuple[str, ...] = REQUIRED_EKS_LOG_TYPES

AUDIT_API_VERSION = "audit.k8s.io/v1"
# Subresources that run something inside a pod or reach it directly.
POD_ACCESS_SUBRESOURCES: tuple[str, ...] = (
    "pods/exec", "pods/attach", "pods/portforward", "pods/proxy", "pods/ephemeralcontainers",
)
WRITE_VERBS: tuple[str, ...] = ("create", "update", "patch", "delete", "deletecollection")
# Admin operations: who may do what (RBAC), what is admitted (admission configuration, CRDs), what a
# team gets (namespaces, quotas, limits, network policy, priorities) and the queues (every Kueue kind but
# the Workloads Kueue itself writes).
ADMIN_RESOURCES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("rbac.authorization.k8s.io", ()),
    ("admissionregistration.k8s.io", ()),
    ("apiextensions.k8s.io", ()),
    ("certificates.k8s.io", ("certificatesigningrequests",)),
    ("", ("namespaces", "resourcequotas", "limitranges", "serviceaccounts", "nodes")),
    ("networking.k8s.io", ("networkpolicies",)),
    ("scheduling.k8s.io", ("priorityclasses",)),
    ("kueue.x-k8s.io", ("clusterqueues", "localqueues", "resourceflavors", "cohorts", "topologies",
                        "workloadpriorityclasses", "admissionchecks", "multikueueclusters", "multikueueconfigs")),
)


def workload_resources(integrations: Sequence[str]) -> list[tuple[str, list[str]]]:
    """(API group, resources) of every kind a team submits work as: batch Jobs and CronJobs, Pods, and the
    workload kinds of the stack's Kueue integrations (conventions.KUEUE_INTEGRATION_APIS)."""
    by_group: dict[str, list[str]] = {}
    for name in ("batch/job", "pod", *integrations):
        for group, _version, plural, _kind in cv.KUEUE_INTEGRATION_APIS.get(name, ()):
            plurals = by_group.setdefault(group, [])
            if plural not in plurals:
                plurals.append(plural)
    return [(g, sorted(p)) for g, p in sorted(by_group.items())]


def _group(group: str, resources: Sequence[str] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {"group": group}
    if resources:
        out["resources"] = list(resources)
    return out


def audit_policy(integrations: Sequence[str]) -> dict[str, Any]:
    """An audit.k8s.io/v1 Policy recording job submission, secret access, exec/attach and admin operations.

    Rules are matched in order, first match wins (kubernetes.io/docs/tasks/debug/debug-cluster/audit,
    "Audit policy"). Secrets stay at Metadata: Request or RequestResponse would write their data into the
    log. A submitted workload is recorded with its body (Request), so the log shows what ran and from which
    image; later changes at Metadata. Requests are audited whether or not they were allowed, so a denied
    read carries its 403 in responseStatus. Everything else is not recorded."""
    resource_stage = ["RequestReceived"]
    workloads = lambda: [_group(g, r) for g, r in workload_resources(integrations)]  # noqa: E731 (no shared YAML anchors)
    return {
        "apiVersion": AUDIT_API_VERSION,
        "kind": "Policy",
        "omitStages": resource_stage,
        "rules": [
            {"level": "Metadata", "resources": [_group("", ["secrets"])]},
            {"level": "Metadata", "resources": [_group("", POD_ACCESS_SUBRESOURCES)]},
            {"level": "Request", "verbs": ["create"], "resources": workloads()},
            {"level": "Metadata", "verbs": ["update", "patch", "delete", "deletecollection"], "resources": workloads()},
            {"level": "Request", "verbs": list(WRITE_VERBS),
             "resources": [_group(g, r) for g, r in ADMIN_RESOURCES]},
            {"level": "None"},
        ],
    }
