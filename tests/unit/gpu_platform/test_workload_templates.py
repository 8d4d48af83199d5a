"""The paved-road templates of the workload controllers' kinds (`job --kind jobset|trainjob|rayjob|lws`) pass the
platform's own admission policies, and a tenant's refusals for these kinds are the rules' (components.admission.RULES),
evaluated by the CEL evaluator on prod's rendered policies (tests/cel.py), bound as the API server binds them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.admission import RULES
from gpu_platform import conventions as cv
from gpu_platform.jobs import JobError, JobRequest
from gpu_platform.plan import build_plan
from gpu_platform.spec import load_platform
from gpu_platform.workload_templates import template
from platform_cli.cli import EXIT_INVALID, main
from tests import cel
from tests.conftest import plan_of, platform_raw
from tests.unit.components.admission_requests import KINDS, MEMBER, namespace, policy

STACK = "prod"
POLICIES = (cv.TENANT_WORKLOAD_POLICY, cv.TENANT_PRIORITY_POLICY, cv.TENANT_IMAGE_POLICY, cv.TENANT_JOB_CLEANUP_POLICY)
KINDS.setdefault("TrainJob", ("trainer.kubeflow.org", "v1alpha1", "trainjobs"))
# What each kind is asked for: a multi-node training job on the topology-aware EFA pool, a serving group on a
# time-sliced inference pool.
TRAIN = dict(team="llm-pretrain", pool="h100-train", gpus=8, nodes=2, priority="training", name="pretrain")
SERVE = dict(team="search-serving", pool="l40s-infer", gpus=1, nodes=2, name="ranker")


def objects(kind: str, **kw: Any) -> list[dict[str, Any]]:
    args = {**(SERVE if kind == "lws" else TRAIN), **kw}
    return template(plan_of(STACK), JobRequest(kind=kind, **args))


def matches(spec: dict[str, Any], obj: dict[str, Any]) -> bool:
    group, version, resource = KINDS[obj["kind"]]
    return any(group in r["apiGroups"] and version in r["apiVersions"] and resource in r["resources"]
               for r in spec["matchConstraints"]["resourceRules"])


def decide(obj: dict[str, Any], policy_name: str, user: str = MEMBER) -> cel.Decision | None:
    """The policy's decision on creating `obj`, or None when its resource rules do not match the kind."""
    spec = policy(policy_name)
    if obj["kind"] not in KINDS or not matches(spec, obj):
        return None
    group, version, resource = KINDS[obj["kind"]]
    ns = obj["metadata"]["namespace"]
    request = cel.Request(kind=obj["kind"], group=group, version=version, resource=resource, namespace=ns,
                          name=obj["metadata"]["name"], username=user)
    return cel.review(spec, request, obj, namespace=namespace(ns))


def refusals(obj: dict[str, Any], policies: tuple[str, ...] = POLICIES) -> dict[str, list[str]]:
    """The denials of each of `policies` that refuses creating `obj`."""
    out = {}
    for name in policies:
        d = decide(obj, name)
        if d is not None and d.denials:
            out[name] = d.denials
    return out


def refused_by(obj: dict[str, Any], policy_name: str) -> list[str]:
    """The denials of one policy (a KeyError when it admits `obj`): the test reads no other, so no other is run."""
    return refusals(obj, (policy_name,))[policy_name]


# --- the templates pass the platform's own policies -------------------------------------------------------


@pytest.mark.parametrize("kind", ["job", "jobset", "trainjob", "rayjob", "lws"])
def test_every_template_is_admitted_by_every_tenant_policy(kind: str) -> None:
    checked = 0
    for obj in objects(kind):
        for name in POLICIES:
            d = decide(obj, name)
            if d is not None:
                assert d.matched and d.denials == [], (obj["kind"], name, d.denials)
                checked += 1
    # The workload, priority and image policies at least read the workload itself.
    assert checked >= 3


