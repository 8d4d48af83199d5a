"""The NetworkPolicy guard (`tenant-network-policies`): NetworkPolicies in tenant namespaces stay in the
platform's hands, since the default deny means nothing if a team member may add an allow-all."""

from __future__ import annotations

from typing import Any

from .matching import tenant_namespace_selector


def network_policy_guard_spec() -> dict[str, Any]:
    """NetworkPolicies are additive, and Kubernetes' `edit` and `admin` roles (bound to every team) may
    write them: a member could add an allow-all policy next to our default deny, or delete it. So in tenant
    namespaces only someone who may write NetworkPolicies in every namespace (a cluster-wide grant: the
    deployer, cluster admins, the namespace controller) may create, change or delete them; RoleBindings a
    tenant makes in its own namespace never pass this check. Teams change their egress in the stack config.
    (`authorizer` in ValidatingAdmissionPolicy CEL: kubernetes.io/docs/reference/access-authn-authz/
    validating-admission-policy; without .namespace() the check is cluster wide.)"""
    verb = "request.operation == 'CREATE' ? 'create' : (request.operation == 'DELETE' ? 'delete' : 'update')"
    return {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [{
                "apiGroups": ["networking.k8s.io"], "apiVersions": ["v1"], "resources": ["networkpolicies"],
                "operations": ["CREATE", "UPDATE", "DELETE"],
            }],
            "namespaceSelector": tenant_namespace_selector(),
            "matchPolicy": "Equivalent",
        },
        "variables": [{"name": "verb", "expression": verb}],
        "validations": [{
            "expression": (
                "authorizer.group('networking.k8s.io').resource('networkpolicies').check(variables.verb).allowed()"
            ),
            "message": (
                "NetworkPolicies in team namespaces are managed by the platform (teams[].egress in the stack "
                "config); only cluster-wide administrators may change them"
            ),
            "reason": "Forbidden",
        }],
    }
