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


def run(tmp_path: Path, path_dirs: list[Path], **env: str) -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    log = tmp_path / "calls.jsonl"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PULUMI_", "GPU_PLATFORM_"))}
    base.update({
        "PATH": ":".join([*map(str, path_dirs), "/usr/bin", "/bin"]),
        "GPU_PLATFORM_CACHE": str(tmp_path / "cache"),
        "PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}",
        "PULUMI_CONFIG_PASSPHRASE": "test",
        "PULUMI_ENV_LOG": str(log),
        **env,
    })
    result = subprocess.run([str(ROOT / "scripts" / "pulumi-env"), "staging", "preview"], cwd=ROOT, env=base,
                            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return result, calls


def pins() -> dict[str, str]:
    """The provider plugin versions pinned in requirements.txt (pulumi-<name>==<version>)."""
    out = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if line.startswith(("pulumi-aws==", "pulumi-kubernetes==")):
            name, version = line.split("==")
            out[name.removeprefix("pulumi-")] = version
    return out


def test_connected_machine_installs_the_pinned_plugins_with_the_official_cli(tmp_path: Path) -> None:
    official = tmp_path / "official-bin"
    fake_pulumi(official)
    result, calls = run(tmp_path, [official])
    assert result.returncode == 0, result.stderr
    installs = [c["args"] for c in calls if c["args"].startswith("plugin install")]
    assert installs == [f"plugin install resource kubernetes {pins()['kubernetes']}",
                        f"plugin install resource aws {pins()['aws']}"]
    preview = [c for c in calls if c["args"].startswith("preview")]
    assert preview and preview[0]["no_download"] == "" and preview[0]["home"] == "", \
        "the official CLI keeps its own PULUMI_HOME and may acquire plugins"


def test_offline_a_missing_aws_plugin_is_an_error_that_says_what_to_do(tmp_path: Path) -> None:
    cache_bin = tmp_path / "cache" / "bin"
    fake_pulumi(cache_bin)
    # The tool chain built the Kubernetes provider; nothing can build the AWS one.
    (cache_bin / "pulumi-resource-kubernetes").write_text("#!/bin/sh\n")
    (cache_bin / "pulumi-resource-kubernetes").chmod(0o755)
    result, calls = run(tmp_path, [cache_bin])
    assert result.returncode == 2
    assert f"plugin install resource aws {pins()['aws']} --file" in result.stderr
    assert "resource kubernetes" not in result.stderr, "a plugin on PATH is not missing"
    assert "install the Pulumi CLI" in result.stderr
    assert not any(c["args"].startswith(("plugin install", "preview")) for c in calls), "offline: nothing downloaded or run"


def test_offline_is_forced_even_with_an_official_cli(tmp_path: Path) -> None:
    official = tmp_path / "official-bin"
    fake_pulumi(official)
    result, calls = run(tmp_path, [official], GPU_PLATFORM_OFFLINE="1")
    assert result.returncode == 2 and "this run is offline" in result.stderr
    assert calls == []
