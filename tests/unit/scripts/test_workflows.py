"""The GitHub workflows pass actionlint (built from Go modules by scripts/toolchain) and call real targets."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml

from localcluster import toolcache
from tests.conftest import ROOT, load_yaml, require_tools

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
def test_actionlint_is_clean() -> None:
    (actionlint,) = require_tools("actionlint")
    result = subprocess.run([str(actionlint), *map(str, WORKFLOWS)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


ACTION_INPUTS: dict[str, list[str]] = load_yaml((ROOT / "tests" / "fixtures" / "actions" / "inputs.yaml").read_text())


def workflow(name: str) -> dict:
    return load_yaml((ROOT / ".github" / "workflows" / name).read_text())


def steps_using(job: dict, action: str) -> list[dict]:
    return [s for s in job["steps"] if str(s.get("uses", "")).split("@")[0] == action]


# A pull request whose branch is in this repository; a fork's gets no secrets, no OIDC token and a read-only token.
SAME_REPO = "github.event.pull_request.head.repo.full_name == github.repository"
# The local action both workflows take etcd from.
ETCD_ACTION = "./.github/actions/etcd"


def sdk_pin() -> str:
    (line,) = [x for x in (ROOT / "requirements.txt").read_text().splitlines() if x.startswith("pulumi==")]
    return line.split("==")[1]


def test_preview_comments_the_plan_and_runs_the_pack_per_stack() -> None:
    job = workflow("preview.yml")["jobs"]["preview"]
    steps = "\n".join(str(s.get("run", "")) for s in job["steps"])
    assert "plan --stack \"$STACK\" --format markdown" in steps
    assert "gh pr comment" not in steps, "a new comment per push buries the last one"
    (plan_comment,) = steps_using(job, "marocchino/sticky-pull-request-comment")
    assert "matrix.stack" in plan_comment["with"]["header"], "one plan comment per stack, edited in place"
    assert plan_comment["with"]["path"] == "plan.md"
    (preview,) = steps_using(job, "pulumi/actions")
    w = preview["with"]
    assert (w["command"], w["policyPacks"], w["stack-name"]) == ("preview", "policies", "${{ matrix.stack }}")
    assert w["comment-on-pr"] == "${{ " + SAME_REPO + " }}" and w["edit-pr-comment"] is True
    assert w["diff"] is True


def test_every_pulumi_run_uses_the_official_cli_at_the_sdk_pin_with_the_pack() -> None:
    runs = [(name, job_name, s) for name in ("preview.yml", "deploy.yml")
            for job_name, job in workflow(name)["jobs"].items() for s in steps_using(job, "pulumi/actions")]
    assert {(n, j) for n, j, _ in runs} == {("preview.yml", "preview"), ("deploy.yml", "staging"), ("deploy.yml", "prod"),
                                            ("deploy.yml", "drift")}
    for name, job_name, step in runs:
        assert str(step["with"]["pulumi-version"]) == sdk_pin(), (name, job_name)
        assert step["with"]["policyPacks"] == "policies", (name, job_name)
    deploy = workflow("deploy.yml")["jobs"]
    assert {deploy[j]["steps"][-1]["with"]["stack-name"] for j in ("staging", "prod")} == {"staging", "prod"}
    assert all(s["with"]["command"] == "up" for n, j, s in runs if n == "deploy.yml" and j != "drift")


def test_action_inputs_exist_in_the_actions() -> None:
    """GitHub ignores an input an action does not declare, so a typo (policyPack) would silently drop the
    policy pack: every input passed must be one the pinned major version declares."""
    for wf in WORKFLOWS:
        for job in load_yaml(wf.read_text())["jobs"].values():
            for step in job["steps"]:
                uses = step.get("uses", "")
                if uses in ACTION_INPUTS:
                    assert set(step.get("with", {})) <= set(ACTION_INPUTS[uses]), (wf.name, uses)


def test_prod_deploys_only_after_staging_behind_an_environment() -> None:
    deploy = load_yaml((ROOT / ".github" / "workflows" / "deploy.yml").read_text())
    jobs = deploy["jobs"]
    assert jobs["prod"]["needs"] == "staging" and jobs["prod"]["environment"] == "prod"
    assert jobs["staging"]["environment"] == "staging"


def test_workflows_call_scripts_and_targets_that_exist() -> None:
    makefile = (ROOT / "Makefile").read_text()
    for wf in WORKFLOWS:
        text = wf.read_text()
        for line in re.findall(r"run: make ([a-z -]+)", text):
            for target in line.split():
                assert re.search(rf"^{target}:", makefile, re.M), (wf.name, target)
        for script in re.findall(r"(scripts/[a-z-]+)", text):
            assert (ROOT / script).exists(), (wf.name, script)


def test_the_preview_replays_changed_queues_against_the_base_branch_and_comments_the_deltas() -> None:
    job = workflow("preview.yml")["jobs"]["whatif"]
    runs = "\n".join(str(s.get("run", "")) for s in job["steps"])
    assert 'git show "$BASE:Pulumi.$STACK.yaml"' in runs
    assert "simulate --stack \"whatif/base-$STACK.yaml\"" in runs and '--compare "Pulumi.$STACK.yaml"' in runs
    assert "--skip-unless-queues-changed" in runs and "make venv" in runs
    comment = next(s for s in job["steps"] if "sticky-pull-request-comment" in str(s.get("uses", "")))
    assert comment["with"]["path"] == "whatif/compare.md"
    assert comment["with"]["header"] == "whatif-${{ matrix.stack }}"   # one comment per stack, edited each push


def test_the_what_if_decides_whether_the_queues_changed_before_it_builds_anything() -> None:
    steps = workflow("preview.yml")["jobs"]["whatif"]["steps"]
    (check,) = [i for i, s in enumerate(steps) if s.get("id") == "queues"]
    assert "from simulator.cli import queueing" in steps[check]["run"]
    costly = [s for s in steps[check + 1:]
              if s.get("uses", "").split("@")[0] in ("actions/cache", "actions/setup-go", ETCD_ACTION)
              or any(word in str(s.get("run", "")) for word in ("scripts/toolchain", "simulate"))]
    assert len(costly) == 5   # the tool cache, Go, etcd (its own cache and download), the tools, the replay
    assert all(s["if"].startswith("steps.queues.outputs.verdict == 'changed'") for s in costly)
    assert not any("scripts/toolchain" in str(s.get("run", "")) or "make venv toolchain" in str(s.get("run", ""))
                   for s in steps[:check])


def test_the_what_if_builds_only_the_tools_the_replay_runs_and_installs_nothing_with_apt() -> None:
    from localcluster.prerequisites import ENGINE
    from localcluster.tools import CORE_TOOLS
    from simulator.cli import TOOLS as SIMULATE_CHECKS

    job = workflow("preview.yml")["jobs"]["whatif"]
    (line,) = [s["run"] for s in job["steps"] if str(s.get("run", "")).startswith("scripts/toolchain ")]
    built = line.split()[1:]
    assert built == ["pulumi", "pulumi-language-python", "pulumi-resource-kubernetes", "etcd", "kube-apiserver", "kueue",
                     "kwok", "karpenter-kwok", "helm"]
    assert set(built) == set(ENGINE) | set(CORE_TOOLS)
    # scripts/tools/kube-apiserver.sh builds the controller manager and the scheduler with the API server.
    assert set(SIMULATE_CHECKS) - {"kube-controller-manager", "kube-scheduler"} <= set(built)
    runs = "\n".join(str(s.get("run", "")) for s in job["steps"])
    assert "apt-get" not in runs and "sudo" not in runs


def test_etcd_comes_from_its_release_checked_and_cached_by_version_in_both_workflows() -> None:
    action = load_yaml((ROOT / ".github" / "actions" / "etcd" / "action.yml").read_text())
    assert action["inputs"]["version"]["default"] == "3.5.24"   # k8s.io/kubernetes v1.33.13 kubeadm DefaultEtcdVersion
    cache, download, on_path = action["runs"]["steps"]
    assert cache["uses"] == "actions/cache@v4" and cache["with"] == {
        "path": "${{ runner.tool_cache }}/etcd/${{ inputs.version }}/x64", "key": "etcd-${{ runner.os }}-v${{ inputs.version }}"}
    assert download["if"] == "steps.cache.outputs.cache-hit != 'true'"
    assert 'grep " $tarball\\$" SHA256SUMS | sha256sum -c -' in download["run"]
    assert "etcd-io/etcd/releases/download/v$ETCD_VERSION/$tarball" in download["run"]
    assert on_path["run"] == 'echo "$RUNNER_TOOL_CACHE/etcd/$ETCD_VERSION/x64" >> "$GITHUB_PATH"'
    whatif = workflow("preview.yml")["jobs"]["whatif"]
    (etcd,) = steps_using(whatif, ETCD_ACTION)
    assert etcd["if"] == "steps.queues.outputs.verdict == 'changed'"
    test = workflow("deploy.yml")["jobs"]["test"]
    assert len(steps_using(test, ETCD_ACTION)) == 1
    runs = "\n".join(str(s.get("run", "")) for s in test["steps"])
    assert "apt-get" not in runs
    # The real node's lane needs root; sudo's secure_path would drop the PATH that has etcd and Go.
    assert test["steps"][-1]["run"] == 'sudo env "PATH=$PATH" "HOME=$HOME" CI=true make test'


def test_the_what_if_caches_the_tool_chain_and_sets_up_go_only_without_it() -> None:
    job = workflow("preview.yml")["jobs"]["whatif"]
    caches = {s.get("id"): s["with"] for s in steps_using(job, "actions/cache")}
    assert caches["tools"] == {
        "path": "~/" + toolcache.DEFAULT_CACHE.relative_to(Path.home()).as_posix(),
        "key": "toolchain-${{ runner.os }}-${{ hashFiles('scripts/tools/*.sh', 'toolchain/**/go.sum') }}",
        "restore-keys": "toolchain-${{ runner.os }}-"}
    (go,) = steps_using(job, "actions/setup-go")
    assert go["if"] == "steps.queues.outputs.verdict == 'changed' && steps.tools.outputs.cache-hit != 'true'"


def test_a_fork_pull_request_runs_no_step_that_needs_a_secret_or_a_write_token() -> None:
    """GitHub gives a fork's pull request no secrets, no OIDC token and a read-only GITHUB_TOKEN: each step that
    reads a secret, assumes the cloud role or comments runs only for a branch of this repository (the local
    stack's preview needs none of them and runs for forks too, without its comment)."""
    preview = workflow("preview.yml")
    assert "secrets." not in str(preview["jobs"]["preview"].get("env", {}))
    guarded = {(job_name, s.get("name") or s["uses"]): s.get("if") for job_name, job in preview["jobs"].items()
               for s in job["steps"] if "secrets." in str(s) or str(s.get("uses", "")).split("@")[0] in
               ("marocchino/sticky-pull-request-comment", "aws-actions/configure-aws-credentials")}
    assert guarded == {
        ("preview", "the plan as this stack's pull-request comment"):
            "always() && hashFiles('plan.md') != '' && " + SAME_REPO,
        ("preview", "cloud credentials"): "matrix.stack != 'local' && " + SAME_REPO,
        ("preview", "pulumi preview with the policy pack"): "matrix.stack == 'local' || " + SAME_REPO,
        ("whatif", "the what-if deltas as this stack's pull-request comment"):
            "hashFiles('whatif/compare.md') != '' && " + SAME_REPO,
    }
    (pulumi,) = steps_using(preview["jobs"]["preview"], "pulumi/actions")
    assert pulumi["env"]["PULUMI_CONFIG_PASSPHRASE"] == (
        "${{ matrix.stack == 'local' && 'local-only-passphrase' || secrets.PULUMI_CONFIG_PASSPHRASE }}")
    # What a fork gets instead: the plan and the deltas in the run's summary, and a notice for each real stack.
    summaries = [s for job in preview["jobs"].values() for s in job["steps"] if "GITHUB_STEP_SUMMARY" in str(s.get("run", ""))]
    assert [s["if"] for s in summaries] == [
        "always() && hashFiles('plan.md') != ''",
        "matrix.stack != 'local' && github.event.pull_request.head.repo.full_name != github.repository",
        "hashFiles('whatif/compare.md') != ''"]


def test_a_scheduled_run_fails_on_drift_of_every_deployed_stack_and_deploys_nothing() -> None:
    deploy = workflow("deploy.yml")
    on = deploy.get("on") or deploy.get(True)   # YAML 1.1 reads the key `on` as true
    assert on["schedule"][0]["cron"]
    jobs = deploy["jobs"]
    assert jobs["drift"]["if"] == "github.event_name == 'schedule'"
    assert all(jobs[j]["if"] == "github.event_name != 'schedule'" for j in ("test",)), "a schedule must not deploy"
    assert jobs["staging"]["needs"] == "test"   # and so skipped with it
    assert jobs["drift"]["strategy"]["matrix"]["stack"] == ["staging", "prod"]
    (check,) = steps_using(jobs["drift"], "pulumi/actions")
    w = check["with"]
    assert (w["command"], w["refresh"], w["expect-no-changes"]) == ("preview", True, True)
    assert w["stack-name"] == "${{ matrix.stack }}"
