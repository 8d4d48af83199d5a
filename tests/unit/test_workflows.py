"""The GitHub workflows pass actionlint (built from Go modules by scripts/toolchain) and call real targets."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
ACTIONLINT = Path(os.environ.get("GPU_PLATFORM_CACHE", Path.home() / ".cache" / "gpu-platform")) / "bin" / "actionlint"


def test_actionlint_is_clean() -> None:
    if not ACTIONLINT.exists():
        message = f"{ACTIONLINT} missing: run scripts/toolchain actionlint"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    result = subprocess.run([str(ACTIONLINT), *map(str, WORKFLOWS)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_preview_comments_the_plan_and_runs_the_pack_per_stack() -> None:
    preview = yaml.safe_load((ROOT / ".github" / "workflows" / "preview.yml").read_text())
    steps = "\n".join(str(s.get("run", "")) for s in preview["jobs"]["preview"]["steps"])
    assert "plan --stack \"$STACK\" --format markdown" in steps
    assert "preview --policy-pack policies --diff" in steps
    assert "gh pr comment" in steps


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
