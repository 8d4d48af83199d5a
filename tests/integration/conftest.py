"""Real components only: the Pulumi CLI, our Python language host, the Kubernetes provider, etcd and
kube-apiserver, all from the tool cache (`scripts/toolchain`). Under CI a missing tool fails the test;
elsewhere it skips with the command that builds it.

Each session gets its own file backend, its own local cluster (state directory and ports apart from a
user's `make up` cluster) and stops that cluster at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.conftest import ROOT

CACHE = Path(os.environ.get("GPU_PLATFORM_CACHE", Path.home() / ".cache" / "gpu-platform"))
BIN = CACHE / "bin"
VENV_BIN = ROOT / ".venv" / "bin"
LOCAL_PASSPHRASE = "local-only-passphrase"  # documented default, local stack only
ENGINE_TOOLS = ("pulumi", "pulumi-language-python", "pulumi-resource-kubernetes")
CLUSTER_TOOLS = ("etcd", "kube-apiserver", "kube-controller-manager")
# Apart from the defaults of `scripts/local-cluster` (16443/23790), so a user's cluster keeps running.
TEST_APISERVER_PORT = os.environ.get("GPU_PLATFORM_TEST_APISERVER_PORT", "26443")
TEST_ETCD_PORT = os.environ.get("GPU_PLATFORM_TEST_ETCD_PORT", "33790")

# Timings of the real tools, for the closing note and the README (printed at the end of the session).
TIMINGS: dict[str, float] = {}


def require(tools: tuple[str, ...]) -> None:
    missing = [t for t in tools if not (BIN / t).exists()]
    if not missing:
        return
    message = f"missing {', '.join(missing)} in {BIN}: run scripts/toolchain"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def run(cmd: list[str], env: dict[str, str], timeout: float = 900, check: bool = True,
        input: str | None = None) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, input=input)
    if check and result.returncode != 0:
        raise AssertionError(
            f"{' '.join(cmd)} exited {result.returncode}\n--- stdout\n{result.stdout[-6000:]}\n--- stderr\n{result.stderr[-6000:]}"
        )
    return result


def base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PULUMI_", "KUBECONFIG"))}
    env["PATH"] = f"{VENV_BIN}:{BIN}:{env.get('PATH', '')}"
    env["GPU_PLATFORM_PYTHON"] = str(VENV_BIN / "python")
    return env


@dataclass
class Cluster:
    state: Path
    env: dict[str, str]

    @property
    def kubeconfig(self) -> Path:
        return self.state / "admin.kubeconfig"

    def kubectl(self, *args: str, check: bool = True, input: str | None = None,
                kubeconfig: Path | None = None) -> subprocess.CompletedProcess[str]:
        return run(["kubectl", "--kubeconfig", str(kubeconfig or self.kubeconfig), *args],
                   self.env, timeout=120, check=check, input=input)

    def get(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)

    def user(self, name: str, *groups: str) -> Path:
        out = run([str(ROOT / "scripts" / "local-cluster"), "user", name, *groups], self.env, timeout=60)
        return Path(out.stdout.strip().splitlines()[-1])


@dataclass
class Engine:
    """The real CLI against a file backend of this session."""

    env: dict[str, str]
    timings: dict[str, float] = field(default_factory=dict)

    def pulumi(self, *args: str, check: bool = True, timeout: float = 900,
               extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        env = {**self.env, **(extra_env or {})}
        return run([str(BIN / "pulumi"), *args, "--non-interactive"], env, timeout=timeout, check=check)

    def timed(self, label: str, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
        started = time.perf_counter()
        result = self.pulumi(*args, **kw)
        TIMINGS[label] = round(time.perf_counter() - started, 1)
        return result

    def ensure_stack(self, stack: str, config_file: Path | None = None) -> None:
        """Create the stack in this session's backend. For a stack whose config lives outside the repo,
        `stack init` still writes the passphrase salt into Pulumi.<stack>.yaml in the project: move it
        into the config file so the checkout stays clean."""
        if self.pulumi("stack", "select", stack, check=False).returncode == 0:
            return
        project_file = ROOT / f"Pulumi.{stack}.yaml"
        existed = project_file.exists()
        self.pulumi("stack", "init", stack, "--secrets-provider", "passphrase")
        if config_file is not None and not existed and project_file.exists():
            salt = project_file.read_text()
            project_file.unlink()
            config_file.write_text(config_file.read_text().rstrip("\n") + "\n" + salt)


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    require(CLUSTER_TOOLS)
    state = tmp_path_factory.mktemp("cluster")
    env = base_env()
    env.update({
        "LOCAL_CLUSTER_DIR": str(state),
        "LOCAL_CLUSTER_APISERVER_PORT": TEST_APISERVER_PORT,
        "LOCAL_CLUSTER_ETCD_PORT": TEST_ETCD_PORT,
        "GPU_PLATFORM_CACHE": str(CACHE),
    })
    script = str(ROOT / "scripts" / "local-cluster")
    started = time.perf_counter()
    run([script, "start"], env, timeout=600)
    TIMINGS["cluster start"] = round(time.perf_counter() - started, 1)
    c = Cluster(state=state, env={**env, "KUBECONFIG": str(state / "admin.kubeconfig")})
    try:
        yield c
    finally:
        run([script, "stop"], env, timeout=120, check=False)
        left = subprocess.run(["pgrep", "-f", str(state)], capture_output=True, text=True)
        assert left.stdout.strip() == "", f"processes left behind: {left.stdout}"


@pytest.fixture(scope="session")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    require(ENGINE_TOOLS)
    backend = tmp_path_factory.mktemp("backend")
    env = base_env()
    env.update({
        "PULUMI_BACKEND_URL": f"file://{backend}",
        "PULUMI_CONFIG_PASSPHRASE": LOCAL_PASSPHRASE,
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
        "PULUMI_HOME": str(CACHE / "pulumi-home"),
    })
    Path(env["PULUMI_HOME"]).mkdir(parents=True, exist_ok=True)
    return Engine(env=env)


def resources_in_state(engine: Engine, stack: str) -> list[dict[str, Any]]:
    exported = json.loads(engine.pulumi("stack", "export", "--stack", stack).stdout)
    return [r for r in exported.get("deployment", {}).get("resources") or []
            if not r["type"].startswith(("pulumi:pulumi:Stack", "pulumi:providers:"))]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if TIMINGS:
        terminalreporter.write_sep("-", "real engine and API server timings (seconds)")
        for label, seconds in TIMINGS.items():
            terminalreporter.write_line(f"{label:<40} {seconds:>8.1f}")


def kubectl_available() -> bool:
    return shutil.which("kubectl") is not None
