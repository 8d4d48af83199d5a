"""The security checklist's controls as the spec, the plan and the components state them (the real API
server's side is tests/live/test_security.py): identity, images, audit, cleanup."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from components import admission, node_pools
from components.identity import entry_name
from gpu_platform import audit, conventions as cv, images, jobs
from gpu_platform.kueue_config import controller_config
from gpu_platform.plan import build_plan
from gpu_platform.spec import SpecError, load_platform
from tests import cel
from tests.conftest import plan_of, platform_raw, rendered, spec_of
from tests.unit.components.stack_variants import switched_staging

ACCESS_ENTRY = "aws:eks/accessEntry:AccessEntry"
OIDC = "aws:eks/identityProviderConfig:IdentityProviderConfig"
EKS_CLUSTER = "aws:eks/cluster:Cluster"
VAP = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
ROLE = "arn:aws:iam::123456789012:role/llm-pretrain-ci"


def problems(raw: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(SpecError) as err:
        load_platform(raw)
    return {p.path: p.message for p in err.value.problems}


# --- images ---------------------------------------------------------------------------------------


IMAGE_REFS = [
    ("busybox:1.37", "docker.io/library/busybox:1.37"),
    ("docker.io/busybox", "docker.io/library/busybox"),
    ("someone/tool:2", "docker.io/someone/tool:2"),
    ("nvcr.io/nvidia/pytorch:24.01-py3", "nvcr.io/nvidia/pytorch:24.01-py3"),
    ("localhost/x", "localhost/x"),
    ("host:5000/a/b@sha256:" + "0" * 64, "host:5000/a/b@sha256:" + "0" * 64),
]


@pytest.mark.parametrize("image,ref", IMAGE_REFS)
def test_image_names_are_read_as_docker_reads_them(image: str, ref: str) -> None:
    assert images.normalize(image) == ref


def _image_review(spec: dict[str, Any], pod_spec: dict[str, Any], registries: list[str] | tuple[str, ...],
                  operation: str = "CREATE", sub_resource: str = "") -> tuple[dict[str, Any], cel.Decision]:
    """The image policy's variables and decision for a Pod in a namespace allowing `registries`."""
    ns = {"apiVersion": "v1", "kind": "Namespace",
          "metadata": {"name": "team-a", "labels": {cv.TEAM: "team-a", "kubernetes.io/metadata.name": "team-a"},
                       "annotations": {cv.ALLOWED_REGISTRIES_ANNOTATION: ",".join(registries)}}}
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team-a"}, "spec": pod_spec}
    request = cel.Request(kind="Pod", resource="pods", namespace="team-a", name="p", operation=operation,
                          sub_resource=sub_resource)
    decision = cel.review(spec, request, obj, old=obj if operation == "UPDATE" else None, namespace=ns)
    return decision.variables, decision


def test_the_admission_policy_reads_image_names_as_docker_does() -> None:
    """The CEL twin of images.normalize, evaluated on the same names: the policy judges what Docker pulls."""
    spec = admission.image_policy_spec(plan_of("local"))
    pod_spec = {"containers": [{"name": f"c{i}", "image": image} for i, (image, _) in enumerate(IMAGE_REFS)]}
    values, _ = _image_review(spec, pod_spec, images.DEFAULT_ALLOWED_REGISTRIES)
    assert [str(i) for i in values["images"]] == [ref for _, ref in IMAGE_REFS]


ALLOWLIST_CASES = [
    ("busybox:1.37", True),                                    # docker.io/library
    ("nvcr.io/nvidia/pytorch:24.01-py3", True),
    ("registry.k8s.io/kueue/kueue:v0.19.2", True),
    ("registry.k8s.io/pause:3.10", False),                     # only Kueue's repository is the platform's
    ("someone/tool:2", False),                                 # Docker Hub, but not an official image
    ("nvcr.io/nvidiaevil/x:1", False),                         # a prefix only at a path boundary
    ("nvcr.io.evil.example/nvidia/x:1", False),
]


