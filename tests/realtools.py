"""The real tools the integration and live layers drive: the Pulumi CLI against a file backend, and
`scripts/local-cluster` clusters in their own state directories and ports.

Under CI a missing tool fails the test; elsewhere it skips with the command that builds it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator


from localcluster import driver
from localcluster.driver import LocalCluster
from localcluster.toolcache import BIN
from tests import reference_data
from tests.conftest import require_tools
from tests.reference_data import CRDS_ENV

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
    result = driver.run(cmd, env, timeout=timeout, check=False, input=input)
    if check and result.returncode != 0:
        raise AssertionError(
            f"{' '.join(cmd)} exited {result.returncode}\n--- stdout\n{result.stdout[-6000:]}\n--- stderr\n{result.stderr[-6000:]}"
        )
    return result


def base_env() -> dict[str, str]:
    """The caller's environment for the real tools (localcluster.driver.tool_env)."""
    return driver.tool_env()


@dataclass
class Cluster:
    driver: LocalCluster

    @property
    def state(self) -> Path:
        return self.driver.state

    @property
    def env(self) -> dict[str, str]:
        return self.driver.env()

    @property
    def kubeconfig(self) -> Path:
        return self.driver.kubeconfig

    def kubectl(self, *args: str, check: bool = True, input: str | None = None,
                kubeconfig: Path | None = None) -> subprocess.CompletedProcess[str]:
        return run(["kubectl", "--kubeconfig", str(kubeconfig or self.kubeconfig), *args],
                   self.env, timeout=120, check=check, input=input)

    def get(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)

    def user(self, name: str, *groups: str) -> Path:
        return self.driver.user(name, *groups)


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
        """Create the stack in this session's backend (localcluster.driver.ensure_stack: a config file
        outside the checkout gets the passphrase salt, the checkout stays clean)."""
        driver.ensure_stack(self.env, stack, config_file)


def local_cluster(state: Path, apiserver_port: str, etcd_port: str,
                  extra: dict[str, str] | None = None) -> LocalCluster:
    """A cluster in STATE on the given ports; EXTRA: LOCAL_CLUSTER_* settings. No workload controller and
    no Prometheus unless a test asks ("" runs the stack's controllers): they cost start time and CPU, and
    only the live layer's tests use them (tests/live/conftest.py). The reference CRDs are installed (the
    tests dry-run objects against them, tests/integration/test_karpenter_crds.py): fetched by
    scripts/tools/reference.sh when the cache lacks them, unless the caller's GPU_PLATFORM_CRDS names others."""
    settings = dict(extra or {})
    if CRDS_ENV not in settings and not os.environ.get(CRDS_ENV):
        settings[CRDS_ENV] = str(reference_data.crd_dir())
    return LocalCluster(state, apiserver_port, etcd_port, settings=settings)


def cluster_env(state: Path, apiserver_port: str, etcd_port: str,
                extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of `scripts/local-cluster` for a cluster in STATE on the given ports."""
    return local_cluster(state, apiserver_port, etcd_port, extra).env()


def start_cluster(state: Path, apiserver_port: str, etcd_port: str, label: str,
                  extra: dict[str, str] | None = None) -> Cluster:
    """`scripts/local-cluster start` in STATE on the given ports (extra: LOCAL_CLUSTER_* settings)."""
    c = Cluster(local_cluster(state, apiserver_port, etcd_port, extra))
    try:
        TIMINGS[f"{label} cluster start"] = round(c.driver.start(timeout=600), 1)
    except driver.ClusterError as err:
        raise AssertionError(str(err)) from None
    return c


def stop_cluster(c: Cluster) -> None:
    left = c.driver.stop()
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


def interrupt_after(proc: subprocess.Popen[str], under: Path, ready: Callable[[], None],
                    timeout: float) -> tuple[str, list[str]]:
    """SIGTERM PROC (a cluster starting, under UNDER) once ready() returns, as Ctrl-C or a cancelled job would,
    and wait up to TIMEOUT for it to exit; PROC is killed if it outlives that or ready() fails. Its stderr and
    the processes it left under UNDER (killed after they are listed, so a failing test leaks none)."""
    try:
        ready()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
    left = processes_under(under)
    subprocess.run(["pkill", "-KILL", "-f", str(under)], check=False)
    return err, left


def new_engine(backend: Path) -> Engine:
    return Engine(env=driver.pulumi_env(backend, LOCAL_PASSPHRASE))


def resources_in_state(engine: Engine, stack: str) -> list[dict[str, Any]]:
    exported = json.loads(engine.pulumi("stack", "export", "--stack", stack).stdout)
    return [r for r in exported.get("deployment", {}).get("resources") or []
            if not r["type"].startswith(("pulumi:pulumi:Stack", "pulumi:providers:"))]
