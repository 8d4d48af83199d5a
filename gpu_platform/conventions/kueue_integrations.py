"""Kueue's integrations: the framework names Kueue knows and the workload APIs each one queues."""

from __future__ import annotations


# ==== Kueue's integrations: framework names and their workload APIs =========================================
# Kueue's framework names (`integrations.frameworks`): every FrameworkName of Kueue v0.19.2 (sigs.k8s.io/kueue
# pkg/controller/jobs/*/*_controller.go). Kueue refuses a name it does not know at start-up
# (pkg/controller/jobframework/integrationmanager.go checkEnabledListDependencies, errIntegrationNotFound).
FRAMEWORK_JOB = "batch/job"
FRAMEWORK_POD = "pod"
FRAMEWORK_DEPLOYMENT = "deployment"
FRAMEWORK_STATEFULSET = "statefulset"
FRAMEWORK_JOBSET = "jobset.x-k8s.io/jobset"
FRAMEWORK_TRAINJOB = "trainer.kubeflow.org/trainjob"
FRAMEWORK_LWS = "leaderworkerset.x-k8s.io/leaderworkerset"
FRAMEWORK_RAYJOB = "ray.io/rayjob"
FRAMEWORK_RAYCLUSTER = "ray.io/raycluster"
FRAMEWORK_RAYSERVICE = "ray.io/rayservice"
KUEUE_FRAMEWORKS: tuple[str, ...] = (
    FRAMEWORK_JOB, FRAMEWORK_POD, FRAMEWORK_DEPLOYMENT, FRAMEWORK_STATEFULSET, FRAMEWORK_JOBSET, FRAMEWORK_TRAINJOB,
    FRAMEWORK_LWS, FRAMEWORK_RAYJOB, FRAMEWORK_RAYCLUSTER, FRAMEWORK_RAYSERVICE,
    "kubeflow.org/mpijob", "kubeflow.org/pytorchjob", "kubeflow.org/tfjob", "kubeflow.org/xgboostjob",
    "kubeflow.org/paddlejob", "kubeflow.org/jaxjob", "workload.codeflare.dev/appwrapper",
    "sparkoperator.k8s.io/sparkapplication",
)
# The frameworks whose objects Kubernetes itself runs (no controller to install).
BUILTIN_FRAMEWORKS: tuple[str, ...] = (FRAMEWORK_JOB, FRAMEWORK_POD, FRAMEWORK_DEPLOYMENT, FRAMEWORK_STATEFULSET)
# Workload APIs of Kueue's integrations (the names of Kueue's `integrations.frameworks`), as
# (group, version, plural, kind). Sources: Kueue docs "Run a ..." task pages and each project's CRDs
# (JobSet v0.10.1 config/components/crd; LeaderWorkerSet v0.7.0 charts/lws/templates/crds; Kubeflow Trainer
# v2.2.1 manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml, v1alpha1; KubeRay v1.5.0 config/crd).
KUEUE_INTEGRATION_APIS: dict[str, tuple[tuple[str, str, str, str], ...]] = {
    FRAMEWORK_JOB: (("batch", "v1", "jobs", "Job"), ("batch", "v1", "cronjobs", "CronJob")),
    FRAMEWORK_POD: (("", "v1", "pods", "Pod"),),
    FRAMEWORK_DEPLOYMENT: (("apps", "v1", "deployments", "Deployment"),),
    FRAMEWORK_STATEFULSET: (("apps", "v1", "statefulsets", "StatefulSet"),),
    FRAMEWORK_JOBSET: (("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet"),),
    FRAMEWORK_TRAINJOB: (("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob"),),
    FRAMEWORK_LWS: (("leaderworkerset.x-k8s.io", "v1", "leaderworkersets", "LeaderWorkerSet"),),
    "kubeflow.org/pytorchjob": (("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob"),),
    FRAMEWORK_RAYJOB: (("ray.io", "v1", "rayjobs", "RayJob"),),
    FRAMEWORK_RAYCLUSTER: (("ray.io", "v1", "rayclusters", "RayCluster"),),
}
