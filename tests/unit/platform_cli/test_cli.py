"""The CLI as a user (or CI) runs it: exit codes, messages, formats, determinism; never a traceback.

`main()` is what `python -m platform_cli` runs (`sys.exit(main())`): called in-process, an exception
that escapes it (what a user would see as a traceback) fails the test. One render runs the module in its
own interpreter (tests/conftest.py `cli_render`), which also covers the `-m` entry point.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from platform_cli import cli
from platform_cli.cli import main
from tests.conftest import CLI_RENDER_STACK, STACKS, rendered, stack_doc


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
    platform["teams"][0]["quotas"]["h100-train"]["units"] = 1000
    platform["teams"][1]["cohort"] = "nowhere"
    assert main(["validate", str(_write(tmp_path, doc))]) == 2
    err = capsys.readouterr().err
    assert "teams[0].quotas.h100-train.units" in err and "teams[1].cohort" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("content,fragment", [
    ("config:\n  gpu-platform:platform: {environment: prod\n", "invalid YAML at line"),
    ("config:\n  aws:region: us-east-1\n", "no 'gpu-platform:platform' key"),
    ("", "is empty"),
    ("- just\n- a list\n", "must be a mapping"),
    ("config: 3\n", "no 'config:' mapping"),
    ("config:\n  gpu-platform:platform: [1, 2]\n", "must be a mapping"),
])
def test_broken_files_exit_2_without_traceback(tmp_path: Path, content: str, fragment: str, capsys) -> None:
    assert main(["validate", str(_write(tmp_path, content))]) == 2
    err = capsys.readouterr().err
    assert fragment in err
    assert "Traceback" not in err


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


def test_bad_format_is_a_usage_error(capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["plan", "--stack", "prod", "--format", "html"])
    assert exited.value.code == 2 and "invalid choice" in capsys.readouterr().err


def test_render_is_deterministic_and_integral(tmp_path: Path, cli_render) -> None:
    """The CLI's render in its own process equals the session's render of the same stack written the same
    way: two independent runs (different processes, hash seeds, registration timing) give identical files."""
    from harness.render import write
    from tests.conftest import rendered

    result = cli_render.wait()
    assert result.returncode == 0, result.stderr
    assert f"{CLI_RENDER_STACK}: wrote " in result.stdout and "Traceback" not in result.stderr
    outs = [cli_render.out, tmp_path / "session"]
    write(rendered(CLI_RENDER_STACK), outs[1])
    a, b = (o / "resources.json" for o in outs)
    assert a.read_bytes() == b.read_bytes()
    ma = sorted(p.name for p in (outs[0] / "manifests").iterdir())
    assert ma == sorted(p.name for p in (outs[1] / "manifests").iterdir())
    for name in ma:
        assert (outs[0] / "manifests" / name).read_bytes() == (outs[1] / "manifests" / name).read_bytes()
    resources = json.loads(a.read_text())
    assert resources == sorted(resources, key=lambda r: (r["type"], r["name"]))
    assert all(set(r) == {"type", "name", "parent", "inputs"} for r in resources)
    # floats from protobuf written back as ints (versions that contain "4.0" are not floats)
    assert "4.0" not in a.read_text().replace("v26.7.0", "").replace("v1.64.0-eksbuild.1", "")


def test_render_invalid_stack_registers_nothing(tmp_path: Path, monkeypatch, capsys) -> None:
    doc = json.loads(json.dumps(stack_doc("local")))
    doc["config"]["gpu-platform:platform"]["pools"][0]["capacity"]["min"] = 99
    (tmp_path / "Pulumi.broken.yaml").write_text(yaml.safe_dump(doc))
    monkeypatch.chdir(tmp_path)  # `--stack broken` is found in the working directory, as a user's would be
    assert main(["render", "--stack", "broken", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "pools[0].capacity.min" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_nodes_match_the_pools(capsys) -> None:
    assert main(["nodes", "--stack", "local"]) == 0
    nodes = json.loads(capsys.readouterr().out)["items"]
    mig = [n for n in nodes if n["metadata"]["labels"].get("gpu-platform.io/pool") == "notebooks"]
    assert len(mig) == 1 and mig[0]["status"]["capacity"]["nvidia.com/mig-1g.10gb"] == "56"


def test_check_warns_that_an_existing_cluster_must_enforce_network_policies(capsys, monkeypatch) -> None:
    # `check` reads the session's render of the stack (the same run_program over the same file, made once by
    # the render worker); the CLI's own render path runs in its own interpreter in the test above.
    monkeypatch.setattr(cli, "_render", rendered)
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


def test_inventory_without_a_readable_state_exits_2_naming_the_command(monkeypatch, tmp_path: Path, capsys) -> None:
    """The runbook's step 5 (`inventory`) on a stack the backend does not have: an error, not a traceback."""
    fake = tmp_path / "pulumi"
    fake.write_text("#!/bin/sh\necho 'error: no stack named nosuch found' >&2\nexit 255\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    assert main(["inventory", "--stack", "nosuch"]) == 2
    assert "error: `pulumi stack export --stack nosuch` failed: error: no stack named nosuch found" in capsys.readouterr().err