@pytest.mark.parametrize("image,ok", ALLOWLIST_CASES)
def test_the_default_allowlist_is_the_platforms_registries_and_official_images(image: str, ok: bool) -> None:
    assert images.allowed(image, images.DEFAULT_ALLOWED_REGISTRIES) is ok


def test_the_admission_policy_allows_what_the_allowlist_allows() -> None:
    spec = admission.image_policy_spec(plan_of("local"))
    pod_spec = {"containers": [{"name": f"c{i}", "image": image} for i, (image, _) in enumerate(ALLOWLIST_CASES)]}
    values, decision = _image_review(spec, pod_spec, images.DEFAULT_ALLOWED_REGISTRIES)
    assert [str(i) for i in values["deniedImages"]] == [images.normalize(i) for i, ok in ALLOWLIST_CASES if not ok]
    (message,) = decision.denials
    assert "not allowed: " + ", ".join(images.normalize(i) for i, ok in ALLOWLIST_CASES if not ok) in message
    # A repository entry matches its tags and digests; a host entry only paths below it.
    entries = ["docker.io/library/busybox", "registry.example.com"]
    values, _ = _image_review(spec, {"containers": [
        {"name": "a", "image": "busybox:1.37"}, {"name": "b", "image": "busybox@sha256:" + "a" * 64},
        {"name": "c", "image": "registry.example.com:5000/x"}, {"name": "d", "image": "registry.example.com/x"}]},
        entries)
    assert [str(i) for i in values["deniedImages"]] == ["registry.example.com:5000/x"]


def test_a_repository_entry_matches_its_tags_and_digests_a_host_entry_only_paths() -> None:
    assert images.allowed("docker.io/library/busybox:1.37", ["docker.io/library/busybox"])
    assert images.allowed("busybox@sha256:" + "a" * 64, ["docker.io/library/busybox"])
    assert not images.allowed("registry.example.com:5000/x", ["registry.example.com"])


@pytest.mark.parametrize("entry,words", [
    ("https://registry.example.com", "without https://"),
    ("library", "names no registry host"),
    ("registry.example.com/", "trailing '/'"),
    ("Registry.Example.com", "lowercase"),
])
def test_bad_registry_entries_are_refused_with_the_form(entry: str, words: str) -> None:
    raw = platform_raw("local")
    raw["images"] = {"allowedRegistries": [entry]}
    assert words in problems(raw)["images.allowedRegistries"]
    raw = platform_raw("local")
    raw["teams"][0]["allowedRegistries"] = [entry]
    assert words in problems(raw)["teams[0].allowedRegistries"]


def test_team_namespaces_carry_the_platforms_and_the_teams_registries() -> None:
    raw = platform_raw("local")
    raw["teams"][0]["allowedRegistries"] = ["registry.example.com/vision"]
    plan = build_plan(load_platform(raw))
    vision, nlp = plan.teams[0], plan.teams[1]
    assert vision.namespace_annotations[cv.ALLOWED_REGISTRIES_ANNOTATION] == ",".join(
        [*images.DEFAULT_ALLOWED_REGISTRIES, "registry.example.com/vision"])
    assert nlp.allowed_registries == images.DEFAULT_ALLOWED_REGISTRIES