def test_the_jobset_is_one_gang_with_its_headless_service_rank_and_efa() -> None:
    (js,) = objects("jobset")
    assert js["apiVersion"] == "jobset.x-k8s.io/v1alpha2"
    assert js["metadata"]["labels"] == {cv.QUEUE_NAME_LABEL: "default", cv.TEAM: "llm-pretrain", cv.POOL: "h100-train",
                                        cv.MANAGED_BY: "gpu-platform", cv.PRIORITY_CLASS_LABEL: "training"}
    spec = js["spec"]
    assert spec["suspend"] is True and spec["ttlSecondsAfterFinished"] == 3600
    assert spec["network"] == {"enableDNSHostnames": True, "subdomain": "pretrain", "publishNotReadyAddresses": True}
    # A crash fails the gang; a lost pod (deleted, its own SIGTERM, OOM) restarts it whole, at most 3 times.
    assert spec["failurePolicy"] == {"maxRestarts": 3, "restartStrategy": "BlockingRecreate", "rules": [
        {"name": "applicationFailed", "action": "FailJobSet", "onJobFailureReasons": ["PodFailurePolicy"]}]}
    (rj,) = spec["replicatedJobs"]
    job = rj["template"]["spec"]
    assert (rj["name"], rj["replicas"], job["parallelism"], job["completions"], job["completionMode"],
            job["backoffLimit"]) == ("workers", 1, 2, 2, "Indexed", 0)
    pod = job["template"]
    assert pod["metadata"]["annotations"][cv.TAS_PREFERRED_TOPOLOGY_ANNOTATION] == "topology.k8s.aws/network-node-layer-3"
    (c,) = pod["spec"]["containers"]
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in c["env"]}
    assert env == {
        "GPU_PLATFORM_NODES": "2",
        "GPU_PLATFORM_COORDINATOR": "pretrain-workers-0-0.pretrain",
        "GPU_PLATFORM_RANK": {"fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}},
        "FI_PROVIDER": "efa",
        "FI_EFA_USE_DEVICE_RDMA": "1",  # p5: GPUDirect RDMA over EFA
    }
    # A whole p5.48xlarge: 8 GPUs and its 32 EFA interfaces, shared memory, the GPU toleration, the pool.
    assert c["resources"]["limits"][cv.GPU_RESOURCE] == "8" and c["resources"]["limits"][cv.EFA_RESOURCE] == "32"
    assert {"name": "dshm", "mountPath": "/dev/shm"} in c["volumeMounts"]
    assert pod["spec"]["nodeSelector"] == {cv.POOL: "h100-train"}
    assert dict(cv.GPU_TOLERATION) in pod["spec"]["tolerations"]


def test_the_trainjob_names_the_torch_runtime_and_patches_the_pod_in() -> None:
    (tj,) = objects("trainjob")
    spec = tj["spec"]
    assert tj["apiVersion"] == "trainer.kubeflow.org/v1alpha1" and spec["suspend"] is True
    assert spec["runtimeRef"] == {"name": "torch-distributed", "apiGroup": "trainer.kubeflow.org",
                                  "kind": "ClusterTrainingRuntime"}
    trainer = spec["trainer"]
    assert trainer["numNodes"] == 2 and trainer["resourcesPerNode"]["limits"][cv.GPU_RESOURCE] == "8"
    assert trainer["env"] == [{"name": "FI_PROVIDER", "value": "efa"}, {"name": "FI_EFA_USE_DEVICE_RDMA", "value": "1"}]
    (patch,) = spec["runtimePatches"]
    assert patch["manager"] == "gpu-platform.io/job-template"
    (rj,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    pod = rj["template"]["spec"]["template"]
    assert rj["name"] == "node"
    assert pod["metadata"]["annotations"][cv.TAS_PREFERRED_TOPOLOGY_ANNOTATION] == "topology.k8s.aws/network-node-layer-3"
    assert pod["spec"]["nodeSelector"] == {cv.POOL: "h100-train"}
    (c,) = pod["spec"]["containers"]
    assert c["name"] == "node" and c["securityContext"] == {
        "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": True, "runAsUser": 65534}
    # Shared memory, then prod's data path (the team's bucket, its checkpoints, scratch, the pool's Lustre).
    assert [m["mountPath"] for m in c["volumeMounts"]] == ["/dev/shm", "/data", "/checkpoints", "/scratch",
                                                           "/fsx/pretrain"]
    assert pod["spec"]["serviceAccountName"] == "team-data"


def test_the_rayjob_head_is_gpu_less_on_cpu_capacity_and_the_workers_are_on_the_pool() -> None:
    (rj,) = objects("rayjob")
    spec = rj["spec"]
    assert (spec["shutdownAfterJobFinishes"], spec["ttlSecondsAfterFinished"], spec["suspend"]) == (True, 3600, True)
    head = spec["rayClusterSpec"]["headGroupSpec"]
    assert head["rayStartParams"] == {"num-gpus": "0", "dashboard-host": "0.0.0.0"}
    hs = head["template"]["spec"]
    assert "tolerations" not in hs and "nodeSelector" not in hs
    (hc,) = hs["containers"]
    assert hc["image"] == "rayproject/ray:2.46.0"
    assert hc["resources"] == {"limits": {"cpu": "2", "memory": "8Gi"}, "requests": {"cpu": "2", "memory": "8Gi"}}
    (group,) = spec["rayClusterSpec"]["workerGroupSpecs"]
    assert (group["replicas"], group["minReplicas"], group["maxReplicas"]) == (2, 2, 2)
    ws = group["template"]["spec"]
    assert ws["nodeSelector"] == {cv.POOL: "h100-train"} and dict(cv.GPU_TOLERATION) in ws["tolerations"]
    assert ws["containers"][0]["image"] == "rayproject/ray:2.46.0-gpu"
    assert group["template"]["metadata"]["annotations"][cv.TAS_PREFERRED_TOPOLOGY_ANNOTATION]
    # The head and the submitter (500m, 512Mi) fit the team's CPU-only allowance (8 CPU, 32 GiB by default).
    sub = spec["submitterPodTemplate"]["spec"]
    assert sub["restartPolicy"] == "Never" and sub["containers"][0]["resources"]["limits"] == {"cpu": "500m",
                                                                                               "memory": "512Mi"}


def test_the_lws_serves_on_an_inference_pool_with_production_priority_a_pdb_and_a_probe() -> None:
    lws, svc, pdb = objects("lws", replicas=3)
    assert lws["metadata"]["labels"][cv.PRIORITY_CLASS_LABEL] == "production-inference"
    spec = lws["spec"]
    assert spec["replicas"] == 3 and spec["leaderWorkerTemplate"]["size"] == 2
    assert spec["leaderWorkerTemplate"]["restartPolicy"] == "RecreateGroupOnPodRestart"
    for role in ("leaderTemplate", "workerTemplate"):
        pod = spec["leaderWorkerTemplate"][role]
        (c,) = pod["spec"]["containers"]
        assert c["readinessProbe"] == {"httpGet": {"path": "/health", "port": 8000}, "periodSeconds": 10,
                                       "failureThreshold": 3}
        assert c["resources"]["limits"][cv.SHARED_GPU_RESOURCE] == "1"
        assert pod["spec"]["priorityClassName"] == "production-inference"
        assert pod["spec"]["restartPolicy"] == "Always"
        assert cv.SIM_DURATION_ANNOTATION not in pod["metadata"]["annotations"]
    assert svc["spec"]["selector"] == {"leaderworkerset.sigs.k8s.io/name": "ranker",
                                       "leaderworkerset.sigs.k8s.io/worker-index": "0"}
    assert pdb["apiVersion"] == "policy/v1"
    assert pdb["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": {"leaderworkerset.sigs.k8s.io/name": "ranker"}}}


# --- bad input names the field and the valid choices ------------------------------------------------------


@pytest.mark.parametrize("kind,kw,message", [
    ("cronjob", {}, "kind 'cronjob' is not a template; kinds: job, jobset, trainjob, rayjob, lws"),
    ("lws", {"team": "llm-pretrain", "pool": "h100-train", "gpus": 8},
     "pool 'h100-train' is a training pool; a LeaderWorkerSet serves on inference pools, team 'llm-pretrain''s: none"),
    ("lws", {"team": "recsys", "pool": "l40s-infer", "priority": "research"},
     "priority 'research' is not granted to team 'recsys'; granted: production-inference, training, development"),
    ("lws", {"replicas": 0}, "replicas 0 must be at least 1"),
    ("jobset", {"gpus": 16}, "gpus 16 is outside 1..8"),
])
def test_bad_input_names_the_field_and_the_choices(kind: str, kw: dict[str, Any], message: str) -> None:
    with pytest.raises(JobError) as err:
        objects(kind, **kw)
    assert message in str(err.value)


def test_a_kind_whose_controller_is_not_installed_is_refused() -> None:
    raw = platform_raw(STACK)
    raw.setdefault("addons", {})["kuberay"] = {"install": False}
    plan = build_plan(load_platform(raw, "us-east-1"), "us-east-1")
    with pytest.raises(JobError) as err:
        template(plan, JobRequest(kind="rayjob", **TRAIN))
    assert str(err.value) == ("kind 'rayjob' needs KubeRay, which this stack does not install (addons.kuberay.install); "
                              "kinds here: job, jobset, trainjob, lws")


def test_a_ray_head_must_fit_the_cpu_only_allowance() -> None:
    raw = platform_raw(STACK)
    team = next(t for t in raw["teams"] if t["name"] == "llm-pretrain")
    team["limits"] = {"cpu": 2, "memoryGiB": 32}
    plan = build_plan(load_platform(raw, "us-east-1"), "us-east-1")
    with pytest.raises(JobError) as err:
        template(plan, JobRequest(kind="rayjob", **TRAIN))
    assert "within team 'llm-pretrain''s CPU-only allowance of 2 CPU and 32Gi: raise teams[].limits.cpu and memoryGiB" \
        in str(err.value)


def test_the_cli_prints_a_list_and_refuses_an_unknown_kind(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["job", "--stack", STACK, "--kind", "helm", "--team", "llm-pretrain", "--pool", "h100-train",
                 "--gpus", "8"]) == EXIT_INVALID
    assert "kind 'helm' is not a template; kinds: job, jobset, trainjob, rayjob, lws" in capsys.readouterr().err


# --- a tenant's refusals for the new kinds, by rule ---------------------------------------------------------


def _pod_specs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    s = obj["spec"]
    if obj["kind"] == "JobSet":
        return [r["template"]["spec"]["template"]["spec"] for r in s["replicatedJobs"]]
    if obj["kind"] == "TrainJob":
        return [r["template"]["spec"]["template"]["spec"]
                for p in s["runtimePatches"] for r in p["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]]
    if obj["kind"] == "RayJob":
        return [g["template"]["spec"] for g in s["rayClusterSpec"]["workerGroupSpecs"]]
    return [s["leaderWorkerTemplate"][role]["spec"] for role in ("leaderTemplate", "workerTemplate")]


def workload(kind: str) -> dict[str, Any]:
    return copy.deepcopy(objects(kind)[0])


NEW_KINDS = ["jobset", "trainjob", "rayjob", "lws"]


@pytest.mark.parametrize("kind", NEW_KINDS)
def test_a_wrong_queue_is_refused_by_the_queue_name_rule(kind: str) -> None:
    obj = workload(kind)
    obj["metadata"]["labels"][cv.QUEUE_NAME_LABEL] = "fast-lane"
    (message,) = refused_by(obj, cv.TENANT_WORKLOAD_POLICY)
    assert f"queue fast-lane (label {cv.QUEUE_NAME_LABEL}) {RULES['queue-name']}" in message
    del obj["metadata"]["labels"][cv.QUEUE_NAME_LABEL]
    assert RULES["queue-label"] in refused_by(obj, cv.TENANT_WORKLOAD_POLICY)[0]


@pytest.mark.parametrize("kind", NEW_KINDS)
def test_a_forged_priority_is_refused_by_the_priority_rule(kind: str) -> None:
    obj = workload(kind)
    forged = cv.priority_class_name("system-critical")
    obj["metadata"]["labels"][cv.PRIORITY_CLASS_LABEL] = forged
    (message,) = refused_by(obj, cv.TENANT_PRIORITY_POLICY)
    assert f"priority class {forged} {RULES['priority-label']}" in message


@pytest.mark.parametrize("kind", NEW_KINDS)
def test_an_unlisted_image_is_refused_by_the_image_rule(kind: str) -> None:
    obj = workload(kind)
    if kind == "trainjob":
        obj["spec"]["trainer"]["image"] = "evil.example/miner:1"
    else:
        _pod_specs(obj)[0]["containers"][0]["image"] = "evil.example/miner:1"
    (message,) = refused_by(obj, cv.TENANT_IMAGE_POLICY)
    assert RULES["image-registry"] in message and "not allowed: evil.example/miner:1;" in message


@pytest.mark.parametrize("kind", NEW_KINDS)
def test_a_host_path_is_refused_by_the_host_path_rule(kind: str) -> None:
    obj = workload(kind)
    _pod_specs(obj)[0]["volumes"].append({"name": "host", "hostPath": {"path": "/"}})
    (message,) = refused_by(obj, cv.TENANT_WORKLOAD_POLICY)
    assert message.startswith(RULES["host-path"])


@pytest.mark.parametrize("kind", NEW_KINDS)
def test_another_teams_pool_is_refused_by_the_team_pools_rule(kind: str) -> None:
    obj = workload(kind)
    other = "a100-mig" if kind != "lws" else "h100-train"  # pools the team has no quota on
    _pod_specs(obj)[0]["nodeSelector"] = {cv.POOL: other}
    (message,) = refused_by(obj, cv.TENANT_WORKLOAD_POLICY)
    team = obj["metadata"]["labels"][cv.TEAM]
    pools = ", ".join(next(t for t in plan_of(STACK).teams if t.name == team).pool_names)
    assert f"that is not team {team}'s: a team {RULES['team-pools']} ({pools})" in message


def test_another_teams_pool_by_required_node_affinity_is_refused_too() -> None:
    obj = workload("jobset")
    spec = _pod_specs(obj)[0]
    del spec["nodeSelector"]
    spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": cv.POOL, "operator": "In", "values": ["h100-train", "a100-mig"]}]}]}}}
    (message,) = refused_by(obj, cv.TENANT_WORKLOAD_POLICY)
    assert RULES["team-pools"] in message
    spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0][
        "matchExpressions"][0]["values"] = ["h100-train", "h200-train"]
    assert refusals(obj) == {}


def test_trainjob_gpus_are_held_to_the_gpu_rules() -> None:
    """A TrainJob has no pod template: its trainer's resources and its runtime patches are read in place."""
    obj = workload("trainjob")
    obj["spec"]["trainer"]["resourcesPerNode"]["limits"][cv.GPU_RESOURCE] = "0.5"
    assert [m for m in refused_by(obj, cv.TENANT_WORKLOAD_POLICY) if RULES["whole-gpus"] in m]
    obj = workload("trainjob")
    _pod_specs(obj)[0]["tolerations"] = []
    (message,) = refused_by(obj, cv.TENANT_WORKLOAD_POLICY)
    assert message.startswith(RULES["gpu-toleration"])
    obj = workload("trainjob")
    _pod_specs(obj)[0]["tolerations"] = []
    obj["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]["template"][
        "spec"]["template"]["metadata"]["annotations"] = {}
    got = refused_by(obj, cv.TENANT_WORKLOAD_POLICY)
    assert any(RULES["topology"] in m for m in got) and any(m.startswith(RULES["gpu-toleration"]) for m in got)


def test_a_gpu_less_trainjob_may_not_tolerate_the_gpu_taint_and_counts_against_the_allowance() -> None:
    obj = workload("trainjob")
    limits = obj["spec"]["trainer"]["resourcesPerNode"]["limits"]
    for key in (cv.GPU_RESOURCE, cv.EFA_RESOURCE):
        del limits[key]
    got = refused_by(obj, cv.TENANT_WORKLOAD_POLICY)
    assert any(m.startswith(RULES["no-gpu-no-toleration"]) for m in got)
    assert any(m.startswith(RULES["no-gpu-no-topology"]) for m in got)
    # 2 nodes x the p5 share of CPU: far above the 8 CPU allowance.
    assert any(m.startswith(RULES["cpu-only-allowance"]) for m in got)


def test_jobsets_and_rayjobs_set_a_bounded_ttl() -> None:
    limit = plan_of(STACK).job_max_ttl_seconds
    for kind in ("jobset", "rayjob"):
        obj = workload(kind)
        obj["spec"]["ttlSecondsAfterFinished"] = limit + 1
        (message,) = refused_by(obj, cv.TENANT_JOB_CLEANUP_POLICY)
        assert f"{RULES['job-ttl']}, at most {limit} seconds" in message
    # A TrainJob has no TTL to set (Trainer v2.2.1); the cleanup policy does not match it.
    assert decide(workload("trainjob"), cv.TENANT_JOB_CLEANUP_POLICY) is None


def test_the_controllers_objects_are_exempt_from_the_queue_rule_only() -> None:
    """The JobSet a TrainJob's controller makes carries no queue label: exempt as a controller's object, from the
    controller's service account in its own namespace; the tenant making the same JobSet is refused."""
    obj = workload("jobset")
    del obj["metadata"]["labels"][cv.QUEUE_NAME_LABEL]
    obj["metadata"]["ownerReferences"] = [{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                           "name": "pretrain", "uid": "u", "controller": True}]
    trainer = f"system:serviceaccount:{cv.TRAINER_NAMESPACE}:kubeflow-trainer-controller-manager"
    assert decide(obj, cv.TENANT_WORKLOAD_POLICY, user=trainer).denials == []
    assert RULES["queue-label"] in decide(obj, cv.TENANT_WORKLOAD_POLICY).denials[0]
