"""The real tools the integration and live layers drive: the Pulumi CLI against a file backend, and
`scripts/local-cluster` clusters in their own state directories and ports.

Under CI a missing tool fails the test; elsewhere it skips with the command that builds it.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator


from localcluster.toolcache import BIN, CACHE, CACHE_ENV
from tests.conftest import ROOT, require_tools

VENV_BIN = ROOT / ".venv" / "bin"
LOCAL_PASSPHRASE = "local-only-passphrase"  # documented default, local stack only
ENGINE_TOOLS = ("pulumi", "pulumi-language-python", "pulumi-resource-kubernetes")
CLUSTER_TOOLS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kueue", "kwok", "helm")

# Timings of the real tools, for the closing note and the README (printed at the end of the session).
TIMINGS: dict[str, float] = {}


def require(tools: tuple[str, ...]) -> None:
    """Tools in the cache (the real layers drive them from there): tests.conftest.require_tools decides."""
    require_tools(*tools)


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
               extra_env: dict[str, str] | None = None, input: str | None = None) -> subprocess.CompletedProcess[str]:
        env = {**self.env, **(extra_env or {})}
        return run([str(BIN / "pulumi"), *args, "--non-interactive"], env, timeout=timeout, check=check, input=input)

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



def cluster_env(state: Path, apiserver_port: str, etcd_port: str,
                extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of `scripts/local-cluster` for a cluster in STATE on the given ports."""
    env = base_env()
    env.update({
        "LOCAL_CLUSTER_DIR": str(state),
        "LOCAL_CLUSTER_APISERVER_PORT": apiserver_port,
        "LOCAL_CLUSTER_ETCD_PORT": etcd_port,
        CACHE_ENV: str(CACHE),
        # No workload controller unless a test asks ("" runs the stack's): they cost start time and CPU, and
        # only the live layer's tests use them (tests/live/conftest.py).
        "LOCAL_CLUSTER_WORKLOADS": "none",
        "LOCAL_CLUSTER_PROMETHEUS": "0",
        **(extra or {}),
    })
    return env


def start_cluster(state: Path, apiserver_port: str, etcd_port: str, label: str,
                  extra: dict[str, str] | None = None) -> Cluster:
    """`scripts/local-cluster start` in STATE on the given ports (extra: LOCAL_CLUSTER_* settings)."""
    env = cluster_env(state, apiserver_port, etcd_port, extra)
    started = time.perf_counter()
    run([str(ROOT / "scripts" / "local-cluster"), "start"], env, timeout=600)
    TIMINGS[f"{label} cluster start"] = round(time.perf_counter() - started, 1)
    return Cluster(state=state, env={**env, "KUBECONFIG": str(state / "admin.kubeconfig")})


def stop_cluster(c: Cluster) -> None:
    run([str(ROOT / "scripts" / "local-cluster"), "stop"], c.env, timeout=120, check=False)
    left = processes_under(c.state)
    assert left == [], f"processes left behind: {left}"


@contextmanager
def running_cluster(state: Path, apiserver_port: str, etcd_port: str, label: str,
                    extra: dict[str, str] | None = None) -> Iterator[Cluster]:
    c = start_cluster(state, apiserver_port, etcd_port, label, extra)
    try:
        yield c
    finally:
        stop_cluster(c)


def processes_under(path: Path) -> list[str]:
    """`pid command line` of every process whose command line names PATH (a cluster's state directory)."""
    out = subprocess.run(["pgrep", "-af", str(path)], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if line.strip()]


def wait_for_file(proc: subprocess.Popen[str], under: Path, pattern: str, what: str, timeout: float = 300) -> None:
    """Until a file matching PATTERN exists below UNDER (a component's pid file: it has started), while PROC
    still runs; fails naming WHAT otherwise."""
    deadline = time.monotonic() + timeout
    while not any(under.glob(pattern)):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{what} never started"
        time.sleep(0.1)


def new_engine(backend: Path) -> Engine:
    backend.mkdir(parents=True, exist_ok=True)
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
