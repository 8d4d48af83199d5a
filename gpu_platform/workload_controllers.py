"""The workload controllers the platform runs for its tenants: JobSet, Kubeflow Trainer, LeaderWorkerSet
and KubeRay. What each one is (chart, image, namespace, webhooks, the Kueue frameworks it serves) is spelled here
once; the plan picks the installed ones (`addons.<key>.install`) and this module writes their chart values.

`install: true` means the platform runs the controller. On `eks` stacks the stack deploys its upstream Helm chart
on the system pool; an `existing` cluster is expected to run it already (the live local cluster starts each as
a host process from the same names: `namespace`, `webhook_service`, `webhook_secret`), and the stack deploys
nothing for it. Either way Kueue's integrations follow: a framework whose controller is not installed is refused
by the spec (spec/workload_controller_checks.py), never left for Kueue to wait on a CRD that will not come (Kueue v0.19.2 logs "No
matching API in the server for job framework, deferring setting up controller" and waits:
pkg/controller/jobframework/setup.go).

Versions (the spec's defaults, one-line why each):
- JobSet 0.10.1, LeaderWorkerSet 0.7.0, KubeRay 1.5.0: the releases this phase pins (built from the Go module
  proxy for the live cluster as well).
- Kubeflow Trainer 2.2.1: Kueue v0.19.2 admits a TrainJob through `spec.runtimePatches`, which Trainer has
  from 2.2 on (see docs/architecture.md, "Workload controllers are add-ons, and Kueue's integrations follow
  them"); the spec refuses an older Trainer while Kueue's trainjob integration is on (TRAINER_MIN_FOR_KUEUE).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from . import conventions as cv

# Spec field names under `addons`.
JOBSET = "jobset"
TRAINER = "trainer"
LWS = "leaderWorkerSet"
KUBERAY = "kuberay"
KEYS: tuple[str, ...] = (JOBSET, TRAINER, LWS, KUBERAY)

# The first Trainer release whose TrainJob API carries `spec.runtimePatches`, which Kueue 0.19's integration
# writes (see the module docstring).
TRAINER_MIN_FOR_KUEUE: tuple[int, int, int] = (2, 2, 0)


@dataclass(frozen=True)
class Controller:
    """One workload controller as its upstream release ships it."""

    key: str
    title: str
    default_version: str
    namespace: str
    release: str
    # A Helm chart reference: an OCI URL (the version is the chart version) or a chart name in `repository`.
    chart: str
    repository: str | None
    # The controller image (its registry must be in images.allowedRegistries: the platform's own images).
    image_repository: str
    # Kueue frameworks that queue this controller's kinds.
    frameworks: tuple[str, ...]
    deployment: str
    pod_labels: Mapping[str, str]
    # The Service the API server calls the controller's admission webhooks through, the Secret holding its
    # serving certificate (the controller manages it internally), and its webhook configurations; None and ()
    # for a controller that serves no webhook.
    webhook_service: str | None = None
    webhook_secret: str | None = None
    webhook_configurations: tuple[str, ...] = ()
    # Other controllers (keys) that must be installed too.
    requires: tuple[str, ...] = ()
    # Where the chart's facts come from.
    source: str = ""


CONTROLLERS: dict[str, Controller] = {
    JOBSET: Controller(
        key=JOBSET, title="JobSet", default_version="0.10.1", namespace=cv.JOBSET_NAMESPACE, release="jobset",
        # The released chart (hack/helm-chart-package.sh: pushed to registry.k8s.io/jobset/charts, its image
        # rewritten to registry.k8s.io/jobset/jobset:<tag>; charts/jobset/README.md "Install from registry.k8s.io").
        chart="oci://registry.k8s.io/jobset/charts/jobset", repository=None,
        image_repository="registry.k8s.io/jobset/jobset",
        frameworks=(cv.FRAMEWORK_JOBSET,),
        # With release name `jobset` the chart's fullname is `jobset` (charts/jobset/templates/_helpers.tpl
        # jobset.fullname: the release name when it contains the chart name); controller and webhook names
        # follow templates/controller/_helpers.tpl and templates/webhook/_helpers.tpl.
        deployment="jobset-controller",
        pod_labels={cv.APP_NAME: "jobset", cv.APP_INSTANCE: "jobset", cv.COMPONENT: "controller"},
        webhook_service="jobset-webhook-service", webhook_secret="jobset-webhook-server-cert",
        webhook_configurations=("jobset-mutating-webhook-configuration", "jobset-validating-webhook-configuration"),
        source="sigs.k8s.io/jobset v0.10.1 charts/jobset",
    ),
    TRAINER: Controller(
        key=TRAINER, title="Kubeflow Trainer", default_version="2.2.1", namespace=cv.TRAINER_NAMESPACE,
        release="kubeflow-trainer",
        chart="oci://ghcr.io/kubeflow/charts/kubeflow-trainer", repository=None,
        image_repository="ghcr.io/kubeflow/trainer/trainer-controller-manager",
        frameworks=(cv.FRAMEWORK_TRAINJOB,),
        # Release `kubeflow-trainer`: fullname `kubeflow-trainer` (templates/_helpers.tpl), manager and webhook
        # Service `<fullname>-controller-manager` (templates/manager/_helpers.tpl, trainer.webhook.service.name),
        # webhook Secret `<chart name>-webhook-cert`, webhook configurations defaulter./validator.trainer.kubeflow.org
        # (templates/webhook/_helpers.tpl).
        deployment="kubeflow-trainer-controller-manager",
        pod_labels={cv.APP_NAME: "kubeflow-trainer", cv.APP_INSTANCE: "kubeflow-trainer", cv.PART_OF: "kubeflow",
                    cv.COMPONENT: "manager"},
        webhook_service="kubeflow-trainer-controller-manager", webhook_secret="kubeflow-trainer-webhook-cert",
        webhook_configurations=("defaulter.trainer.kubeflow.org", "validator.trainer.kubeflow.org"),
        requires=(JOBSET,),
        # The chart's torch-distributed runtime runs docker.io/pytorch/pytorch when a TrainJob names no image
        # (images.CHART_DEFAULT_IMAGES, templates/runtimes/torch-distributed.yaml).
        source="github.com/kubeflow/trainer/v2 v2.2.1 charts/kubeflow-trainer",
    ),
    LWS: Controller(
        key=LWS, title="LeaderWorkerSet", default_version="0.7.0", namespace=cv.LWS_NAMESPACE, release="lws",
        # The released chart (hack/push-chart.sh: registry.k8s.io/lws/charts, image registry.k8s.io/lws/lws:<tag>;
        # site/content/en/docs/installation/_index.md "Install by Helm", CHART_VERSION=0.7.0).
        chart="oci://registry.k8s.io/lws/charts/lws", repository=None,
        image_repository="registry.k8s.io/lws/lws",
        frameworks=(cv.FRAMEWORK_LWS,),
        # Deployment `<fullname>-controller-manager` (templates/manager/deployment.yaml); the webhook Service and
        # Secret names are fixed in the chart (templates/webhook/service.yaml, secret.yaml, webhook.yaml).
        deployment="lws-controller-manager",
        pod_labels={cv.APP_NAME: "lws", cv.APP_INSTANCE: "lws", "control-plane": "controller-manager"},
        webhook_service="lws-webhook-service", webhook_secret="lws-webhook-server-cert",
        webhook_configurations=("lws-mutating-webhook-configuration", "lws-validating-webhook-configuration"),
        source="sigs.k8s.io/lws v0.7.0 charts/lws",
    ),
    KUBERAY: Controller(
        key=KUBERAY, title="KubeRay", default_version="1.5.0", namespace=cv.KUBERAY_NAMESPACE,
        release="kuberay-operator",
        # The project's Helm repository (ray-project/kuberay helm-chart/kuberay-operator, chart version 1.5.0).
        chart="kuberay-operator", repository="https://ray-project.github.io/kuberay-helm/",
        image_repository="quay.io/kuberay/operator",
        frameworks=(cv.FRAMEWORK_RAYJOB, cv.FRAMEWORK_RAYCLUSTER),
        # fullnameOverride kuberay-operator (values.yaml). No webhook: the 1.5.0 chart has none, and the
        # operator serves its RayCluster webhook only with ENABLE_WEBHOOKS=true (ray-operator main.go).
        deployment="kuberay-operator",
        pod_labels={cv.APP_NAME: "kuberay-operator", cv.APP_INSTANCE: "kuberay-operator",
                    **cv.KUBERAY_OPERATOR_POD_LABELS},
        source="ray-project/kuberay v1.5.0 helm-chart/kuberay-operator",
    ),
}

# Which controller serves each framework it queues.
FRAMEWORK_CONTROLLER: dict[str, str] = {f: c.key for c in CONTROLLERS.values() for f in c.frameworks}
# Kueue enables `pod` with these frameworks whether or not it is listed (their pods are Kueue pod groups:
# pkg/controller/jobs/{deployment,statefulset,leaderworkerset}/*_controller.go ImplicitlyEnabledFrameworkNames),
# so the plan lists it too: the admission policy then queues exactly what Kueue does.
IMPLIES_POD: tuple[str, ...] = (cv.FRAMEWORK_DEPLOYMENT, cv.FRAMEWORK_STATEFULSET, cv.FRAMEWORK_LWS)


def default_frameworks(installed: Mapping[str, bool]) -> list[str]:
    """Kueue's frameworks when the spec lists none: the built-in kinds a team submits (Jobs, Pods, Deployments)
    plus every framework of an installed controller."""
    out = [cv.FRAMEWORK_JOB, cv.FRAMEWORK_POD, cv.FRAMEWORK_DEPLOYMENT]
    for key in KEYS:
        if installed.get(key, True):
            out += list(CONTROLLERS[key].frameworks)
    return out


def effective_frameworks(frameworks: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """The spec's frameworks in order, without repeats, with `pod` where Kueue implies it (IMPLIES_POD)."""
    out = list(dict.fromkeys(frameworks))
    if cv.FRAMEWORK_POD not in out and any(f in IMPLIES_POD for f in out):
        out.append(cv.FRAMEWORK_POD)
    return tuple(out)


