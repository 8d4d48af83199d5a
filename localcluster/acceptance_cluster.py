"""`make acceptance`: the design guide's acceptance test (`python -m platform_cli acceptance`, docs/acceptance.md) run
end to end on a local cluster of its own, in one command, the way tests/live/test_acceptance.py runs it in CI.

`make up` starts the local stack on KWOK nodes, where the command's step 1 runs but steps 2 to 7 need real
processes. This cluster has what they need: the example acceptance stack (examples/acceptance-stack.yaml: team
`zeta` with two time-sliced units of a g6.xlarge pool `small`, whose pods fit a laptop), the real node for that
pool (localcluster/realnode: a kubelet with containerd and runc), the JobSet controller, Prometheus scraping the
node's kubelet and the GPU telemetry, the trainer image built from Debian packages (scripts/tools/trainer-image.sh)
imported into the node's containerd, and SeaweedFS's S3 server as the teams' data path (localcluster/objectstore.py).
It is started, deployed with the real engine, the command is run, and everything is stopped again (to look
around a running one, docs/acceptance.md gives the same steps one by one).

    python -m localcluster.acceptance_cluster [--state DIR] [--window 60s] [--baseline gpu-hour=2.50]
                                              [--format table|markdown|json] [--out DIR]

Needs root (the real node mounts, makes cgroups and network links) and a machine with no other real node.
Exit status: the acceptance command's (0 every step passed, 1 a step failed), 2 when the cluster could not be
set up (the reason printed), 130 on Ctrl-C (everything stopped).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

from . import objectstore, realnode
from .driver import ROOT, ClusterError, LocalCluster, ensure_stack, pulumi_bin, pulumi_env, run
from .toolcache import BIN

STACK = "acceptance"
STACK_FILE = ROOT / "examples" / "acceptance-stack.yaml"
POOL, TEAM = "small", "zeta"
# Below the kernel's ephemeral port range (32768), like every local cluster's: a client connection never holds one.
APISERVER_PORT, ETCD_PORT, STORE_PORT = "31643", "22090", 18430
# The engine's state for this cluster's stack; the passphrase only guards a throwaway local backend.
PASSPHRASE = "acceptance"
TRAINER_IMAGE = ROOT / "scripts" / "tools" / "trainer-image.sh"
SEAWEEDFS = ROOT / "scripts" / "tools" / "seaweedfs.sh"
DEFAULT_STATE = ROOT / ".local" / "acceptance"


@dataclass
class Setup:
    """A running acceptance cluster: what the command and a test need to drive it, and how long each part took."""

    cluster: LocalCluster
    stack_file: Path
    image: str
    store: objectstore.Store
    seconds: dict[str, float] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        """The environment the acceptance command runs in: the cluster's (KUBECONFIG, LOCAL_CLUSTER_DIR, whose
        store.json names the data path)."""
        return self.cluster.env()


def trainer_image() -> tuple[Path, str]:
    """The trainer image's OCI archive (built from Debian packages on first use) and its name."""
    def out(*args: str) -> str:
        return subprocess.run([str(TRAINER_IMAGE), *args], capture_output=True, text=True, check=True).stdout.strip()
    return Path(out("--print-path")), out("--name")


def local_cluster(state: Path, stack: Path, apiserver_port: str = APISERVER_PORT, etcd_port: str = ETCD_PORT,
                  settings: dict[str, str] | None = None) -> LocalCluster:
    """The cluster of STACK in STATE/cluster: the real node for POOL, the JobSet controller, Prometheus scraping and
    evaluating every 5 s (so a 60 s window leaves step 6 many samples)."""
    return LocalCluster(state / "cluster", apiserver_port, etcd_port, stack=stack, workloads="jobset", prometheus=True,
                        real_node=POOL, settings={"LOCAL_CLUSTER_SCRAPE_INTERVAL": "5s", **(settings or {})})


def prerequisites(state: Path) -> int:
    """`python -m localcluster.prerequisites` for this cluster, as `make up` runs it for the local stack's: the
    machine checked (root, Linux, kubectl, Go where a tool must be built), then only the tools this cluster runs
    built or linked, saying first how long a cold build takes. Its exit status."""
    env = local_cluster(state, STACK_FILE).env()
    return subprocess.run([sys.executable, "-m", "localcluster.prerequisites"], env=env, cwd=ROOT).returncode


