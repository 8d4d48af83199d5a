"""Admission: guardrails for what tenants submit with kubectl, which the Pulumi policy pack never sees.

Five ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1, CEL, evaluated in the API server), each
with its binding, scoped to tenant namespaces (those carrying the team label), a module each: the workload
policy (workloads: queues, GPUs, host access, where work runs), the priority policy (priorities), the
NetworkPolicy guard (network_policies), the image policy (images) and the job cleanup policy (job_cleanup).
They are written in the CEL that cel builds, match what matching says (the workload kinds and where each
keeps its pod templates, tenant namespaces, a controller's objects), and name each refusal by a rule of
rules.RULES; component registers them. Objects being deleted are not checked, so finalizers can always be
removed.
"""

from __future__ import annotations

from .component import COMPONENT_VALUE, Admission, binding_spec
from .images import image_policy_spec
from .job_cleanup import TTL_KINDS, job_cleanup_policy_spec
from .matching import (
    SHAPES, WORKLOAD_OWNER_KINDS, WorkloadShape, controlled, matched_apis, queueable_kinds, resource_rules,
    tenant_namespace_selector,
)
from .network_policies import network_policy_guard_spec
from .priorities import priority_validations
from .rules import RULES
from .workloads import policy_spec, validations, variables

__all__ = [
    "COMPONENT_VALUE", "RULES", "SHAPES", "TTL_KINDS", "WORKLOAD_OWNER_KINDS", "Admission", "WorkloadShape",
    "binding_spec", "controlled", "image_policy_spec", "job_cleanup_policy_spec", "matched_apis",
    "network_policy_guard_spec", "policy_spec", "priority_validations", "queueable_kinds", "resource_rules",
    "tenant_namespace_selector", "validations", "variables",
]