def version_tuple(version: str) -> tuple[int, int, int]:
    core = version.removeprefix("v").split("-", 1)[0].split("+", 1)[0]
    major, minor, patch = (int(x) for x in core.split("."))
    return major, minor, patch


@dataclass(frozen=True)
class WorkloadControllerPlan:
    """An installed controller as the stack deploys it (`deploy`, eks stacks) or expects it (existing clusters)."""

    controller: Controller
    version: str
    deploy: bool
    values: Mapping[str, Any]

    @property
    def key(self) -> str:
        return self.controller.key

    @property
    def namespace(self) -> str:
        return self.controller.namespace

    @property
    def image(self) -> str:
        return f"{self.controller.image_repository}:v{self.version.removeprefix('v')}"


def system_pool_placement(on_system_pool: bool) -> dict[str, Any]:
    """The controller pods on the untainted system pool (no toleration: every GPU node is tainted)."""
    if not on_system_pool:
        return {}
    return {"nodeSelector": {"kubernetes.io/os": "linux", cv.NODE_ROLE: cv.SYSTEM_NODE_ROLE}, "tolerations": []}


# Restricted Pod Security for a pod: the controller namespaces enforce `restricted` (platform_namespace.py).
RESTRICTED_POD_SECURITY: dict[str, Any] = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}


