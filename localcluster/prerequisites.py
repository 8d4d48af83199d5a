"""What `make up` of the local stack needs, checked before anything is built or started, and the tools it builds:
only those the chosen cluster runs.

Each missing prerequisite is named with what to do about it (Linux; kubectl and openssl on PATH; Go where a tool
must be built; apt-get, and root or sudo, where etcd or the real node's containerd must be installed from Debian
packages). The tools: the Pulumi engine only when no official Pulumi CLI is on PATH (scripts/pulumi-env then runs
the official one), the control plane, Prometheus unless LOCAL_CLUSTER_PROMETHEUS=0, the stack's workload
controllers (or LOCAL_CLUSTER_WORKLOADS's), the real node's only with LOCAL_CLUSTER_REAL_NODE; never the tests'
reference data, promtool or actionlint. Before a cold build it says which tools it builds and about how long that
takes.

`python -m localcluster.prerequisites [--check] [--engine]`: check, then build or link the tools (--check: check
only, and say what a build would take; --engine: only the Pulumi engine, as `make down` needs). Exit 0, or 2 with
every missing prerequisite listed.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from .state import ROOT, from_environment
from .toolcache import BIN

TOOLS_DIR = ROOT / "scripts" / "tools"
GO_MIN = (1, 26)
ENGINE = ("pulumi", "pulumi-language-python", "pulumi-resource-kubernetes")
CONTROL_PLANE = ("etcd", "kube-apiserver", "kueue", "kwok", "karpenter-kwok", "helm")
REAL_NODE = ("containerd", "kubelet", "gpu-device-plugin", "node-images")
# Installed from Debian packages when not on PATH (scripts/tools/etcd.sh, containerd.sh), not built.
FROM_APT = frozenset({"etcd", "containerd"})


@dataclass(frozen=True)
class Tool:
    """A scripts/tools/<name>.sh: the binary whose link in the tool cache says it is there, and how long its cold
    build took on 2 cores (docs/performance.md, "The tool chain")."""

    name: str
    binary: str
    cold_seconds: int


# A cold `make up` of the local stack on a 2-core machine on 2026-12-07, nothing else running (the tools in this
# order, an empty tool cache and Go build cache, Go's module cache warm; each tool's "built in" line): every tool
# after the first finds the Kubernetes libraries the earlier ones compiled in Go's build cache, so these are its
# times in that order. The real node's tools, and etcd and containerd (from apt), from earlier builds.
TOOLS = {t.name: t for t in (
    Tool("pulumi", "pulumi", 464), Tool("pulumi-language-python", "pulumi-language-python", 58),
    Tool("pulumi-resource-kubernetes", "pulumi-resource-kubernetes", 906),
    Tool("etcd", "etcd", 60), Tool("kube-apiserver", "kube-apiserver", 510), Tool("kueue", "kueue", 437),
    Tool("kwok", "kwok", 138), Tool("karpenter-kwok", "karpenter-kwok", 257), Tool("helm", "helm", 113),
    Tool("prometheus", "prometheus", 535), Tool("jobset", "jobset-controller", 157),
    Tool("lws", "lws-controller", 156), Tool("trainer", "trainer-controller-manager", 124),
    Tool("kuberay", "kuberay-operator", 119), Tool("containerd", "containerd", 90), Tool("kubelet", "kubelet", 167),
    Tool("gpu-device-plugin", "gpu-device-plugin", 60), Tool("node-images", "", 90),
)}


def official_pulumi(path: str, cache_bin: Path = BIN) -> str | None:
    """A Pulumi CLI on PATH outside the tool cache (scripts/pulumi-env's connected mode runs it)."""
    cache = cache_bin.resolve()
    for d in filter(None, path.split(os.pathsep)):
        candidate = Path(d) / "pulumi"
        if Path(d).resolve() != cache and candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def needed(env: Mapping[str, str], workload_tools: Sequence[str], cluster: bool = True) -> list[str]:
    """The tool scripts `make up` of the local stack runs, in order (WORKLOAD_TOOLS: the stack's controllers';
    CLUSTER False: the stack goes onto another cluster, GPU_PLATFORM_KUBECONFIG, and only the engine is needed)."""
    engine = [] if env.get("GPU_PLATFORM_OFFLINE") != "1" and official_pulumi(env.get("PATH", "")) else list(ENGINE)
    if not cluster:
        return engine
    settings = from_environment(env, Path.cwd())
    tools = engine + list(CONTROL_PLANE) + (["prometheus"] if settings.monitoring else []) + list(workload_tools)
    return tools + (list(REAL_NODE) if wants_real_node(env) else [])


def wants_real_node(env: Mapping[str, str]) -> bool:
    return (env.get("LOCAL_CLUSTER_REAL_NODE") or "none").lower() not in ("", "none", "0", "no", "false")


def cold(tools: Sequence[str], cache_bin: Path = BIN) -> list[str]:
    """The tools whose binary the cache does not hold yet (a link that leads nowhere counts as none)."""
    def present(t: Tool) -> bool:
        return not t.binary or (cache_bin / t.binary).exists()
    return [name for name in tools if not present(TOOLS[name])]


def go_version(text: str) -> tuple[int, int] | None:
    """(major, minor) of `go version`'s answer ("go version go1.26.3 linux/amd64")."""
    m = re.search(r"\bgo(\d+)\.(\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def installed_go(which=shutil.which) -> tuple[int, int] | None:
    go = which("go")
    return go_version(subprocess.run([go, "version"], capture_output=True, text=True).stdout) if go else None


def problems(env: Mapping[str, str], to_build: Sequence[str], system: str, euid: int, which,
             go: tuple[int, int] | None, cluster: bool = True) -> list[str]:
    """Every missing prerequisite, each with what to do (SYSTEM, EUID, WHICH and GO: this machine's, given;
    CLUSTER False: no local cluster runs)."""
    found: list[str] = []
    if not cluster:
        return _go(to_build, go)
    if system != "Linux":
        found.append(f"the local cluster runs etcd, the Kubernetes control plane and (for a real node) containerd as "
                     f"Linux host processes; this is {system}: use a Linux machine or VM, or deploy onto another "
                     "cluster with GPU_PLATFORM_KUBECONFIG=<kubeconfig> make up")
    for command, why, how in (
            ("kubectl", "the local cluster is set up and used with it", "kubernetes.io/docs/tasks/tools"),
            ("openssl", "the local cluster's certificates are made with it", "Debian and Ubuntu: apt-get install openssl")):
        if which(command) is None:
            found.append(f"{command} is not on PATH ({why}): install it ({how})")
    found += _go(to_build, go)
    for tool in [t for t in to_build if t in FROM_APT or t == "node-images"]:
        package = {"etcd": "etcd-server", "containerd": "containerd runc containernetworking-plugins",
                   "node-images": "busybox-static gcc libc6-dev"}[tool]
        if tool in FROM_APT and which(tool) is not None:
            continue   # its script takes the one on PATH when it is new enough
        if which("apt-get") is None:
            found.append(f"{tool} is not on PATH and there is no apt-get to install it: install {package} yourself")
        elif euid != 0:
            found.append(f"{tool} is not on PATH: install it with sudo apt-get install {package}, or run make up as "
                         "root")
    if wants_real_node(env) and euid != 0:
        found.append("LOCAL_CLUSTER_REAL_NODE needs root (the real node mounts, makes cgroups and network links): "
                     "run make up as root, or LOCAL_CLUSTER_REAL_NODE=none")
    return found


def _go(to_build: Sequence[str], version: tuple[int, int] | None) -> list[str]:
    """Go, where a tool must be built."""
    built = [t for t in to_build if t not in FROM_APT and t != "node-images"]
    if not built:
        return []
    if version is not None and version >= GO_MIN:
        return []
    have = f"found go{version[0]}.{version[1]}" if version else "none found"
    return [f"Go {GO_MIN[0]}.{GO_MIN[1]} or newer is not on PATH ({have}): it builds {', '.join(built)} into the tool "
            "cache (go.dev/doc/install)"]


# One measurement, on a machine whose speed varies with its host (docs/testing.md): the estimate is its sum
# from 10% under to 15% over.
SPREAD = (0.9, 1.15)


def cores() -> int:
    """The cores this process may run on (a container's or a taskset's limit, not the host's count; macOS, which
    has no affinity call, its count)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def estimate(tools: Sequence[str], n_cores: int = 2) -> str:
    """How long a cold build of TOOLS takes on N_CORES: their measured times on 2 cores added up, within SPREAD.
    Only 2 cores were measured: on more, the low end is scaled down by 2/N (Go compiles a module's packages in
    parallel) and the high end stays the 2-core figure (linking and the modules' downloads do not scale); on one,
    both double."""
    total = sum(TOOLS[t].cold_seconds for t in tools) / 60
    low, high = (max(1, round(total * f)) for f in SPREAD)
    if n_cores == 2:
        return f"{low} to {high} min on 2 cores"
    if n_cores < 2:
        return f"about {2 * low} to {2 * high} min on 1 core; {low} to {high} measured on 2"
    return (f"about {max(1, round(low * 2 / n_cores))} to {high} min on this machine's {n_cores} cores; "
            f"{low} to {high} measured on 2")


def stack_workload_tools(env: Mapping[str, str]) -> list[str]:
    """The tools of the workload controllers the start will run (the stack's, or LOCAL_CLUSTER_WORKLOADS's)."""
    from gpu_platform.stack_files import load_plan

    from . import workloads

    settings = from_environment(env, Path.cwd())
    plan = load_plan(settings.stack, None)[1]
    return [workloads.BY_COMPONENT[c].tool for c in workloads.components(plan, settings.workloads)]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m localcluster.prerequisites", description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="check only; say what a build would take")
    p.add_argument("--engine", action="store_true", help="only the Pulumi engine (no local cluster starts)")
    args = p.parse_args(argv)
    env = dict(os.environ)
    # Another cluster (GPU_PLATFORM_KUBECONFIG), or a command that starts none: nothing runs here.
    cluster = not env.get("GPU_PLATFORM_KUBECONFIG") and not args.engine
    try:
        tools = needed(env, stack_workload_tools(env) if cluster else [], cluster)
    except Exception as err:  # noqa: BLE001  (an invalid stack or setting: its reason)
        print(f"prerequisites: error: {err}", file=sys.stderr)
        return 2
    to_build = cold(tools)
    missing = problems(env, to_build, platform.system(), os.geteuid(), shutil.which, installed_go(), cluster)
    if missing:
        print("prerequisites: missing:", file=sys.stderr)
        for problem in missing:
            print(f"  - {problem}", file=sys.stderr)
        return 2
    if to_build:
        print(f"prerequisites: building or installing {', '.join(to_build)} into the tool cache, once ({estimate(to_build, cores())}; "
              "later runs reuse them)", file=sys.stderr, flush=True)
    if args.check:
        return 0
    failed = [t for t in tools if subprocess.run([str(TOOLS_DIR / f"{t}.sh")], stdout=subprocess.DEVNULL).returncode]
    if failed:
        print(f"prerequisites: error: could not build or install {', '.join(failed)} (above)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
