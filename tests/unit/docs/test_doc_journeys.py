"""The docs' runnable journeys are found where the live test looks for them (world: the pages and scripts on
disk, nothing run but `bash -n`).

tests/live/test_doc_journeys.py runs every block a page marks with `<!-- journey: NAME -->` against a live
cluster. If a marker went missing, that block would silently stop being run; if a page grew a block without
expectations, it would run unchecked. So the count of marked blocks per page is held here to literal numbers,
and every marked block must at least parse and call subcommands `scripts/local-cluster` has.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from localcluster.cli import COMMANDS
from tests.conftest import ROOT
from tests.doc_journeys import EXPECTED, JOURNEYS, PAGES, MarkerError, blocks, journey, missing_or_forbidden, script


def test_each_journey_has_the_blocks_the_live_test_expects() -> None:
    counts = {name: len(journey(name)) for name in JOURNEYS}
    assert counts == {"readme": 3, "try-locally": 8, "why-wait": 7}
    assert counts == {name: len(expected) for name, expected in EXPECTED.items()}


def test_no_page_marks_a_journey_the_live_test_does_not_run() -> None:
    marked = {(b.journey, b.page) for page in PAGES for b in blocks(page)}
    assert marked == {(name, page) for name, page in JOURNEYS.items()}


def test_each_journey_sets_its_kubeconfig_before_its_first_kubectl() -> None:
    """A journey starts in a fresh shell: the first block that runs kubectl must point it at the cluster, and must
    not be retried (it submits work)."""
    for name in JOURNEYS:
        first = next(b for b in journey(name) if "kubectl" in b.code)
        assert not first.retry and "KUBECONFIG=$(scripts/local-cluster " in first.code, first.where


def test_the_pages_that_deploy_are_run_from_make_up_to_make_down() -> None:
    """The live test starts no cluster of its own: the README's first block and try-locally's are the pages'
    `make up` and activate, and try-locally, the last journey, ends with its clean-up's `make down`."""
    for name in ("readme", "try-locally"):
        first = journey(name)[0]
        assert first.runs_make and first.code.startswith("make up ") and ". .venv/bin/activate" in first.code, first.where
    assert list(JOURNEYS)[-1] == "try-locally"
    assert journey("try-locally")[-1].make_targets == ["down"]
    assert not any(b.runs_make for b in journey("why-wait"))


def test_a_marker_without_a_shell_block_is_refused() -> None:
    page = ROOT / "docs" / "tasks" / "example.md"
    with pytest.raises(MarkerError, match=r"docs/tasks/example.md:3: .* not followed by a ```sh block"):
        blocks(page, "<!-- journey: readme -->\n\n```console\n$ make up\n```\n")
    (block,) = blocks(page, "text\n<!-- journey: readme, retry -->\n```sh\nkubectl get nodes\n```\n")
    assert (block.journey, block.retry, block.code, block.where, block.runs_make) == (
        "readme", True, "kubectl get nodes\n", "docs/tasks/example.md:4", False)
    (block,) = blocks(page, "<!-- journey: readme -->\n```sh\nmake up   # the stack\n. .venv/bin/activate\n```\n")
    assert block.runs_make and block.make_targets == ["up"]


def test_expected_output_can_say_what_must_not_appear() -> None:
    assert missing_or_forbidden("train-0 train-1", ["train-0", "!notebooks"]) == []
    assert missing_or_forbidden("kwok-notebooks-x", ["train-0", "!notebooks"]) == ["train-0", "!notebooks"]


def test_every_marked_block_is_valid_bash() -> None:
    for name in JOURNEYS:
        for block in journey(name):
            checked = subprocess.run(["bash", "-n"], input=block.code, text=True, capture_output=True, timeout=10)
            assert checked.returncode == 0, f"{block.where}: {checked.stderr}"


def test_every_local_cluster_subcommand_a_block_calls_exists() -> None:
    known = set(COMMANDS)   # what scripts/local-cluster's driver dispatches (localcluster/cli.py)
    used = {m for name in JOURNEYS for b in journey(name) for m in re.findall(r"scripts/local-cluster ([a-z-]+)", b.code)}
    assert used == {"kubeconfig", "user"} and used <= known, (used, sorted(known))


def test_a_journeys_blocks_share_one_shell_session(tmp_path: Path) -> None:
    """What the live test relies on: a variable set in one block is there in the next; a failing command, or a
    failing command before a pipe, fails its block, and a failed block leaves the session as it was."""
    env = {"PATH": "/usr/bin:/bin", "JOURNEY_STATE": str(tmp_path / "state.sh")}

    def run(code: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "-c", script(code)], env=env, text=True, capture_output=True, timeout=10)

    assert run('ALICE=$(echo users/alice.kubeconfig)\nexport KUBECONFIG=admin.kubeconfig\n').returncode == 0
    assert run('echo "$ALICE $KUBECONFIG"\n').stdout == "users/alice.kubeconfig admin.kubeconfig\n"
    assert run("false | cat\necho after\n").returncode != 0
    failed = run("ALICE=changed\nfalse\n")
    assert failed.returncode != 0 and run('echo "$ALICE"\n').stdout == "users/alice.kubeconfig\n"