def test_the_image_policy_checks_every_container_kind_and_the_debug_subresource() -> None:
    spec = admission.image_policy_spec(plan_of("local"))
    rules = spec["matchConstraints"]["resourceRules"]
    assert {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods/ephemeralcontainers"],
            "operations": ["UPDATE"]} in rules
    assert any("jobs" in r["resources"] for r in rules)
    assert len(spec["validations"]) == 1  # digests are not required on this stack
    foreign = "registry.example.com/payload/miner:1.0"
    ok = {"name": "ok", "image": "busybox:1.37"}
    for field, operation, sub in (("containers", "CREATE", ""), ("initContainers", "CREATE", ""),
                                  ("ephemeralContainers", "UPDATE", "ephemeralcontainers")):
        pod_spec: dict[str, Any] = {"containers": [ok]}
        pod_spec[field] = [*pod_spec.get(field, []), {"name": "x", "image": foreign}]
        _, decision = _image_review(spec, pod_spec, images.DEFAULT_ALLOWED_REGISTRIES, operation, sub)
        (message,) = decision.denials
        assert f"not allowed: {foreign};" in message, field
    _, decision = _image_review(spec, {"containers": [ok], "initContainers": [ok]}, images.DEFAULT_ALLOWED_REGISTRIES)
    assert decision.allowed


def test_digests_are_required_only_when_the_platform_says_so() -> None:
    raw = platform_raw("local")
    raw["images"] = {"requireDigests": True}
    plan = build_plan(load_platform(raw))
    spec = admission.image_policy_spec(plan)
    (_, digests) = spec["validations"]
    _, decision = _image_review(spec, {"containers": [{"name": "a", "image": "busybox:1.37"}]},
                                images.DEFAULT_ALLOWED_REGISTRIES)
    assert len(decision.denials) == 1 and "busybox" in decision.denials[0]
    _, decision = _image_review(spec, {"containers": [{"name": "a", "image": "busybox@sha256:" + "0" * 64}]},
                                images.DEFAULT_ALLOWED_REGISTRIES)
    assert decision.allowed, decision.denials
    with pytest.raises(jobs.JobError, match="requires image@sha256"):
        jobs.job(plan, jobs.JobRequest(team="vision", pool="train", gpus=1))
    pinned = "busybox@sha256:" + "0" * 64
    (job,) = jobs.job(plan, jobs.JobRequest(team="vision", pool="train", gpus=1, image=pinned))
    assert job["spec"]["template"]["spec"]["containers"][0]["image"] == pinned


def test_the_job_template_refuses_an_image_admission_would_refuse() -> None:
    with pytest.raises(jobs.JobError, match="not from an allowed registry; allowed: registry.k8s.io/kueue"):
        jobs.job(plan_of("local"), jobs.JobRequest(team="vision", pool="train", gpus=1,
                                                    image="registry.example.com/x:1"))


def test_the_image_policy_carries_the_platform_list_for_the_policy_pack() -> None:
    (vap,) = [r for r in rendered("prod").by_type(VAP) if r.inputs["metadata"]["name"] == cv.TENANT_IMAGE_POLICY]
    assert vap.inputs["metadata"]["annotations"][cv.PLATFORM_REGISTRIES_ANNOTATION] == ",".join(
        plan_of("prod").image_registries)


# --- cleanup --------------------------------------------------------------------------------------


def test_tenant_jobs_must_set_a_bounded_ttl_and_the_template_sets_the_stacks() -> None:
    raw = platform_raw("local")
    raw["jobs"] = {"ttlSecondsAfterFinished": 600, "maxTtlSecondsAfterFinished": 7200}
    plan = build_plan(load_platform(raw))
    spec = admission.job_cleanup_policy_spec(plan)
    (v,) = spec["validations"]
    assert "at most 7200 seconds" in v["message"]
    for ttl, allowed in ((7200, True), (7201, False), (None, False)):
        body: dict[str, Any] = {"template": {"spec": {"containers": []}}}
        if ttl is not None:
            body["ttlSecondsAfterFinished"] = ttl
        job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "team-a"}, "spec": body}
        request = cel.Request(kind="Job", group="batch", resource="jobs", namespace="team-a", name="j")
        decision = cel.review(spec, request, job, namespace={"metadata": {"name": "team-a"}})
        assert decision.matched and decision.allowed is allowed, (ttl, decision.denials)
    assert spec["matchConstraints"]["resourceRules"][0]["resources"] == ["cronjobs", "jobs"]
    (job,) = jobs.job(plan, jobs.JobRequest(team="vision", pool="train", gpus=1))
    assert job["spec"]["ttlSecondsAfterFinished"] == 600
    raw["jobs"] = {"ttlSecondsAfterFinished": 9000, "maxTtlSecondsAfterFinished": 7200}
    assert "above maxTtlSecondsAfterFinished 7200" in problems(raw)["jobs"]


