"""The security checklist's new controls on the live platform, each asserted by what the API server says
or records: where images may come from (containers, init containers, `kubectl debug`'s ephemeral
containers), that tenant Jobs are cleaned up after they finish, and the audit trail of a tenant's job
submission and of a secret read it was denied.

Requests are made with the team member's client certificate, as a user's kubeconfig holds it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable

from gpu_platform import conventions as cv
from gpu_platform.images import DEFAULT_ALLOWED_REGISTRIES
from tests.live.conftest import Live, wait_for
from tests.live.test_tenants import pod, refused

IMAGES = f"ValidatingAdmissionPolicy '{cv.TENANT_IMAGE_POLICY}'"
CLEANUP = f"ValidatingAdmissionPolicy '{cv.TENANT_JOB_CLEANUP_POLICY}'"
ELSEWHERE = "registry.example.com/payload/miner:1.0"


def test_a_job_whose_image_comes_from_elsewhere_is_refused_and_told_the_allowed_registries(live: Live) -> None:
    (job,) = live.job("beta", "train", 1, "foreign-image")
    job["spec"]["template"]["spec"]["containers"][0]["image"] = ELSEWHERE
    err = refused(live, job, "beta")
    assert IMAGES in err
    assert f"images must come from a registry team beta may pull from; not allowed: {ELSEWHERE}" in err
    assert f"allowed registries: {', '.join(DEFAULT_ALLOWED_REGISTRIES)}" in err


def test_an_init_container_cannot_bring_the_image_in_either(live: Live) -> None:
    (job,) = live.job("beta", "train", 1, "foreign-init")
    spec = job["spec"]["template"]["spec"]
    spec["initContainers"] = [{**spec["containers"][0], "name": "fetch", "image": "evil.example/fetch",
                               "resources": {}}]
    err = refused(live, job, "beta")
    # Docker's reading of a name: evil.example is a registry host, so it is nobody's official image.
    assert IMAGES in err and "not allowed: evil.example/fetch;" in err
    # A name without a registry is Docker Hub's: docker.io/<name>, and for one part docker.io/library/<name>.
    spec["initContainers"][0]["image"] = "someone/tool:2"
    err = refused(live, job, "beta")
    assert IMAGES in err and "not allowed: docker.io/someone/tool:2;" in err


def test_a_team_may_pull_from_its_own_registry_and_only_that_team(live: Live) -> None:
    own = "registry.example.com/alpha/trainer:3.1"
    (job,) = live.job("alpha", "train", 1, "own-registry")
    job["spec"]["template"]["spec"]["containers"][0]["image"] = own
    out = live.kubectl("create", "--dry-run=server", "-f", "-", as_team="alpha", input=json.dumps(job), check=False)
    assert out.returncode == 0, out.stderr
    (other,) = live.job("beta", "train", 1, "borrowed-registry")
    other["spec"]["template"]["spec"]["containers"][0]["image"] = own
    err = refused(live, other, "beta")
    assert IMAGES in err and f"not allowed: {own};" in err
    # A host that merely starts with an allowed one is another host.
    job["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.example.com.evil.example/alpha/x:1"
    err = refused(live, job, "alpha")
    assert IMAGES in err and "not allowed: registry.example.com.evil.example/alpha/x:1;" in err


def _running_pod(live: Live, name: str) -> str:
    """A CPU-only pod of alpha's, admitted by Kueue on the CPU-only flavor and Running on a simulated node."""
    ns = live.namespace("alpha")
    live.create(pod(ns, name), as_team="alpha")
    wait_for(lambda: live.get("pod", name, "-n", ns).get("status", {}).get("phase") == "Running", 60,
             f"pod {name} Running")
    return ns


def test_kubectl_debug_cannot_attach_an_ephemeral_container_from_elsewhere(platform: Live) -> None:
    """`kubectl debug` adds an ephemeral container through the pods/ephemeralcontainers subresource. Team
    members may not (Kubernetes' `edit` role does not grant it); whoever may, a cluster admin included, is
    held to the namespace's registries, because the image policy matches that update too."""
    live = platform
    ns = _running_pod(live, "debug-target")
    debug = ("debug", "-n", ns, "debug-target", "--profile=baseline")
    member = live.kubectl(*debug, "--image=busybox:1.37", "-c", "dbg-member", as_team="alpha", check=False)
    assert member.returncode != 0 and 'cannot patch resource "pods/ephemeralcontainers"' in member.stderr
    out = live.kubectl(*debug, f"--image={ELSEWHERE}", "-c", "dbg", check=False)
    assert out.returncode != 0
    assert IMAGES in out.stderr and f"not allowed: {ELSEWHERE};" in out.stderr
    ok = live.kubectl(*debug, "--image=busybox:1.37", "-c", "dbg-ok", check=False)
    assert ok.returncode == 0, ok.stderr
    names = [c["name"] for c in live.get("pod", "debug-target", "-n", ns)["spec"].get("ephemeralContainers", [])]
    assert names == ["dbg-ok"]


