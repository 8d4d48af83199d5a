"""Admission: the component that registers the five tenant policies and their bindings."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform import conventions as cv
from gpu_platform.plan import Plan

from ..kube_object import object_metadata
from .images import image_policy_spec
from .job_cleanup import job_cleanup_policy_spec
from .matching import tenant_namespace_selector
from .network_policies import network_policy_guard_spec
from .workloads import policy_spec

COMPONENT_VALUE = "admission"



def binding_spec(policy: str = cv.TENANT_WORKLOAD_POLICY) -> dict[str, Any]:
    return {
        "policyName": policy,
        "validationActions": ["Deny"],
        "matchResources": {"namespaceSelector": tenant_namespace_selector()},
    }


class Admission(pulumi.ComponentResource):
    """The tenant policies and their bindings (cluster scoped, independent of any addon)."""

    kubeconfig = None

    def __init__(self, name: str, plan: Plan, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:admission:Admission", name, None, opts)
        self.plan = plan
        self.policies: dict[str, k8s.admissionregistration.v1.ValidatingAdmissionPolicy] = {}
        policies = [
            ("admission-tenant-workloads", cv.TENANT_WORKLOAD_POLICY, policy_spec(plan)),
            ("admission-tenant-priorities", cv.TENANT_PRIORITY_POLICY, policy_spec(plan, "priorities")),
            ("admission-tenant-network-policies", cv.TENANT_NETWORK_POLICY_GUARD, network_policy_guard_spec()),
            ("admission-tenant-images", cv.TENANT_IMAGE_POLICY, image_policy_spec(plan)),
            ("admission-tenant-job-cleanup", cv.TENANT_JOB_CLEANUP_POLICY, job_cleanup_policy_spec(plan)),
        ]
        for logical, policy_name, spec in policies:
            meta = object_metadata(policy_name, component=COMPONENT_VALUE)
            if policy_name == cv.TENANT_IMAGE_POLICY:
                # The platform-wide list, where the policy pack compares the platform's own images with it.
                meta["annotations"] = {cv.PLATFORM_REGISTRIES_ANNOTATION: ",".join(plan.image_registries)}
            policy = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
                logical, metadata=meta, spec=spec, opts=pulumi.ResourceOptions(parent=self),
            )
            k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
                logical,
                metadata=meta,
                spec=binding_spec(policy_name),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[policy]),
            )
            self.policies[policy_name] = policy
        self.register_outputs({})

    def exports(self) -> dict[str, Any]:
        return {"admissionPolicies": sorted(self.policies)}