def test_kueue_deletes_jobs_it_deactivated_and_leaves_finished_workloads_to_their_jobs() -> None:
    retention = controller_config(plan_of("local"))["objectRetentionPolicies"]
    assert retention == {"workloads": {"afterDeactivatedByKueue": f"{plan_of('local').job_ttl_seconds}s"}}


def test_every_pool_says_where_checkpoints_go() -> None:
    for pool in plan_of("prod").pools:
        assert "wiped with the node" in pool.scratch or "deleted with the node" in pool.scratch
        assert "checkpoints to object storage (S3), FSx for Lustre or an EBS-backed PersistentVolumeClaim" in pool.scratch
    nvme = next(p for p in plan_of("prod").pools if p.local_nvme)
    assert f"{nvme.nvme_gb} GB local NVMe instance store (eks node groups: RAID0" in nvme.scratch


# --- audit ----------------------------------------------------------------------------------------


def test_the_audit_policy_records_exactly_the_four_kinds_of_request() -> None:
    policy = audit.audit_policy(spec_of("prod").addons.kueue.integrations)
    rules = policy["rules"]
    assert rules[0] == {"level": "Metadata", "resources": [{"group": "", "resources": ["secrets"]}]}
    assert set(rules[1]["resources"][0]["resources"]) >= {"pods/exec", "pods/attach", "pods/ephemeralcontainers"}
    submissions = {(g["group"], r) for g in rules[2]["resources"] for r in g["resources"]}
    assert {("batch", "jobs"), ("batch", "cronjobs"), ("jobset.x-k8s.io", "jobsets"), ("", "pods")} <= submissions
    assert rules[2]["level"] == "Request" and rules[2]["verbs"] == ["create"]
    assert {g["group"] for g in rules[4]["resources"]} >= {"rbac.authorization.k8s.io", "admissionregistration.k8s.io"}
    assert rules[-1] == {"level": "None"}
    assert "Request" not in yaml.safe_dump(rules[0]) and "&id" not in yaml.safe_dump(policy)


def test_a_created_cluster_sends_the_audit_trail_to_cloudwatch() -> None:
    r = switched_staging()
    (cluster,) = r.by_type(EKS_CLUSTER)
    assert cluster.inputs["enabledClusterLogTypes"] == list(audit.REQUIRED_EKS_LOG_TYPES)


def test_the_audit_trail_cannot_be_switched_off() -> None:
    raw = platform_raw("prod")
    raw["cluster"]["controlPlaneLogs"] = ["api"]
    assert "missing: audit, authenticator" in problems(raw)["cluster.controlPlaneLogs"]


def test_an_attached_cluster_without_its_audit_logs_is_warned_about(monkeypatch: pytest.MonkeyPatch) -> None:
    said: list[str] = []
    monkeypatch.setattr(node_pools.pulumi.log, "warn", lambda msg, *a, **k: said.append(msg))
    node_pools.warn_missing_logs("ml-prod", ["api", "audit"])
    node_pools.warn_missing_logs("ml-prod", ["audit", "authenticator"])
    (msg,) = said
    assert "'ml-prod' does not send its authenticator control-plane logs" in msg
    assert any(w.startswith("cluster.create is false: the stack cannot turn on control-plane logging")
               for w in plan_of("prod").warnings)


# --- identity -------------------------------------------------------------------------------------


