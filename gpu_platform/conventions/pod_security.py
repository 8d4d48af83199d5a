"""Pod Security admission: its label keys and levels, and the labels a namespace gets (pinned to a version)."""

from __future__ import annotations


# ==== Pod Security admission ================================================================================
PSA_ENFORCE = "pod-security.kubernetes.io/enforce"
PSA_ENFORCE_VERSION = "pod-security.kubernetes.io/enforce-version"
PSA_WARN = "pod-security.kubernetes.io/warn"
PSA_WARN_VERSION = "pod-security.kubernetes.io/warn-version"
PSA_AUDIT = "pod-security.kubernetes.io/audit"
PSA_AUDIT_VERSION = "pod-security.kubernetes.io/audit-version"
PSA_LEVELS: tuple[str, ...] = ("privileged", "baseline", "restricted")
TENANT_PSA_LEVELS: tuple[str, ...] = ("baseline", "restricted")
# Pod Security level that warns and audits in every tenant namespace, whatever the enforced level.
PSA_RESTRICTED = "restricted"


def psa_labels(enforce: str, warn_audit: str, version: str) -> dict[str, str]:
    """Pod Security admission labels: enforce one level, warn and audit at another, all pinned to `version`
    so a cluster upgrade does not tighten the rules by surprise."""
    return {
        PSA_ENFORCE: enforce, PSA_ENFORCE_VERSION: version,
        PSA_WARN: warn_audit, PSA_WARN_VERSION: version,
        PSA_AUDIT: warn_audit, PSA_AUDIT_VERSION: version,
    }
