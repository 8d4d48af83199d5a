"""The one Python driver of the local cluster and of the Pulumi CLI beside it.

`scripts/local-cluster` (localcluster/cli.py) owns the processes (their pid files are its own: a pid is asked
of it with `pid COMPONENT`), `scripts/pulumi-env` owns a user's CLI environment; the simulator's sessions, the test layers
and the benchmarks each start clusters in state directories and on ports of their own and run the CLI
against a throwaway file backend, so they share this: the script's environment for one cluster, the offline
environment pulumi-env sets, and a stack created without writing into the checkout.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .toolcache import BIN, CACHE, CACHE_ENV

ROOT = Path(__file__).resolve().parent.parent
LOCAL_CLUSTER = ROOT / "scripts" / "local-cluster"
VENV_BIN = ROOT / ".venv" / "bin"
# `local-cluster pid COMPONENT`'s exit status when that component is not running.
NOT_RUNNING = 3


class ClusterError(RuntimeError):
    """A command of the local cluster or the Pulumi CLI failed; the message carries its output."""


def run(cmd: list[str], env: dict[str, str], timeout: float = 900, check: bool = True, cwd: Path = ROOT,
        input: str | None = None) -> subprocess.CompletedProcess[str]:
    """CMD in a process group of its own, ended whole when this one is interrupted or times out: killing only
    `local-cluster start` would leave its kubectl and curl children holding the state lock, so the
    `local-cluster stop` of the clean-up would wait for them (the components run in sessions of their own and
    are stopped by that `stop`)."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(input, timeout=timeout)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    out = subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)
    if check and out.returncode != 0:
        raise ClusterError(f"{' '.join(cmd[:3])} ... exited {out.returncode}:\n{out.stdout[-3000:]}\n"
                           f"{out.stderr[-3000:]}")
    return out


def tool_env(inherit_local_cluster: bool = True) -> dict[str, str]:
    """The caller's environment with the virtualenv and the tool cache first on PATH, and none of its Pulumi
    or kubeconfig settings (they would point the CLI at the caller's backend or cluster). Its LOCAL_CLUSTER_*
    settings pass through unless INHERIT_LOCAL_CLUSTER is False (a benchmark's clusters are the defaults
    whatever the shell says)."""
    drop = ("PULUMI_", "KUBECONFIG") + (() if inherit_local_cluster else ("LOCAL_CLUSTER_",))
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env["PATH"] = f"{VENV_BIN}:{BIN}:{env.get('PATH', '')}"
    env["GPU_PLATFORM_PYTHON"] = str(VENV_BIN / "python")
    env[CACHE_ENV] = str(CACHE)
    return env


# ---------------------------------------------------------------------------------------------------
# the cluster


