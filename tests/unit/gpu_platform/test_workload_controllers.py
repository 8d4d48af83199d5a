"""The workload controllers: JobSet, Kubeflow Trainer, LeaderWorkerSet and KubeRay as pinned add-ons, Kueue's
integrations following what is installed, and the releases an eks stack deploys
(gpu_platform/workload_controllers.py)."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_platform import conventions as cv, workload_controllers as wc
from gpu_platform.errors import SpecError
from gpu_platform.kueue_config import controller_config
from gpu_platform.plan import build_plan
from gpu_platform.spec import load_platform
from tests.conftest import plan_of, platform_raw, rendered, spec_of

RELEASE = "kubernetes:helm.sh/v3:Release"
EVERYTHING = ["batch/job", "pod", "deployment", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob",
              "leaderworkerset.x-k8s.io/leaderworkerset", "ray.io/rayjob", "ray.io/raycluster"]


def plan_with(stack: str = "prod", **addons: Any):
    raw = platform_raw(stack)
    for key, value in addons.items():
        raw.setdefault("addons", {})[key] = value
    return build_plan(load_platform(raw, "us-east-1"), "us-east-1")


def problems(stack: str = "prod", **addons: Any) -> str:
    with pytest.raises(SpecError) as err:
        plan_with(stack, **addons)
    return str(err.value)


# --- the spec ---------------------------------------------------------------------------------------------


def test_every_controller_is_installed_at_its_pinned_version_by_default() -> None:
    addons = spec_of("prod").addons
    assert (addons.jobset.install, addons.jobset.version) == (True, "0.10.1")
    assert (addons.trainer.install, addons.trainer.version) == (True, "2.2.1")
    assert (addons.leaderWorkerSet.install, addons.leaderWorkerSet.version) == (True, "0.7.0")
    assert (addons.kuberay.install, addons.kuberay.version) == (True, "1.5.0")
    # Kueue's frameworks: the built-in kinds and every installed controller's (PyTorchJob's operator is none).
    assert addons.kueue.integrations == EVERYTHING
    assert plan_of("prod").kueue_integrations == tuple(EVERYTHING)


def test_kueue_integrations_follow_the_installed_controllers() -> None:
    plan = plan_with(kuberay={"install": False}, leaderWorkerSet={"install": False})
    assert plan.kueue_integrations == ("batch/job", "pod", "deployment", "jobset.x-k8s.io/jobset",
                                       "trainer.kubeflow.org/trainjob")
    assert [c.key for c in plan.workload_controllers] == ["jobset", "trainer"]
    assert controller_config(plan)["integrations"] == {"frameworks": list(plan.kueue_integrations)}
    # No Ray kind queued: no opening for KubeRay's operator in the tenants' default deny.
    assert plan.uses_kuberay is False


def test_a_framework_whose_controller_is_not_installed_is_refused_by_its_path() -> None:
    text = problems(kuberay={"install": False}, kueue={"integrations": ["batch/job", "ray.io/rayjob"]})
    assert ("addons.kueue.integrations[1]: 'ray.io/rayjob' queues KubeRay objects, and addons.kuberay.install is "
            "false: Kueue would wait for a CRD that never comes; set addons.kuberay.install true or remove the "
            "framework") in text


def test_an_unknown_framework_is_refused_with_the_valid_ones() -> None:
    text = problems(kueue={"integrations": ["batch/job", "jobset.x-k8s.io/jobsets"]})
    assert "addons.kueue.integrations[1]: unknown Kueue framework 'jobset.x-k8s.io/jobsets'; Kueue 0.19 frameworks: " \
           "batch/job, pod, deployment, statefulset, jobset.x-k8s.io/jobset," in text


def test_trainer_needs_jobset() -> None:
    text = problems(jobset={"install": False})
    assert ("addons.trainer.install: Kubeflow Trainer needs JobSet (it runs each of its jobs on it): set "
            "addons.jobset.install true, or addons.trainer.install false") in text
    # Both off is fine, and so is JobSet alone.
    assert [c.key for c in plan_with(jobset={"install": False}, trainer={"install": False}).workload_controllers] == [
        "leaderWorkerSet", "kuberay"]
    assert [c.key for c in plan_with(trainer={"install": False}).workload_controllers] == ["jobset", "leaderWorkerSet",
                                                                                          "kuberay"]


def test_a_trainer_without_runtime_patches_is_refused_while_kueue_queues_trainjobs() -> None:
    """Kueue 0.19.2 writes TrainJob spec.runtimePatches, which Trainer has from 2.2 on (workload_controllers.py)."""
    text = problems(trainer={"version": "2.0.0"})
    assert ("addons.trainer.version: Kubeflow Trainer 2.0.0 has no TrainJob spec.runtimePatches, which Kueue 0.19.2's "
            "trainjob integration writes to admit a TrainJob: its TrainJobs would be admitted and never start; use "
            "2.2.0 or later (default 2.2.1)") in text
    # Without the trainjob integration an older Trainer queues nothing and is accepted.
    plan_with(trainer={"version": "2.0.0"}, kueue={"integrations": ["batch/job", "jobset.x-k8s.io/jobset"]})


def test_versions_are_exact() -> None:
    assert "addons.leaderWorkerSet.version: '0.7' is not an exact chart version" in problems(
        leaderWorkerSet={"version": "0.7"})


def test_a_framework_no_add_on_installs_is_warned_about() -> None:
    plan = plan_with(kueue={"integrations": ["batch/job", "kubeflow.org/pytorchjob"]})
    assert ("Kueue framework 'kubeflow.org/pytorchjob': no platform add-on installs its controller; until its CRD is on "
            "the cluster Kueue waits for it, and the tenant admission policies do not read its kind's pod templates "
            "(tenants cannot create it either: no RBAC is granted for it)") in plan.warnings


def test_kueue_is_told_pod_where_it_implies_it() -> None:
    plan = plan_with(kueue={"integrations": ["batch/job", "leaderworkerset.x-k8s.io/leaderworkerset"]})
    assert plan.kueue_integrations == ("batch/job", "leaderworkerset.x-k8s.io/leaderworkerset", "pod")


# --- what the live side reuses ----------------------------------------------------------------------------


def test_namespaces_and_webhook_services_are_named_once() -> None:
    got = {k: (c.namespace, c.release, c.webhook_service, c.webhook_secret) for k, c in wc.CONTROLLERS.items()}
    assert got == {
        "jobset": ("jobset-system", "jobset", "jobset-webhook-service", "jobset-webhook-server-cert"),
        "trainer": ("kubeflow-system", "kubeflow-trainer", "kubeflow-trainer-controller-manager",
                    "kubeflow-trainer-webhook-cert"),
        "leaderWorkerSet": ("lws-system", "lws", "lws-webhook-service", "lws-webhook-server-cert"),
        "kuberay": ("kuberay-system", "kuberay-operator", None, None),
    }
    assert cv.KUBERAY_OPERATOR_NAMESPACE == "kuberay-system"
    for ns in ("jobset-system", "kubeflow-system", "lws-system", "kuberay-system"):
        assert ns in cv.RESERVED_NAMESPACES


# --- the releases -----------------------------------------------------------------------------------------


def releases(stack: str) -> dict[str, dict[str, Any]]:
    return {r.inputs["name"]: r.inputs for r in rendered(stack).by_type(RELEASE)}


def test_an_eks_stack_deploys_each_chart_pinned_with_its_image() -> None:
    got = releases("prod")
    assert {k: (v["chart"], v["version"], v["namespace"]) for k, v in got.items()
            if k in ("jobset", "kubeflow-trainer", "lws", "kuberay-operator")} == {
        "jobset": ("oci://registry.k8s.io/jobset/charts/jobset", "0.10.1", "jobset-system"),
        "kubeflow-trainer": ("oci://ghcr.io/kubeflow/charts/kubeflow-trainer", "2.2.1", "kubeflow-system"),
        "lws": ("oci://registry.k8s.io/lws/charts/lws", "0.7.0", "lws-system"),
        "kuberay-operator": ("kuberay-operator", "1.5.0", "kuberay-system"),
    }
    assert got["kuberay-operator"]["repositoryOpts"] == {"repo": "https://ray-project.github.io/kuberay-helm/"}
    assert got["jobset"]["values"]["image"] == {"repository": "registry.k8s.io/jobset/jobset", "tag": "v0.10.1",
                                                "pullPolicy": "IfNotPresent"}
    trainer = got["kubeflow-trainer"]["values"]
    # The platform installs JobSet once, itself; the torch runtime the TrainJob template names comes with Trainer.
    assert trainer["jobset"] == {"install": False}
    assert trainer["runtimes"] == {"torchDistributed": {"enabled": True}}
    assert trainer["image"] == {"registry": "ghcr.io", "repository": "kubeflow/trainer/trainer-controller-manager",
                                "tag": "v2.2.1"}
    assert got["lws"]["values"]["podSecurityContext"] == {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    assert got["kuberay-operator"]["values"]["env"] == [{"name": "DELETE_RAYJOB_CR_AFTER_JOB_FINISHES", "value": "true"}]


def test_trainer_waits_for_jobset_and_each_has_a_restricted_namespace() -> None:
    r = rendered("prod")
    (trainer,) = [x for x in r.by_type(RELEASE) if x.inputs["name"] == "kubeflow-trainer"]
    (jobset,) = [x for x in r.by_type(RELEASE) if x.name == "jobset"]
    assert jobset.name in trainer.options["dependencies"]
    namespaces = {o["metadata"]["name"]: o["metadata"]["labels"] for o in r.kubernetes_objects() if o["kind"] == "Namespace"}
    for ns in cv.WORKLOAD_CONTROLLER_NAMESPACES:
        assert namespaces[ns][cv.PSA_ENFORCE] == "restricted", ns


def test_the_controllers_run_on_the_system_pool_where_there_is_one() -> None:
    plan = plan_of("staging-karpenter")  # a created cluster, with its system pool
    assert plan.cluster.system_pool is not None
    on = {"nodeSelector": {"kubernetes.io/os": "linux", cv.NODE_ROLE: cv.SYSTEM_NODE_ROLE}, "tolerations": []}
    values = {c.key: c.values for c in plan.workload_controllers}
    assert values["jobset"]["controller"] == on
    assert values["trainer"]["manager"] == on
    assert values["leaderWorkerSet"]["nodeSelector"] == on["nodeSelector"]
    assert values["kuberay"]["tolerations"] == []


def test_an_existing_cluster_deploys_no_controller() -> None:
    """The local stack's cluster runs them (the live local cluster); the stack only queues their kinds."""
    plan = plan_of("local")
    assert [(c.key, c.deploy) for c in plan.workload_controllers] == [
        ("jobset", False), ("trainer", False), ("leaderWorkerSet", False), ("kuberay", False)]
    assert not {"jobset", "kubeflow-trainer", "lws", "kuberay-operator"} & set(releases("local"))


def test_the_policy_pack_reads_a_registry_and_repository_image_and_the_runtime_default() -> None:
    """Trainer's chart joins `image.registry` and `image.repository` (templates/_helpers.tpl trainer.image); the
    pack must read the whole name, or it would check `kubeflow/...` as a Docker Hub image."""
    from policies.gpu_policies.supply import release_images

    props = {"chart": "oci://ghcr.io/kubeflow/charts/kubeflow-trainer",
             "values": releases("prod")["kubeflow-trainer"]["values"]}
    assert release_images(props) == ["ghcr.io/kubeflow/trainer/trainer-controller-manager", "docker.io/pytorch/pytorch"]
