"""Cross-field checks of identity and audit: a team's groups and the IAM roles mapped into them stay out of
the platform's admin groups and Kubernetes' system groups, one access entry per principal, and the
control-plane logs that keep the audit trail."""

from __future__ import annotations

from .. import audit, conventions as cv
from ..errors import Problem
from .platform import Platform


def check_security(p: Platform) -> list[Problem]:
    """Identity: a team's groups and the IAM roles mapped into them never reach the platform's
    admin groups or Kubernetes' system: groups, and every principal has one access entry (EKS allows one per
    principal: API reference, CreateAccessEntry.principalArn). Control-plane logging keeps its audit trail."""
    out: list[Problem] = []
    c = p.cluster
    admins = set(c.platformAdmins)
    eks = c.provider == "eks"
    if c.identity is not None and not eks:
        out.append(Problem("cluster.identity", "EKS access entries and OIDC identity providers are EKS APIs: only "
                                               "for provider 'eks' (an existing cluster's owner maps its users)"))
    missing = [t for t in audit.REQUIRED_EKS_LOG_TYPES if t not in c.controlPlaneLogs]
    if missing:
        out.append(Problem("cluster.controlPlaneLogs", f"must include {', '.join(audit.REQUIRED_EKS_LOG_TYPES)} "
                                                       f"(missing: {', '.join(missing)}): the audit trail of who "
                                                       "submitted, read secrets, exec'd and administered"))
    seen: dict[str, str] = {}
    for j, arn in enumerate(c.identity.platformAdminRoles if c.identity else ()):
        at = f"cluster.identity.platformAdminRoles[{j}]"
        if arn in seen:
            out.append(Problem(at, f"{arn} already has an access entry ({seen[arn]}); EKS allows one per principal"))
        seen.setdefault(arn, at)
    for i, t in enumerate(p.teams):
        own: set[str] = set()
        for tier in ("admin", "member", "viewer"):
            for k, g in enumerate(getattr(t.groups, tier)):
                own.add(g)
                if g.startswith(cv.SYSTEM_GROUP_PREFIX):
                    out.append(Problem(
                        f"teams[{i}].groups.{tier}[{k}]",
                        f"{g!r} is a Kubernetes system group (assigned by the API server, e.g. system:authenticated is "
                        "every signed-in user): a team's groups are its own people",
                    ))
        if t.accessEntries and not eks:
            out.append(Problem(f"teams[{i}].accessEntries", "access entries are EKS's: only for provider 'eks'"))
        for j, e in enumerate(t.accessEntries):
            at = f"teams[{i}].accessEntries[{j}]"
            if e.principalArn in seen:
                out.append(Problem(f"{at}.principalArn", f"{e.principalArn} already has an access entry "
                                                         f"({seen[e.principalArn]}); EKS allows one per principal"))
            seen.setdefault(e.principalArn, at)
            for k, g in enumerate(e.groups):
                g_at = f"{at}.groups[{k}]"
                if g.startswith(cv.SYSTEM_GROUP_PREFIX):
                    out.append(Problem(g_at, f"a team's role may not be mapped into the Kubernetes system group {g!r}"))
                elif g in admins:
                    out.append(Problem(g_at, f"{g!r} is a platform admin group (cluster.platformAdmins): a team's role "
                                             "mapped into it would administer every queue; use cluster.identity."
                                             "platformAdminRoles for platform admins"))
                elif g not in own:
                    out.append(Problem(g_at, f"{g!r} is not one of team {t.name!r}'s groups; its groups: "
                                             f"{', '.join(sorted(own)) or 'none'}"))
    return out
