"""docs/tasks/pr-preview-in-ci.md against the workflow it describes and the replay's own limits (world: the
workflow file, the simulator's options and the page on disk).

The page is what a user reads before paying for the what-if job and before handing the workflow secrets; each
claim below is read from its source: the secrets the workflow references, its secrets provider, the local
stack's backend (once the real one, through `upsert`), Go's version, the cache's key, etcd's release, the tools
the what-if builds, the replay's wall-time target and ceiling, and what a fork's pull request gets.
"""

from __future__ import annotations

import functools
import re


from simulator.options import MAX_WALL_S, TARGET_WALL_S
from tests.conftest import ROOT, load_yaml

PAGE = ROOT / "docs" / "tasks" / "pr-preview-in-ci.md"
WORKFLOW = ROOT / ".github" / "workflows" / "preview.yml"


@functools.cache
def text() -> str:
    return " ".join(PAGE.read_text().split())


@functools.cache
def jobs() -> dict:
    return load_yaml(WORKFLOW.read_text())["jobs"]


def step(job: str, uses: str) -> dict:
    (found,) = [s for s in jobs()[job]["steps"] if str(s.get("uses", "")).startswith(uses + "@")]
    return found


def test_the_page_lists_the_secrets_the_workflow_reads() -> None:
    read = set(re.findall(r"secrets\.([A-Z_]+)", WORKFLOW.read_text()))
    table = set(re.findall(r"(?m)^  \| `([A-Z_]+)` \|", PAGE.read_text()))
    assert table == read == {"PULUMI_BACKEND_URL", "PULUMI_CONFIG_PASSPHRASE", "AWS_PREVIEW_ROLE_ARN"}


def test_the_stacks_need_the_passphrase_provider_the_workflow_uses() -> None:
    assert step("preview", "pulumi/actions")["with"]["secrets-provider"] == "passphrase"
    assert "`secrets-provider: passphrase`" in text() and "--secrets-provider passphrase" in text()


def test_the_local_stack_is_never_upserted_into_the_real_backend() -> None:
    w = step("preview", "pulumi/actions")["with"]
    assert w["upsert"] is True
    assert w["cloud-url"] == ("${{ matrix.stack == 'local' && format('file://{0}/local-backend', runner.temp) "
                              "|| secrets.PULUMI_BACKEND_URL }}")
    (local,) = [s for s in jobs()["preview"]["steps"] if s.get("if") == "matrix.stack == 'local'"]
    assert 'mkdir -p "$RUNNER_TEMP/local-backend"' in local["run"]
    assert "`file://$RUNNER_TEMP/local-backend`" in text()


def test_the_what_if_costs_the_page_names_are_the_workflows_and_the_replays() -> None:
    whatif = jobs()["whatif"]
    go = step("whatif", "actions/setup-go")["with"]["go-version"]
    assert f"Go {go}" in text()
    caches = {s["id"]: s["with"] for s in whatif["steps"] if str(s.get("uses", "")).startswith("actions/cache@")}
    assert "hashFiles('scripts/tools/*.sh', 'toolchain/**/go.sum')" in caches["tools"]["key"]
    assert "`scripts/tools/*.sh` and `toolchain/**/go.sum`" in text()
    action = load_yaml((ROOT / ".github" / "actions" / "etcd" / "action.yml").read_text())
    etcd = action["inputs"]["version"]["default"]
    assert f"etcd {etcd}, the official release (`etcd-v{etcd}-linux-amd64.tar.gz`, checked against its `SHA256SUMS`" in text()
    assert "apt-get" not in str(whatif["steps"]) and "no `apt-get`, no root" in text()
    (tools,) = [s["run"].split() for s in whatif["steps"] if str(s.get("run", "")).startswith("scripts/toolchain ")]
    assert f"(`scripts/toolchain {tools[1]} ... {tools[-1]}`), not the whole tool chain" in text()
    assert (TARGET_WALL_S, MAX_WALL_S) == (360.0, 600.0)
    assert f"about {TARGET_WALL_S / 60:g} minutes of wall time, up to {MAX_WALL_S / 60:g}" in text()
    assert "--synthetic 1" in str(whatif["steps"]) and "`--synthetic 1`" in text()


def test_the_page_says_what_a_fork_pull_request_gets_by_the_workflows_own_guard() -> None:
    """A fork's pull request gets no secrets: the page names the condition the workflow guards its secret-using
    steps with, and says what runs without them."""
    guard = "github.event.pull_request.head.repo.full_name == github.repository"
    assert f"if: matrix.stack != 'local' && {guard}" in WORKFLOW.read_text()
    assert f"(`{guard}`)" in text()
    assert "the what-if replay (it needs no secret), its deltas in the run's summary" in text()
    assert "for every other stack, no credentials and no `pulumi preview`" in text()