@contextmanager
def acceptance_cluster(state: Path, stack_file: Path = STACK_FILE, apiserver_port: str = APISERVER_PORT,
                       etcd_port: str = ETCD_PORT, store_port: int = STORE_PORT,
                       settings: dict[str, str] | None = None,
                       progress: Callable[[str], None] = lambda _m: None) -> Iterator[Setup]:
    """Start the cluster in STATE, import the image, deploy STACK_FILE (copied into STATE, so the engine's
    passphrase salt never lands in the checkout) and start the object store; stop all of it on the way out.
    SETTINGS: further LOCAL_CLUSTER_* variables (a test's reference CRDs)."""
    seconds: dict[str, float] = {}
    subprocess.run([str(SEAWEEDFS)], check=True)
    archive, image = trainer_image()
    state.mkdir(parents=True, exist_ok=True)
    stack = state / f"Pulumi.{STACK}.yaml"
    stack.write_text(stack_file.read_text())
    cluster = local_cluster(state, stack, apiserver_port, etcd_port, settings)
    progress(f"starting the cluster in {cluster.state} (real node for pool {POOL}) ...")
    try:
        seconds["cluster start"] = round(cluster.start(timeout=900), 1)
        started = time.monotonic()
        progress("importing the trainer image into the real node's containerd ...")
        run([str(BIN / "ctr"), "--address", str(realnode.Layout(cluster.state).socket), "-n", "k8s.io", "images",
             "import", str(archive)], cluster.env(), timeout=600)
        seconds["trainer image import"] = round(time.monotonic() - started, 1)
        started = time.monotonic()
        progress(f"pulumi up of stack {STACK} ...")
        engine = pulumi_env(state / "backend", PASSPHRASE, base=cluster.env())
        ensure_stack(engine, STACK, stack)
        run([pulumi_bin(), "up", "--yes", "--skip-preview", "--stack", STACK, "--config-file", str(stack)], engine,
            timeout=900)
        seconds["pulumi up"] = round(time.monotonic() - started, 1)
        progress("starting the object store (the teams' buckets) ...")
        store = objectstore.start(str(stack), cluster.state, store_port)
        try:
            yield Setup(cluster, stack, image, store, seconds)
        finally:
            objectstore.stop(cluster.state)
    finally:
        progress("stopping the cluster ...")
        left = cluster.stop()
        if left:
            progress(f"processes left behind: {left}")


def command(stack_file: Path, image: str, *extra: str, window: str = "60s", baseline: str = "gpu-hour=2.50") -> list[str]:
    """The acceptance command as a user types it against this cluster (STACK_FILE and IMAGE: the Setup's)."""
    return [sys.executable, "-m", "platform_cli", "acceptance", "--stack", str(stack_file), "--team", TEAM,
            "--pool", POOL, "--image", image, "--window", window, "--baseline", baseline, *extra]


def parse(argv: Sequence[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m localcluster.acceptance_cluster",
                                 description="The acceptance test end to end on a local cluster with a real node.")
    ap.add_argument("--state", type=Path, default=DEFAULT_STATE, help="state directory (default .local/acceptance)")
    ap.add_argument("--window", default="60s", help="step 4's training window (default 60s)")
    ap.add_argument("--baseline", default="gpu-hour=2.50", help="step 7's baseline (default gpu-hour=2.50)")
    ap.add_argument("--format", choices=("table", "markdown", "json"), default="table", help="the report's format")
    ap.add_argument("--out", type=Path, help="also write acceptance.json, acceptance.md and the pods' logs here")
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    if os.geteuid() != 0:
        print("acceptance cluster: the real node needs root (it mounts, makes cgroups and network links): "
              "run as root", file=sys.stderr)
        return 2

    def say(message: str) -> None:
        print(f"acceptance cluster: {message}", file=sys.stderr, flush=True)

    if prerequisites(args.state.resolve()) != 0:
        return 2
    extra = ["--format", args.format, *(["--out", str(args.out)] if args.out else [])]
    try:
        with acceptance_cluster(args.state.resolve(), progress=say) as setup:
            say("set up in " + ", ".join(f"{k} {v:g} s" for k, v in setup.seconds.items()))
            return subprocess.run(command(setup.stack_file, setup.image, *extra, window=args.window, baseline=args.baseline),
                                  env=setup.env(), cwd=ROOT).returncode
    except KeyboardInterrupt:
        return 130
    except (ClusterError, subprocess.CalledProcessError, objectstore.ObjectStoreError) as err:
        say(f"could not set the cluster up: {err}")
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