def chart_values(key: str, version: str, on_system_pool: bool) -> dict[str, Any]:
    """Helm values of a controller's chart; every key exists in the chart's values.yaml at the pinned release
    (tests/unit/gpu_platform/test_workload_controllers.py checks them against the charts in the Go module cache
    when present).
    Images are pinned to the release, as each project's own chart packaging does (see `CONTROLLERS`)."""
    tag = f"v{version.removeprefix('v')}"
    place = system_pool_placement(on_system_pool)
    if key == JOBSET:
        # charts/jobset/values.yaml: image.{repository,tag,pullPolicy}, controller.{nodeSelector,tolerations};
        # podSecurityContext already restricted (runAsNonRoot, RuntimeDefault), container drops ALL.
        return {"image": {"repository": CONTROLLERS[JOBSET].image_repository, "tag": tag, "pullPolicy": "IfNotPresent"},
                **({"controller": place} if place else {})}
    if key == TRAINER:
        # charts/kubeflow-trainer/values.yaml (v2.2.1): the chart would install JobSet as a subchart
        # (jobset.install); the platform installs it itself, once. runtimes.torchDistributed.enabled makes the
        # torch-distributed ClusterTrainingRuntime the TrainJob template names. The manager's securityContext
        # default is restricted already.
        return {"jobset": {"install": False},
                "image": {"registry": "ghcr.io", "repository": "kubeflow/trainer/trainer-controller-manager", "tag": tag},
                "runtimes": {"torchDistributed": {"enabled": True}},
                **({"manager": place} if place else {})}
    if key == LWS:
        # charts/lws/values.yaml: image.manager.{repository,tag,pullPolicy}; podSecurityContext has only
        # runAsNonRoot, so the RuntimeDefault seccomp profile restricted asks for is added here.
        return {"image": {"manager": {"repository": CONTROLLERS[LWS].image_repository, "tag": tag,
                                      "pullPolicy": "IfNotPresent"}},
                "podSecurityContext": dict(RESTRICTED_POD_SECURITY), **place}
    if key == KUBERAY:
        # helm-chart/kuberay-operator/values.yaml (1.5.0): image.{repository,tag,pullPolicy}, nodeSelector,
        # tolerations, env; its container securityContext is restricted already. DELETE_RAYJOB_CR_AFTER_JOB_FINISHES:
        # a finished RayJob (shutdownAfterJobFinishes, which Kueue requires) is deleted itself at its
        # ttlSecondsAfterFinished, not only its RayCluster (controllers/ray/rayjob_controller.go, the env check
        # after the TTL), so a RayJob goes like a Job does (the tenant-job-cleanup policy requires the TTL).
        return {"image": {"repository": CONTROLLERS[KUBERAY].image_repository, "tag": tag, "pullPolicy": "IfNotPresent"},
                "env": [{"name": "DELETE_RAYJOB_CR_AFTER_JOB_FINISHES", "value": "true"}], **place}
    raise KeyError(f"unknown workload controller {key!r}; controllers: {', '.join(KEYS)}")


def plan_controllers(installed: Mapping[str, tuple[bool, str]], deploy: bool,
                     on_system_pool: bool) -> tuple[WorkloadControllerPlan, ...]:
    """The installed controllers, in KEYS order: key -> (install, version) from the spec."""
    out = []
    for key in KEYS:
        install, version = installed[key]
        if install:
            out.append(WorkloadControllerPlan(CONTROLLERS[key], version, deploy,
                                              chart_values(key, version, on_system_pool)))
    return tuple(out)
