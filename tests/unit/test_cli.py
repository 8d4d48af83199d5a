"""The CLI as a user (or CI) runs it: exit codes, messages, formats, determinism; never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from platform_cli.cli import main
from tests.conftest import ROOT, STACKS, stack_doc


def run_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "platform_cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("stack", STACKS)
def test_validate_every_stack(stack: str, capsys) -> None:
    assert main(["validate", "--stack", stack]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{stack}: valid:") and "pools" in out


def _write(tmp_path: Path, doc) -> Path:
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    return path


def test_invalid_config_exits_2_with_every_path(tmp_path: Path, capsys) -> None:
    doc = json.loads(json.dumps(stack_doc("prod")))
    platform = doc["config"]["gpu-platform:platform"]
    platform["teams"][0]["quotas"]["h100-train"]["gpus"] = 1000
    platform["teams"][1]["cohort"] = "nowhere"
    assert main(["validate", str(_write(tmp_path, doc))]) == 2
    err = capsys.readouterr().err
    assert "teams[0].quotas.h100-train.gpus" in err and "teams[1].cohort" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("content,fragment", [
    ("config:\n  gpu-platform:platform: {environment: prod\n", "invalid YAML at line"),
    ("config:\n  aws:region: us-east-1\n", "no 'gpu-platform:platform' key"),
    ("", "is empty"),
    ("- just\n- a list\n", "must be a mapping"),
    ("config: 3\n", "no 'config:' mapping"),
    ("config:\n  gpu-platform:platform: [1, 2]\n", "must be a mapping"),
])
def test_broken_files_exit_2_without_traceback(tmp_path: Path, content: str, fragment: str) -> None:
    result = run_cli("validate", str(_write(tmp_path, content)))
    assert result.returncode == 2, result.stderr
    assert fragment in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_file_and_unknown_stack(tmp_path: Path, capsys) -> None:
    assert main(["validate", str(tmp_path / "nope.yaml")]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert main(["plan", "--stack", "qa"]) == 2
    err = capsys.readouterr().err
    assert "no stack 'qa'" in err and "prod" in err


def test_plan_table(capsys) -> None:
    assert main(["plan", "--stack", "prod"]) == 0
    out = capsys.readouterr().out
    for heading in ("Pools", "Teams by pool", "Allocation", "Warnings"):
        assert heading in out
    assert "h100-train" in out and "p5.48xlarge" in out and "224 nvidia.com/mig-1g.10gb" in out


def test_plan_markdown_is_a_pr_comment(capsys) -> None:
    assert main(["plan", "--stack", "prod", "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("## gpu-platform plan: `prod`")
    assert "| pool | accelerator |" in out and "|---|" in out


def test_plan_json_matches_the_plan(capsys) -> None:
    assert main(["plan", "--stack", "prod", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    pools = {p["name"]: p for p in data["pools"]}
    assert pools["h100-train"]["allocated"] == 96 + 32 and pools["h100-train"]["units"] == 128
    assert pools["h100-train"]["allocation"] == 1.0
    assert data["migStrategy"] == "mixed"


def test_bad_format_is_a_usage_error() -> None:
    result = run_cli("plan", "--stack", "prod", "--format", "html")
    assert result.returncode == 2 and "invalid choice" in result.stderr


def test_render_is_deterministic_and_integral(tmp_path: Path) -> None:
    """The CLI's render in its own process equals the session's render of the same stack written the same
    way: two independent runs (different processes, hash seeds, registration timing) give identical files."""
    from harness.render import write
    from tests.conftest import rendered

    outs = [tmp_path / "cli", tmp_path / "session"]
    result = run_cli("render", "--stack", "prod", "--out", str(outs[0]))
    assert result.returncode == 0, result.stderr
    write(rendered("prod"), outs[1])
    a, b = (o / "resources.json" for o in outs)
    assert a.read_bytes() == b.read_bytes()
    ma = sorted(p.name for p in (outs[0] / "manifests").iterdir())
    assert ma == sorted(p.name for p in (outs[1] / "manifests").iterdir())
    for name in ma:
        assert (outs[0] / "manifests" / name).read_bytes() == (outs[1] / "manifests" / name).read_bytes()
    resources = json.loads(a.read_text())
    assert resources == sorted(resources, key=lambda r: (r["type"], r["name"]))
    assert all(set(r) == {"type", "name", "parent", "inputs"} for r in resources)
    assert "4.0" not in a.read_text().replace("v26.7.0", "")  # floats from protobuf written back as ints


def test_render_invalid_stack_registers_nothing(tmp_path: Path) -> None:
    doc = json.loads(json.dumps(stack_doc("local")))
    doc["config"]["gpu-platform:platform"]["pools"][0]["capacity"]["min"] = 99
    (tmp_path / "Pulumi.broken.yaml").write_text(yaml.safe_dump(doc))
    result = run_cli("render", "--stack", "broken", "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert result.returncode == 2
    assert "pools[0].capacity.min" in result.stderr
    assert not (tmp_path / "out").exists()


def test_nodes_match_the_pools(capsys) -> None:
    assert main(["nodes", "--stack", "local"]) == 0
    nodes = json.loads(capsys.readouterr().out)["items"]
    mig = [n for n in nodes if n["metadata"]["labels"].get("gpu-platform.io/pool") == "notebooks"]
    assert len(mig) == 1 and mig[0]["status"]["capacity"]["nvidia.com/mig-1g.10gb"] == "56"


def test_check_warns_that_an_existing_cluster_must_enforce_network_policies(capsys) -> None:
    assert main(["check", "--stack", "local"]) == 0
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if x.startswith("warning:")]
    assert "'existing'" in line and "enableNetworkPolicy" in line


def test_plan_shows_what_the_stack_manages_on_a_real_cluster(capsys) -> None:
    assert main(["plan", "--stack", "prod", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["vpcCniNetworkPolicy"] is True and data["efaDevicePlugin"] is True
    assert data["systemPool"] is None, "prod attaches to a cluster that has its own system nodes"
    per_node = {p["name"]: p["efaDevicesPerNode"] for p in data["pools"]}
    assert per_node["h100-train"] == 32 and per_node["l40s-infer"] == 0
    assert main(["plan", "--stack", "local", "--format", "json"]) == 0
    local = json.loads(capsys.readouterr().out)
    assert local["vpcCniNetworkPolicy"] is False and local["efaDevicePlugin"] is False
