"""A live local cluster for one stack file, with the stack deployed onto it by the real engine.

The trace replayer and the live benchmark use this; `scripts/local-cluster` runs the processes and the
Pulumi CLI deploys, exactly as `make up` does for the local stack, but in a state directory of the
caller's (its own ports, file backend and copy of the stack file, so nothing in the checkout changes).
"""

from __future__ import annotations

import os
import secrets
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .api import CLUSTER_QUEUES, Client
from .autoscaler import SCALE_DOWN_DELAY_ENV, SCALE_UP_DELAY_ENV
from .driver import ClusterError, LocalCluster, ensure_stack, pulumi_bin, pulumi_env, run
from .prometheus import SCRAPE_INTERVAL_ENV
from .toolcache import CACHE  # noqa: F401  (the simulator and the benchmarks import it here)

# A step of starting or deploying failed; the message carries the command's output.
SessionError = ClusterError
PASSPHRASE = "throwaway-simulation-stack"


# Seconds after `pulumi up` for Kueue to mark every ClusterQueue Active (usually well under one).
QUEUES_ACTIVE_TIMEOUT_S = 120.0


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

    def cluster(self) -> LocalCluster:
        settings = {}
        if self.pods_ready_timeout:
            settings["LOCAL_CLUSTER_PODS_READY_TIMEOUT"] = self.pods_ready_timeout
        if self.scale_up_delay:
            settings[SCALE_UP_DELAY_ENV] = self.scale_up_delay
        if self.scale_down_delay:
            settings[SCALE_DOWN_DELAY_ENV] = self.scale_down_delay
        if self.scrape_interval:
            settings[SCRAPE_INTERVAL_ENV] = self.scrape_interval
        # The controllers the caller runs (LOCAL_CLUSTER_WORKLOADS, local-cluster.md): none unless asked
        # (simulate asks for the ones its trace's kinds need). Prometheus scrapes every 15 s: a compressed
        # replay outruns it (what-if.md), so it is started only when asked (at a shorter scrape_interval).
        return LocalCluster(self.cluster_dir, self.apiserver_port, self.etcd_port, stack=self.config_file,
                            workloads=self.workloads, prometheus=self.prometheus, settings=settings)

    def env(self) -> dict[str, str]:
        """The cluster's and the CLI's environment: a throwaway stack, its state saved once per update."""
        return pulumi_env(self.state / "backend", PASSPHRASE, skip_checkpoints=True, base=self.cluster().env())

    def start(self) -> float:
        """Start the cluster (nodes and Kueue from the stack file); seconds taken."""
        self.state.mkdir(parents=True, exist_ok=True)
        (self.state / "backend").mkdir(exist_ok=True)
        if not self.config_file.exists():
            shutil.copy(self.stack_file, self.config_file)
        return self.cluster().start(timeout=900)

    def deploy(self) -> float:
        """`pulumi up` of the stack's Kubernetes layer onto the cluster; seconds taken."""
        env = self.env()
        ensure_stack(env, self.stack, self.config_file)
        started = time.perf_counter()
        run([pulumi_bin(), "up", "--yes", "--skip-preview", "--stack", self.stack, "--config-file",
             str(self.config_file), "--non-interactive"], env, timeout=1800)
        self.wait_queues_active()
        return time.perf_counter() - started

    def wait_queues_active(self, timeout: float = QUEUES_ACTIVE_TIMEOUT_S) -> None:
        """Until Kueue has marked every ClusterQueue Active. `pulumi up` returns once the objects exist; Kueue
        activates a queue only after it has seen its flavors, cohort and topology, and a job submitted before then
        waits as inadmissible until something requeues it (a topology-aware JobSet submitted at once after the
        deploy once waited a whole replay)."""
        deadline = time.monotonic() + timeout
        while True:
            inactive = {}
            for cq in self.client().get(CLUSTER_QUEUES)["items"]:
                active = next((c for c in cq.get("status", {}).get("conditions", []) if c["type"] == "Active"), None)
                if not active or active["status"] != "True":
                    inactive[cq["metadata"]["name"]] = (active or {}).get("message", "no Active condition yet")
            if not inactive:
                return
            if time.monotonic() > deadline:
                raise ClusterError(f"ClusterQueues not Active {timeout:.0f} s after the deploy: "
                                   + "; ".join(f"{n}: {m}" for n, m in sorted(inactive.items())))
            time.sleep(0.5)

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
        self.cluster().stop()