@dataclass
class LocalCluster:
    """One `scripts/local-cluster` cluster in STATE on its own ports. SETTINGS are further LOCAL_CLUSTER_*
    variables (docs/local-cluster.md: pods-ready timeout, autoscaler delays, the worker-lost timeout)."""

    state: Path
    apiserver_port: int | str
    etcd_port: int | str
    stack: str | Path | None = None          # LOCAL_CLUSTER_STACK (None: the script's default, `local`)
    # The workload controllers (LOCAL_CLUSTER_WORKLOADS): none unless asked ("": those the stack installs);
    # they cost start time and CPU.
    workloads: str = "none"
    # Prometheus and the GPU telemetry (LOCAL_CLUSTER_PROMETHEUS): off unless asked.
    prometheus: bool = False
    # The real node (LOCAL_CLUSTER_REAL_NODE, localcluster/realnode): off unless asked (a pool, or "1"); it
    # needs root, and one runs per machine.
    real_node: str = "none"
    settings: dict[str, str] = field(default_factory=dict)
    inherit_local_cluster: bool = True       # the caller's own LOCAL_CLUSTER_* settings apply (tool_env)

    @property
    def kubeconfig(self) -> Path:
        return self.state / "admin.kubeconfig"

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.apiserver_port}"

    def env(self) -> dict[str, str]:
        """The script's environment for this cluster, KUBECONFIG its admin's."""
        env = tool_env(self.inherit_local_cluster)
        env.update({
            "LOCAL_CLUSTER_DIR": str(self.state),
            "LOCAL_CLUSTER_APISERVER_PORT": str(self.apiserver_port),
            "LOCAL_CLUSTER_ETCD_PORT": str(self.etcd_port),
            "LOCAL_CLUSTER_WORKLOADS": self.workloads,
            "LOCAL_CLUSTER_PROMETHEUS": "1" if self.prometheus else "0",
            "LOCAL_CLUSTER_REAL_NODE": self.real_node,
            "KUBECONFIG": str(self.kubeconfig),
        })
        if self.stack is not None:
            env["LOCAL_CLUSTER_STACK"] = str(self.stack)
        env.update(self.settings)
        return env

    def script(self, *args: str, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess[str]:
        """`scripts/local-cluster ARGS` for this cluster."""
        return run([str(LOCAL_CLUSTER), *args], self.env(), timeout=timeout, check=check)

    def start(self, timeout: float = 900) -> float:
        """Start every component (nodes and Kueue from the stack); seconds taken."""
        started = time.perf_counter()
        self.script("start", timeout=timeout)
        return time.perf_counter() - started

    def stop(self, timeout: float = 120) -> list[str]:
        """Stop every process of the cluster (state kept); `pid command line` of any process still naming the
        state directory afterwards (none expected)."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.script("stop", timeout=timeout, check=False)
        return self.leftovers()

    def leftovers(self) -> list[str]:
        """`pid command line` of every process whose command line names the state directory."""
        out = subprocess.run(["pgrep", "-af", f"{self.state}/"], capture_output=True, text=True).stdout
        return [line for line in out.splitlines() if line.strip()]

    def restart(self, component: str, timeout: float = 600) -> float:
        """Stop (when running) and start one component, state kept; the others must be running; seconds taken."""
        started = time.perf_counter()
        self.script("restart", component, timeout=timeout)
        return time.perf_counter() - started

    def stop_component(self, component: str, timeout: float = 120) -> None:
        """Stop one component (TERM, KILL after 10 s); `restart` starts it again, `start` restarts the whole cluster."""
        self.script("stop", component, timeout=timeout)

    def pid(self, component: str) -> int | None:
        """The pid of a running component, None when it is not running."""
        out = self.script("pid", component, timeout=60, check=False)
        if out.returncode == NOT_RUNNING:
            return None
        if out.returncode != 0:
            raise ClusterError(f"local-cluster pid {component} exited {out.returncode}: {out.stderr.strip()}")
        return int(out.stdout.strip())

    def user(self, name: str, *groups: str) -> Path:
        """A kubeconfig of user NAME in GROUPS (a client certificate); its path."""
        return Path(self.script("user", name, *groups, timeout=60).stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------------
# the Pulumi CLI


def pulumi_bin() -> str:
    """The tool cache's CLI when there is one (offline builds), else the one on PATH."""
    return str(BIN / "pulumi") if (BIN / "pulumi").exists() else "pulumi"


def pulumi_env(backend: Path, passphrase: str, skip_checkpoints: bool = False,
               base: dict[str, str] | None = None) -> dict[str, str]:
    """What scripts/pulumi-env sets for an offline run, against the file backend BACKEND: the tool cache's
    PULUMI_HOME, no plugin downloads, no update check; PULUMI_SKIP_CHECKPOINTS for a throwaway stack (the
    state saved once per update, README Performance). BASE: the environment to extend (default tool_env())."""
    env = dict(base if base is not None else tool_env())
    env.update({
        "PULUMI_BACKEND_URL": f"file://{backend}",
        "PULUMI_CONFIG_PASSPHRASE": passphrase,
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
        "PULUMI_HOME": str(CACHE / "pulumi-home"),
    })
    if skip_checkpoints:
        env["PULUMI_SKIP_CHECKPOINTS"] = "true"
    backend.mkdir(parents=True, exist_ok=True)
    Path(env["PULUMI_HOME"]).mkdir(parents=True, exist_ok=True)
    return env


def ensure_stack(env: dict[str, str], stack: str, config_file: Path | None = None) -> bool:
    """Create STACK in ENV's backend unless it exists; whether it was created.

    `pulumi stack init` writes the passphrase salt into Pulumi.<stack>.yaml beside the project's Pulumi.yaml.
    For a stack whose config is CONFIG_FILE outside the checkout it runs in a scratch copy of the project
    file, and the salt moves into CONFIG_FILE: nothing in the checkout changes (and two callers creating
    stacks at once never meet in it). Without CONFIG_FILE the stack is one of the checkout's, whose file
    holds its salt already."""
    pulumi = pulumi_bin()
    if subprocess.run([pulumi, "stack", "select", stack, "--non-interactive"], cwd=ROOT, env=env,
                      capture_output=True).returncode == 0:
        return False
    init = [pulumi, "stack", "init", stack, "--secrets-provider", "passphrase", "--non-interactive"]
    if config_file is None:
        run(init, env)
        return True
    with tempfile.TemporaryDirectory(prefix="gpu-platform-stack-") as scratch:
        shutil.copy(ROOT / "Pulumi.yaml", Path(scratch) / "Pulumi.yaml")
        run(init, env, cwd=Path(scratch))
        written = Path(scratch) / f"Pulumi.{stack}.yaml"
        salt = (yaml.safe_load(written.read_text()) or {}) if written.exists() else {}
    doc = (yaml.safe_load(config_file.read_text()) or {}) if config_file.exists() else {}
    doc.update({k: v for k, v in salt.items() if k != "config"})
    config_file.write_text(yaml.safe_dump(doc, sort_keys=False))
    return True