def test_prods_roles_become_access_entries_into_their_groups() -> None:
    entries = {r.inputs["principalArn"]: r for r in rendered("prod").by_type(ACCESS_ENTRY)}
    assert entries[ROLE].inputs["kubernetesGroups"] == ["llm-engineers"]
    assert entries[ROLE].inputs["type"] == "STANDARD"
    assert entries[ROLE].inputs["tags"][cv.TAG_ACCESS_OWNER] == "llm-pretrain"
    admin = entries["arn:aws:iam::123456789012:role/platform-admins"]
    assert admin.inputs["kubernetesGroups"] == ["platform-admins"]
    assert entries[ROLE].name == entry_name(ROLE)
    (oidc,) = rendered("prod").by_type(OIDC)
    assert oidc.inputs["oidc"]["issuerUrl"] == "https://idp.example.com"
    assert oidc.inputs["oidc"]["groupsClaim"] == "groups"


@pytest.mark.parametrize("group,words", [
    ("platform-admins", "is a platform admin group (cluster.platformAdmins)"),
    ("system:masters", "may not be mapped into the Kubernetes system group"),
    ("vision-engineers", "is not one of team 'llm-pretrain''s groups"),
])
def test_a_team_role_cannot_be_mapped_outside_the_teams_own_groups(group: str, words: str) -> None:
    raw = platform_raw("prod")
    raw["teams"][0]["accessEntries"] = [{"principalArn": ROLE, "groups": [group]}]
    assert words in problems(raw)["teams[0].accessEntries[0].groups[0]"]


@pytest.mark.parametrize("arn", [
    "arn:aws:iam::12345:role/x",                               # not 12 digits
    "arn:aws:iam::123456789012:user/alice",                    # a user, not a role
    "arn:aws:sts::123456789012:assumed-role/x/session",        # a session
    "llm-engineers",
])
def test_only_iam_role_arns_are_accepted(arn: str) -> None:
    raw = platform_raw("prod")
    raw["teams"][0]["accessEntries"] = [{"principalArn": arn, "groups": ["llm-engineers"]}]
    assert "is not an IAM role ARN" in problems(raw)["teams[0].accessEntries[0].principalArn"]


def test_one_access_entry_per_principal_and_no_system_groups_in_teams() -> None:
    raw = platform_raw("prod")
    raw["teams"][1]["accessEntries"] = [{"principalArn": ROLE, "groups": ["finetune-engineers"]}]
    raw["teams"][1]["groups"]["viewer"] = ["system:authenticated"]
    found = problems(raw)
    assert "already has an access entry (teams[0].accessEntries[0])" in found["teams[1].accessEntries[0].principalArn"]
    assert "is a Kubernetes system group" in found["teams[1].groups.viewer[0]"]


def test_oidc_prefixes_stay_out_of_the_system_namespace_and_identity_is_eks_only() -> None:
    raw = platform_raw("prod")
    raw["cluster"]["identity"]["oidc"]["groupsPrefix"] = "system:oidc:"
    assert "contains 'system:'" in problems(raw)["cluster.identity.oidc.groupsPrefix"]
    raw = platform_raw("local")
    raw["cluster"]["identity"] = {"platformAdminRoles": [ROLE]}
    assert "only for provider 'eks'" in problems(raw)["cluster.identity"]


def test_groups_nothing_maps_people_into_are_warned_about() -> None:
    raw = platform_raw("staging")
    raw["cluster"].pop("identity")
    raw["teams"][0]["accessEntries"] = [{"principalArn": ROLE, "groups": ["llm-engineers"]}]
    warnings = build_plan(load_platform(raw)).warnings
    assert "team 'llm-pretrain': no access entry (teams[].accessEntries) or OIDC provider (cluster.identity.oidc) " \
           "maps anyone into llm-leads" in warnings
    raw = platform_raw("prod")
    raw["cluster"]["identity"]["oidc"]["groupsPrefix"] = "oidc:"
    assert any("lack the OIDC groupsPrefix 'oidc:'" in w for w in build_plan(load_platform(raw)).warnings)
