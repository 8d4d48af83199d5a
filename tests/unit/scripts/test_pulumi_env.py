"""scripts/pulumi-env as a user runs it, with a stand-in `pulumi` that records what it is asked to do.

Connected machine: an official Pulumi CLI on PATH; the stack's provider plugins are installed with
`pulumi plugin install` at the versions the virtualenv's pinned packages declare, and nothing forbids
downloads. Offline: only the tool cache's pulumi; nothing is downloaded and a missing plugin is an error
that says what to do.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Callable, Iterator

import pytest

from tests.conftest import ROOT

FAKE_PULUMI = """#!/usr/bin/env bash
# Records its arguments and the environment that matters, one JSON line per call.
printf '{"args": "%s", "home": "%s", "no_download": "%s"}\\n' "$*" "${PULUMI_HOME:-}" \\
  "${PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION:-}" >> "$PULUMI_ENV_LOG"
"""


def fake_pulumi(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    exe = directory / "pulumi"
    exe.write_text(FAKE_PULUMI)
    exe.chmod(0o755)


Run = tuple[subprocess.CompletedProcess[str], list[dict]]


class Started:
    """`scripts/pulumi-env staging preview` started in `tmp_path`; result() waits for it and reads the calls the
    stand-in pulumi recorded."""

    def __init__(self, tmp_path: Path, path_dirs: list[Path], **env: str) -> None:
        self.log = tmp_path / "calls.jsonl"
        self.proc = subprocess.Popen([str(ROOT / "scripts" / "pulumi-env"), "staging", "preview"], cwd=ROOT,
                                     env=environment(tmp_path, self.log, path_dirs, **env), text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)

        self.done: Run | None = None

    def result(self) -> Run:
        if self.done is None:
            stdout, stderr = self.proc.communicate(timeout=60)
            calls = [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []
            self.done = subprocess.CompletedProcess(self.proc.args, self.proc.returncode, stdout, stderr), calls
        return self.done

    def stop(self) -> None:
        if self.done is None:
            self.proc.kill()
            self.proc.communicate()


def environment(tmp_path: Path, log: Path, path_dirs: list[Path], **env: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PULUMI_", "GPU_PLATFORM_"))}
    base.update({
        "PATH": ":".join([*map(str, path_dirs), "/usr/bin", "/bin"]),
        "GPU_PLATFORM_CACHE": str(tmp_path / "cache"),
        "PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}",
        "PULUMI_CONFIG_PASSPHRASE": "test",
        "PULUMI_ENV_LOG": str(log),
        **env,
    })
    return base


def pins() -> dict[str, str]:
    """The provider plugin versions pinned in requirements.txt (pulumi-<name>==<version>)."""
    out = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if line.startswith(("pulumi-aws==", "pulumi-kubernetes==")):
            name, version = line.split("==")
            out[name.removeprefix("pulumi-")] = version
    return out


def connected(tmp_path: Path) -> Started:
    official = tmp_path / "official-bin"
    fake_pulumi(official)
    return Started(tmp_path, [official])


def offline_without_the_aws_plugin(tmp_path: Path) -> Started:
    cache_bin = tmp_path / "cache" / "bin"
    fake_pulumi(cache_bin)
    # The tool chain built the Kubernetes provider; nothing can build the AWS one.
    (cache_bin / "pulumi-resource-kubernetes").write_text("#!/bin/sh\n")
    (cache_bin / "pulumi-resource-kubernetes").chmod(0o755)
    return Started(tmp_path, [cache_bin])


def offline_forced_beside_an_official_cli(tmp_path: Path) -> Started:
    official = tmp_path / "official-bin"
    fake_pulumi(official)
    return Started(tmp_path, [official], GPU_PLATFORM_OFFLINE="1")


CASES: dict[str, Callable[[Path], Started]] = {
    case.__name__: case for case in (connected, offline_without_the_aws_plugin, offline_forced_beside_an_official_cli)}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Started]]:
    """Every case's run, all started when the first test asks: each is a few bash and Python processes (the
    script asks `python -m platform_cli plugins`), and side by side they take about the time of one."""
    started = {name: case(tmp_path_factory.mktemp(name)) for name, case in CASES.items()}
    yield started
    for run in started.values():
        run.stop()


def test_connected_machine_installs_the_pinned_plugins_with_the_official_cli(runs: dict[str, Started]) -> None:
    result, calls = runs["connected"].result()
    assert result.returncode == 0, result.stderr
    installs = [c["args"] for c in calls if c["args"].startswith("plugin install")]
    assert installs == [f"plugin install resource kubernetes {pins()['kubernetes']}",
                        f"plugin install resource aws {pins()['aws']}"]
    preview = [c for c in calls if c["args"].startswith("preview")]
    assert preview and preview[0]["no_download"] == "" and preview[0]["home"] == "", \
        "the official CLI keeps its own PULUMI_HOME and may acquire plugins"


def test_offline_a_missing_aws_plugin_is_an_error_that_says_what_to_do(runs: dict[str, Started]) -> None:
    result, calls = runs["offline_without_the_aws_plugin"].result()
    assert result.returncode == 2
    assert f"plugin install resource aws {pins()['aws']} --file" in result.stderr
    assert "resource kubernetes" not in result.stderr, "a plugin on PATH is not missing"
    assert "install the Pulumi CLI" in result.stderr
    assert not any(c["args"].startswith(("plugin install", "preview")) for c in calls), "offline: nothing downloaded or run"


def test_offline_is_forced_even_with_an_official_cli(runs: dict[str, Started]) -> None:
    result, calls = runs["offline_forced_beside_an_official_cli"].result()
    assert result.returncode == 2 and "this run is offline" in result.stderr
    assert calls == []
