"""The docs' local journeys, run as a reader runs them: every shell block the README's quick start,
docs/tasks/try-locally.md and docs/tasks/why-does-my-job-wait.md mark for CI (tests/doc_journeys.py), in page
order, top to bottom: the README's `make up` (the prerequisites checked, the tools reused, the local cluster
started and the shipped `local` stack deployed by the real engine; real Kueue, kube-scheduler, Karpenter and
KWOK-simulated nodes act on it; world: the live local cluster), `. .venv/bin/activate`, the pages' commands, and
try-locally's clean-up `make down`, after which no process of the cluster may be left.

A copied command that no longer works (a renamed flag, a make target or script subcommand gone, a namespace the
stack no longer has, a label Kueue no longer sets) fails here with the page and line of its block and what it
printed.

What differs from a reader's terminal, and why: the cluster's state directory, its ports and the Pulumi backend
are this module's own (LOCAL_CLUSTER_DIR, LOCAL_CLUSTER_APISERVER_PORT / _ETCD_PORT, PULUMI_BACKEND_URL), so the
checkout's own cluster and Pulumi state (`.local/`) are never used; the workload controllers and Prometheus are
off (LOCAL_CLUSTER_WORKLOADS=none, LOCAL_CLUSTER_PROMETHEUS=0: no block uses them, and they cost start time and
CPU). Blocks run from the repository's root with no KUBECONFIG: the pages set it themselves. why-wait's page starts
from a running platform with the virtualenv active, as its "Before you begin" says; its blocks get the
virtualenv first on PATH in its place. The live layer's `Live` helper empties the teams' namespaces between
journeys.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

from gpu_platform.stack_files import load_plan
from localcluster.driver import VENV_BIN, LocalCluster
from localcluster.toolcache import BIN
from tests.doc_journeys import EXPECTED, JOURNEYS, Block, journey, missing_or_forbidden, script
from tests.live.conftest import Live
from tests.realtools import CLUSTER_TOOLS, ENGINE_TOOLS, Cluster, processes_under, require, run, stop_cluster
from tests.conftest import ROOT

APISERVER_PORT = os.environ.get("GPU_PLATFORM_DOCS_APISERVER_PORT", "30943")
ETCD_PORT = os.environ.get("GPU_PLATFORM_DOCS_ETCD_PORT", "22290")
# A block that runs once: time for `python -m platform_cli job` and kubectl on a busy machine.
BLOCK_TIMEOUT_S = 120
# A block that runs make: `make up` checks the prerequisites, starts the cluster and deploys the stack (about
# 2 minutes here under CI's other lanes), `make down` destroys it and stops the cluster.
MAKE_TIMEOUT_S = 600
# A block marked `retry`: the slowest thing a page waits for is the notebooks node's removal (the job's 30 s,
# then LOCAL_CLUSTER_SCALE_DOWN_DELAY's 30 s empty), under the load of the other lanes.
RETRY_DEADLINE_S = 240
RETRY_INTERVAL_S = 2


@dataclass
class Journeys:
    live: Live  # the cluster `make up` starts, for clean-up between journeys
    env: dict[str, str]  # what every block runs with


@pytest.fixture(scope="module")
def local_platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Journeys]:
    """The cluster the pages' own `make up` starts (the shipped local stack), not started here. Whatever the
    journeys did, it is stopped at the end and must have left no process (a journey that failed before its
    `make down`)."""
    require(CLUSTER_TOOLS + ENGINE_TOOLS)
    tmp = tmp_path_factory.mktemp("doc-journeys")
    cluster = Cluster(LocalCluster(tmp / "cluster", APISERVER_PORT, ETCD_PORT,
                                   settings={"LOCAL_CLUSTER_WORKLOADS": "none", "LOCAL_CLUSTER_PROMETHEUS": "0"}))
    # Nothing of the caller's that would send make or the engine elsewhere: another cluster
    # (GPU_PLATFORM_KUBECONFIG), a render instead of an up, another stack, a parent make's flags.
    elsewhere = ("KUBECONFIG", "GPU_PLATFORM_PYTHON", "GPU_PLATFORM_KUBECONFIG", "GPU_PLATFORM_RENDER_DIR", "STACK",
                 "MAKEFLAGS", "MAKELEVEL", "MFLAGS")
    env = {k: v for k, v in cluster.env.items() if k not in elsewhere}
    env["PATH"] = ":".join(d for d in env["PATH"].split(":") if d and d not in (str(VENV_BIN), str(BIN)))
    env["PULUMI_BACKEND_URL"] = f"file://{tmp / 'backend'}"
    try:
        yield Journeys(Live(cluster=cluster, plan=load_plan(None, str(ROOT / "Pulumi.local.yaml"))[1]), env)
    finally:
        stop_cluster(cluster)


def run_block(block: Block, env: dict[str, str]) -> tuple[int, str]:
    """A block in the journey's shell session, from the repository's root as a reader runs it."""
    timeout = MAKE_TIMEOUT_S if block.runs_make else BLOCK_TIMEOUT_S
    try:
        result = run(["bash", "-c", script(block.code)], env, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return 124, f"(no end after {timeout} s; the block's process group was killed)"
    return result.returncode, result.stdout + result.stderr


def running(lv: Live) -> bool:
    return lv.cluster.driver.script("status", check=False).returncode == 0


@pytest.mark.parametrize("name", list(JOURNEYS))
def test_the_journey_runs_as_written(local_platform: Journeys, name: str, tmp_path: Path) -> None:
    lv = local_platform.live
    blocks = journey(name)
    if running(lv):
        lv.clean()
    else:
        assert blocks[0].runs_make, (f"{name} starts from a running platform, which the README journey's make up "
                                     "starts: run this module whole")
    env = {**local_platform.env, "JOURNEY_STATE": str(tmp_path / "state.sh")}
    if not any(". .venv/bin/activate" in b.code for b in blocks):
        env["PATH"] = f"{VENV_BIN}:{env['PATH']}"  # the page starts with the virtualenv active
    assert len(blocks) == len(EXPECTED[name]), f"{name}: {len(blocks)} marked blocks, {len(EXPECTED[name])} expected"
    for block, expected in zip(blocks, EXPECTED[name]):
        deadline = time.monotonic() + (RETRY_DEADLINE_S if block.retry else 0)
        while True:
            code, output = run_block(block, env)
            problems = ([f"exit {code}"] if code else []) + [f"missing or forbidden: {f!r}"
                                                              for f in missing_or_forbidden(output, expected)]
            if not problems or time.monotonic() >= deadline:
                break
            time.sleep(RETRY_INTERVAL_S)
        assert problems == [], f"{block.where} ({name}):\n{block.code}--- printed\n{output[-4000:]}"
    if any("down" in b.make_targets for b in blocks):
        # try-locally's clean-up says `make down` leaves no process behind.
        assert not running(lv) and processes_under(lv.cluster.state) == [], \
            f"{name}: after `make down`: {processes_under(lv.cluster.state)}"
