"""The job cleanup policy (`tenant-job-cleanup`): finished tenant Jobs, JobSets and RayJobs carry a bounded
ttlSecondsAfterFinished, so their controllers delete them and their pods."""

from __future__ import annotations

from typing import Any

from gpu_platform import conventions as cv
from gpu_platform.plan import Plan

from .matching import controlled, resource_rules, tenant_namespace_selector
from .rules import RULES


# Kinds whose finished objects are deleted after spec.ttlSecondsAfterFinished, by the framework that queues them:
# batch/v1 Job (and a CronJob's jobTemplate: the TTL-after-finished controller), JobSet (sigs.k8s.io/jobset v0.10.1
# api/jobset/v1alpha2/jobset_types.go TTLSecondsAfterFinished: the JobSet and its Jobs), RayJob (KubeRay v1.5.0
# apis/ray/v1/rayjob_types.go; with shutdownAfterJobFinishes, which Kueue requires of the RayJobs it manages
# (pkg/controller/jobs/rayjob/rayjob_webhook.go), the RayCluster goes at the TTL, and the RayJob with it because
# the platform's operator runs with DELETE_RAYJOB_CR_AFTER_JOB_FINISHES: workload_controllers.chart_values).
# A TrainJob has no TTL (Trainer v2.2.1 TrainJobSpec), and a LeaderWorkerSet serves until deleted.
TTL_KINDS: tuple[tuple[str, str, str, str, str], ...] = (
    (cv.FRAMEWORK_JOB, "batch", "v1", "jobs", "Job"),
    (cv.FRAMEWORK_JOB, "batch", "v1", "cronjobs", "CronJob"),
    (cv.FRAMEWORK_JOBSET, "jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet"),
    (cv.FRAMEWORK_RAYJOB, "ray.io", "v1", "rayjobs", "RayJob"),
)


def job_cleanup_policy_spec(plan: Plan) -> dict[str, Any]:
    """Finished and failed tenant Jobs, JobSets and RayJobs do not linger: each (and a CronJob's jobTemplate) sets
    ttlSecondsAfterFinished, at most jobs.maxTtlSecondsAfterFinished, so its controller deletes it and its pods
    (TTL_KINDS). Enforced, not defaulted: EKS 1.33 serves no MutatingAdmissionPolicy (see docs/architecture.md, "The
    security checklist from the spec"). On update only an object that already had a TTL is held to it (removing or
    raising it is refused), so objects created before the policy can still be unsuspended by Kueue. Objects a
    workload controller makes (a JobSet's Jobs, a TrainJob's JobSet, a RayJob's submitter Job) are exempt: their
    owner's lifetime decides. JobSets and RayJobs are matched only while their framework is on."""
    holder = "(request.kind.kind == 'CronJob' ? object.spec.jobTemplate.spec : object.spec)"
    old = ("(request.kind.kind == 'CronJob' ? oldObject.spec.jobTemplate.spec : oldObject.spec)")
    limit = plan.job_max_ttl_seconds
    kinds = [k for k in TTL_KINDS if k[0] in (cv.FRAMEWORK_JOB, *plan.kueue_integrations)]
    return {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": resource_rules([(g, v, r, k) for _f, g, v, r, k in kinds]),
            "namespaceSelector": tenant_namespace_selector(),
            "matchPolicy": "Equivalent",
        },
        "matchConditions": [
            {"name": "not-being-deleted", "expression": "!has(object.metadata.deletionTimestamp)"},
            {"name": "not-made-by-a-workload-controller", "expression": f"!({controlled()})"},
            {"name": "new-or-already-bounded", "expression": (
                f"request.operation == 'CREATE' || has({old}.ttlSecondsAfterFinished)")},
        ],
        "variables": [{"name": "holder", "expression": holder}],
        "validations": [{
            "expression": (f"has(variables.holder.ttlSecondsAfterFinished) && "
                           f"variables.holder.ttlSecondsAfterFinished <= {limit}"),
            "message": (
                f"Jobs, JobSets and RayJobs in team namespaces {RULES['job-ttl']}, at most {limit} seconds (for a "
                "CronJob: spec.jobTemplate.spec.ttlSecondsAfterFinished), so that finished and failed ones and "
                f"their pods are deleted; python -m platform_cli job sets {plan.job_ttl_seconds}"
            ),
            "reason": "Invalid",
        }],
    }
