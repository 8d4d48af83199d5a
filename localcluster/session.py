"""A live local cluster for one stack file, with the stack deployed onto it by the real engine.

The trace replayer and the live benchmark use this; `scripts/local-cluster` runs the processes and the
Pulumi CLI deploys, exactly as `make up` does for the local stack, but in a state directory of the
caller's (its own ports, file backend and copy of the stack file, so nothing in the checkout changes).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .api import Client
from .autoscaler import SCALE_DOWN_DELAY_ENV, SCALE_UP_DELAY_ENV
from .prometheus import SCRAPE_INTERVAL_ENV
from .toolcache import CACHE, CACHE_ENV

ROOT = Path(__file__).resolve().parent.parent
LOCAL_CLUSTER = ROOT / "scripts" / "local-cluster"


class SessionError(RuntimeError):
    """A step of starting or deploying failed; the message carries the command's output."""


def _run(cmd: list[str], env: dict[str, str], timeout: float = 900) -> subprocess.CompletedProcess[str]:
    # In a process group of its own, ended whole when this one is interrupted or times out: killing only
    # `local-cluster start` would leave its kubectl and curl children holding the state lock, so the
    # `local-cluster stop` of the clean-up would wait for them (its components run in sessions of their own
    # and are stopped by that `stop`).
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    out = subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)
    if out.returncode != 0:
        raise SessionError(f"{' '.join(cmd[:3])} ... exited {out.returncode}:\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}")
    return out


@dataclass
class Session:
    state: Path
    stack_file: Path
    # Below Linux's ephemeral port range (32768-60999): an outgoing connection can never take them.
    apiserver_port: int = int(os.environ.get("GPU_PLATFORM_SIM_APISERVER_PORT", "28443"))
    etcd_port: int = int(os.environ.get("GPU_PLATFORM_SIM_ETCD_PORT", "26790"))
    pods_ready_timeout: str | None = None
    workloads: str = "none"
    # The autoscaler's delays (Go durations; None: the local cluster's defaults), fixed at start.
    scale_up_delay: str | None = None
    scale_down_delay: str | None = None
    # Prometheus and the GPU telemetry (LOCAL_CLUSTER_PROMETHEUS), off for a compressed replay (below); on for
    # the test that compares a replay's report with the live one (tests/integration/test_report_agrees.py),
    # which samples faster (`scrape_interval`, LOCAL_CLUSTER_SCRAPE_INTERVAL: a Go duration).
    prometheus: bool = False
    scrape_interval: str | None = None
    stack: str = field(default_factory=lambda: f"sim-{secrets.token_hex(3)}")

    @property
    def cluster_dir(self) -> Path:
        return self.state / "cluster"

    @property
    def kubeconfig(self) -> Path:
        return self.cluster_dir / "admin.kubeconfig"

    @property
    def config_file(self) -> Path:
        return self.state / f"Pulumi.{self.stack}.yaml"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PULUMI_", "KUBECONFIG"))}
        env["PATH"] = f"{ROOT / '.venv' / 'bin'}:{CACHE / 'bin'}:{env.get('PATH', '')}"
        env.update({
            "LOCAL_CLUSTER_DIR": str(self.cluster_dir),
            "LOCAL_CLUSTER_APISERVER_PORT": str(self.apiserver_port),
            "LOCAL_CLUSTER_ETCD_PORT": str(self.etcd_port),
            "LOCAL_CLUSTER_STACK": str(self.config_file),
            # The controllers the caller runs (LOCAL_CLUSTER_WORKLOADS, local-cluster.md): none unless asked
            # (simulate asks for the ones its trace's kinds need).
            "LOCAL_CLUSTER_WORKLOADS": self.workloads,
            # Prometheus scrapes every 15 s: a compressed replay outruns it (what-if.md), so it is not started.
            "LOCAL_CLUSTER_PROMETHEUS": "1" if self.prometheus else "0",
            CACHE_ENV: str(CACHE),
            "KUBECONFIG": str(self.kubeconfig),
            "PULUMI_BACKEND_URL": f"file://{self.state / 'backend'}",
            "PULUMI_CONFIG_PASSPHRASE": "throwaway-simulation-stack",
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_HOME": str(CACHE / "pulumi-home"),
            # A throwaway stack: state saved once per update (README, Performance).
            "PULUMI_SKIP_CHECKPOINTS": "true",
        })
        if self.scrape_interval:
            env[SCRAPE_INTERVAL_ENV] = self.scrape_interval
        if self.pods_ready_timeout:
            env["LOCAL_CLUSTER_PODS_READY_TIMEOUT"] = self.pods_ready_timeout
        if self.scale_up_delay:
            env[SCALE_UP_DELAY_ENV] = self.scale_up_delay
        if self.scale_down_delay:
            env[SCALE_DOWN_DELAY_ENV] = self.scale_down_delay
        return env

    def start(self) -> float:
        """Start the cluster (nodes and Kueue from the stack file); seconds taken."""
        self.state.mkdir(parents=True, exist_ok=True)
        (self.state / "backend").mkdir(exist_ok=True)
        if not self.config_file.exists():
            shutil.copy(self.stack_file, self.config_file)
        started = time.perf_counter()
        _run([str(LOCAL_CLUSTER), "start"], self.env(), timeout=900)
        return time.perf_counter() - started

    def deploy(self) -> float:
        """`pulumi up` of the stack's Kubernetes layer onto the cluster; seconds taken."""
        env = self.env()
        pulumi = str(CACHE / "bin" / "pulumi") if (CACHE / "bin" / "pulumi").exists() else "pulumi"
        project_file = ROOT / f"Pulumi.{self.stack}.yaml"
        if subprocess.run([pulumi, "stack", "select", self.stack, "--non-interactive"], cwd=ROOT, env=env,
                          capture_output=True).returncode != 0:
            _run([pulumi, "stack", "init", self.stack, "--secrets-provider", "passphrase", "--non-interactive"], env)
            # `stack init` writes the passphrase salt into Pulumi.<stack>.yaml in the project: keep it with
            # our copy so the checkout stays clean.
            if project_file.exists():
                salt = yaml.safe_load(project_file.read_text()) or {}
                project_file.unlink()
                doc = yaml.safe_load(self.config_file.read_text())
                doc.update({k: v for k, v in salt.items() if k != "config"})
                self.config_file.write_text(yaml.safe_dump(doc, sort_keys=False))
        started = time.perf_counter()
        _run([pulumi, "up", "--yes", "--skip-preview", "--stack", self.stack, "--config-file", str(self.config_file),
              "--non-interactive"], env, timeout=1800)
        return time.perf_counter() - started

    def use_config(self, stack_file: Path) -> None:
        """Deploy another stack file's config on the next `deploy` (same Pulumi stack, same salt): the
        cluster is reused, only what the config changes is updated."""
        doc = yaml.safe_load(Path(stack_file).read_text())
        current = yaml.safe_load(self.config_file.read_text()) if self.config_file.exists() else {}
        if "encryptionsalt" in current:
            doc["encryptionsalt"] = current["encryptionsalt"]
        self.config_file.write_text(yaml.safe_dump(doc, sort_keys=False))

    def client(self) -> Client:
        return Client.from_kubeconfig(self.kubeconfig)

    def stop(self) -> None:
        subprocess.run([str(LOCAL_CLUSTER), "stop"], cwd=ROOT, env=self.env(), capture_output=True, timeout=120)
