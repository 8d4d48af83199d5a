"""The GitHub workflows pass actionlint (built from Go modules by scripts/toolchain) and call real targets."""

from __future__ import annotations

import re
import subprocess

import yaml

from tests.conftest import ROOT, require_tools

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
def test_actionlint_is_clean() -> None:
    (actionlint,) = require_tools("actionlint")
    result = subprocess.run([str(actionlint), *map(str, WORKFLOWS)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


ACTION_INPUTS: dict[str, list[str]] = yaml.safe_load((ROOT / "tests" / "fixtures" / "actions" / "inputs.yaml").read_text())


def workflow(name: str) -> dict:
    return yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text())


def steps_using(job: dict, action: str) -> list[dict]:
    return [s for s in job["steps"] if str(s.get("uses", "")).split("@")[0] == action]


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
    assert w["comment-on-pr"] is True and w["edit-pr-comment"] is True
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
        for job in yaml.safe_load(wf.read_text())["jobs"].values():
            for step in job["steps"]:
                uses = step.get("uses", "")
                if uses in ACTION_INPUTS:
                    assert set(step.get("with", {})) <= set(ACTION_INPUTS[uses]), (wf.name, uses)


def test_prod_deploys_only_after_staging_behind_an_environment() -> None:
    deploy = yaml.safe_load((ROOT / ".github" / "workflows" / "deploy.yml").read_text())
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
    preview = yaml.safe_load((ROOT / ".github" / "workflows" / "preview.yml").read_text())
    job = preview["jobs"]["whatif"]
    runs = "\n".join(str(s.get("run", "")) for s in job["steps"])
    assert 'git show "$BASE:Pulumi.$STACK.yaml"' in runs
    assert "simulate --stack \"whatif/base-$STACK.yaml\"" in runs and '--compare "Pulumi.$STACK.yaml"' in runs
    assert "--skip-unless-queues-changed" in runs and "make venv toolchain" in runs
    comment = next(s for s in job["steps"] if "sticky-pull-request-comment" in str(s.get("uses", "")))
    assert comment["with"]["path"] == "whatif/compare.md"
    assert comment["with"]["header"] == "whatif-${{ matrix.stack }}"   # one comment per stack, edited each push


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
