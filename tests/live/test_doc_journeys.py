"""The docs' local journeys, run as a reader runs them: every shell block the README's quick start,
docs/tasks/try-locally.md and docs/tasks/why-does-my-job-wait.md mark for CI (tests/doc_journeys.py), in page
order, against the shipped `local` stack deployed by the real engine onto a live local cluster (real Kueue,
kube-scheduler, Karpenter and KWOK-simulated nodes; world: the live local cluster).

A copied command that no longer works (a renamed flag, a script subcommand gone, a namespace the stack no longer
has, a label Kueue no longer sets) fails here with the page and line of its block and what it printed.

The cluster is this module's own, started with `Pulumi.local.yaml` as its stack (the live layer's session
cluster runs tests/live/stack.yaml, whose teams are not the ones the pages name), on ports of its own, without
the workload controllers and Prometheus (no block uses them; they cost start time and CPU). It reuses the live
layer's `Live` helper to empty the teams' namespaces between journeys. A block runs with the cluster's
`scripts/local-cluster` environment (LOCAL_CLUSTER_DIR and its ports, the virtualenv first on PATH as after
`. .venv/bin/activate`) and no KUBECONFIG: the pages set it themselves.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Iterator

import pytest

from gpu_platform.stack_files import load_plan
from tests.doc_journeys import EXPECTED, JOURNEYS, Block, journey, missing_or_forbidden, script
from tests.live.conftest import Live, is_true, wait_for
from tests.realtools import CLUSTER_TOOLS, ENGINE_TOOLS, Engine, new_engine, require, run, running_cluster
from tests.conftest import ROOT

APISERVER_PORT = os.environ.get("GPU_PLATFORM_DOCS_APISERVER_PORT", "30943")
ETCD_PORT = os.environ.get("GPU_PLATFORM_DOCS_ETCD_PORT", "22290")
# A block that runs once: time for `python -m platform_cli job` and kubectl on a busy machine.
BLOCK_TIMEOUT_S = 120
# A block marked `retry`: the slowest thing a page waits for is the notebooks node's removal (the job's 30 s,
# then LOCAL_CLUSTER_SCALE_DOWN_DELAY's 30 s empty), under the load of the other lanes.
RETRY_DEADLINE_S = 240
RETRY_INTERVAL_S = 2


@pytest.fixture(scope="module")
def local_platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """The shipped local stack on a live local cluster, as `make up` makes it."""
    require(CLUSTER_TOOLS + ENGINE_TOOLS)
    tmp = tmp_path_factory.mktemp("doc-journeys")
    stack_file = tmp / "Pulumi.local.yaml"
    shutil.copy(ROOT / "Pulumi.local.yaml", stack_file)
    extra = {"LOCAL_CLUSTER_STACK": str(stack_file), "LOCAL_CLUSTER_WORKLOADS": "none", "LOCAL_CLUSTER_PROMETHEUS": "0"}
    with running_cluster(tmp / "cluster", APISERVER_PORT, ETCD_PORT, "doc journeys", extra) as cluster:
        engine: Engine = new_engine(tmp / "backend")
        engine.ensure_stack("local", stack_file)
        engine.timed("pulumi up (local stack, doc journeys)", "up", "--yes", "--stack", "local",
                     "--config-file", str(stack_file), extra_env={"KUBECONFIG": str(cluster.kubeconfig)})
        lv = Live(cluster=cluster, plan=load_plan(None, str(stack_file))[1])
        wait_for(lambda: all(is_true(cq, "Active") for cq in lv.get("clusterqueues.kueue.x-k8s.io")["items"]),
                 60, "every ClusterQueue Active")
        yield lv


def run_block(block: Block, env: dict[str, str]) -> tuple[int, str]:
    """A block in the journey's shell session, from the repository's root as a reader runs it."""
    try:
        result = run(["bash", "-c", script(block.code)], env, timeout=BLOCK_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return 124, f"(no end after {BLOCK_TIMEOUT_S} s; the block's process group was killed)"
    return result.returncode, result.stdout + result.stderr


@pytest.mark.parametrize("name", list(JOURNEYS))
def test_the_journey_runs_as_written(local_platform: Live, name: str, tmp_path: Path) -> None:
    local_platform.clean()
    env = {k: v for k, v in local_platform.cluster.env.items() if k != "KUBECONFIG"}
    env["JOURNEY_STATE"] = str(tmp_path / "state.sh")
    blocks = journey(name)
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