def test_a_job_without_a_ttl_or_with_a_long_one_is_refused(live: Live) -> None:
    limit = live.plan.job_max_ttl_seconds
    (job,) = live.job("beta", "train", 1, "lingering")
    del job["spec"]["ttlSecondsAfterFinished"]
    err = refused(live, job, "beta")
    assert CLEANUP in err and f"must set spec.ttlSecondsAfterFinished, at most {limit} seconds" in err
    job["spec"]["ttlSecondsAfterFinished"] = limit + 1
    err = refused(live, job, "beta")
    assert CLEANUP in err and f"at most {limit} seconds" in err
    (ok,) = live.job("beta", "train", 1, "tidy")
    assert ok["spec"]["ttlSecondsAfterFinished"] == live.plan.job_ttl_seconds


def test_a_cronjob_template_without_a_ttl_is_refused(live: Live) -> None:
    (job,) = live.job("beta", "train", 1, "nightly")
    del job["spec"]["ttlSecondsAfterFinished"]
    cron = {"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "nightly", "namespace": live.namespace("beta")},
            "spec": {"schedule": "0 3 * * *", "jobTemplate": {"metadata": {"labels": job["metadata"]["labels"]},
                                                              "spec": job["spec"]}}}
    err = refused(live, cron, "beta")
    assert CLEANUP in err and "spec.jobTemplate.spec.ttlSecondsAfterFinished" in err


def test_a_ttl_cannot_be_removed_after_submission(platform: Live) -> None:
    live = platform
    live.submit("beta", "train", 1, "keeps-ttl")
    ns = live.namespace("beta")
    out = live.kubectl("patch", "job", "keeps-ttl", "-n", ns, "--type=json",
                       "-p", '[{"op": "remove", "path": "/spec/ttlSecondsAfterFinished"}]', as_team="beta", check=False)
    assert out.returncode != 0 and CLEANUP in out.stderr


def _audit_events(live: Live) -> Callable[[Callable[[dict[str, Any]], bool]], list[dict[str, Any]]]:
    path = Path(live.cluster.driver.script("audit-log", timeout=60).stdout.strip())

    def matching(pred: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
        if not path.exists():
            return []
        return [e for e in map(json.loads, path.read_text().splitlines()) if pred(e)]
    return matching


def test_a_tenants_job_submission_and_a_denied_secret_read_are_in_the_audit_log(platform: Live) -> None:
    live = platform
    events = _audit_events(live)
    user = "alpha-member"  # tests/live/conftest.py: each team's member certificate
    ns, other = live.namespace("alpha"), live.namespace("beta")
    live.submit("alpha", "train", 1, "audited")
    out = live.kubectl("get", "secret", "anything", "-n", other, as_team="alpha", check=False)
    assert out.returncode != 0 and f'cannot get resource "secrets" in API group "" in the namespace "{other}"' in out.stderr, \
        out.stderr

    def submitted(e: dict[str, Any]) -> bool:
        ref = e.get("objectRef", {})
        return (e["user"]["username"] == user and e["verb"] == "create" and ref.get("resource") == "jobs"
                and ref.get("namespace") == ns and ref.get("name") == "audited")

    (entry,) = wait_for(lambda: events(submitted), 30, "the job submission in the audit log")
    assert entry["level"] == "Request" and entry["stage"] == "ResponseComplete"
    assert entry["responseStatus"]["code"] == 201
    assert "alpha-engineers" in entry["user"]["groups"]
    # The submitted body is recorded: what ran, from which image.
    assert entry["requestObject"]["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox:1.37"

    def denied(e: dict[str, Any]) -> bool:
        ref = e.get("objectRef", {})
        return (e["user"]["username"] == user and e["verb"] == "get" and ref.get("resource") == "secrets"
                and ref.get("namespace") == other)

    (read,) = wait_for(lambda: events(denied), 30, "the denied secret read in the audit log")
    assert read["level"] == "Metadata" and "requestObject" not in read and "responseObject" not in read
    assert read["responseStatus"]["code"] == 403
    assert read["annotations"]["authorization.k8s.io/decision"] == "forbid"
    assert read["objectRef"]["name"] == "anything"
    # Nothing outside the policy is recorded: the member's read of its own LocalQueue is not an event.
    live.kubectl("get", "localqueues", "-n", ns, as_team="alpha")
    time.sleep(1)
    assert not events(lambda e: e["user"]["username"] == user and e.get("objectRef", {}).get("resource") == "localqueues")
