"""Benchmark 4, real engine: `pulumi preview` / `pulumi up` of a synthetic 100-team stack onto the local
API server, against `kubectl apply --server-side` of the same manifests onto an identical fresh API server.

Every run gets its own fresh local cluster (etcd + kube-apiserver + controller-manager, CRDs installed,
fake GPU nodes registered) on ports of its own, so pulumi and kubectl write the same objects into the
same starting state; only one cluster runs at a time. Addons are not installed (their Helm charts need
downloads and their Deployments never become ready without a kubelet); every other object of the
synthetic platform is there. Nothing in the repository changes: the stack lives in a temporary file
backend and its config (with the passphrase salt) in a temporary file passed with `--config-file`.

Measured, each in seconds and in seconds per 100 resources:
  floor    `kubectl apply --server-side -f all.yaml` (the command the issue names; kubectl's default
           `--validate=strict` spends most of its time in client-side validation), and the same with
           `--validate=false` (closer to the API server's own cost), each into a fresh cluster
  preview  `pulumi preview` of the new stack (every object is a server-side dry run), and again once
           deployed (no changes: the pull-request preview of an unchanged platform)
  up       `pulumi up --skip-preview` as the engine runs it by default (the file backend saves the
           whole state after every step), and with PULUMI_SKIP_CHECKPOINTS=true (the state is saved once,
           at the end), each into a fresh cluster and a fresh stack
CPU seconds are reported for the client (the process tree of pulumi or kubectl) and the API server
(kube-apiserver + etcd), so a ratio can be traced to the side that spends it.

Targets: the ~1000-resource preview under 60 s; `up` within 2x of the `kubectl apply --server-side` floor.

    python -m bench.engine [--teams 100] [--modes default skip-checkpoints] [--keep]

Exit status: 0 targets hold, 1 a target fails, 2 a step failed, 3 skipped (no tool chain or local cluster).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, NoReturn

from bench.common import ROOT, process_cpu_seconds, verdict
from bench.synth import stack_config
from localcluster.driver import LocalCluster, ensure_stack, pulumi_env
from localcluster.toolcache import BIN
from localcluster.signals import interrupt_on_sigterm

TOOLS = ("pulumi", "pulumi-language-python", "pulumi-resource-kubernetes", "etcd", "kube-apiserver",
         "kube-controller-manager")
# Apart from a user's `make up` cluster (16443/23790), the tests' (26443/24790, 27443/25790) and the
# simulator's (28443/26790), and below the ephemeral port range.
APISERVER_PORT = int(os.environ.get("GPU_PLATFORM_BENCH_APISERVER_PORT", "29443"))
ETCD_PORT = int(os.environ.get("GPU_PLATFORM_BENCH_ETCD_PORT", "22790"))
PASSPHRASE = "local-only-passphrase"  # the documented local-only passphrase; the stack holds no secrets
STACK = "bench"
# Addons off: see the module docstring. Kueue objects are still registered (local-cluster installs the CRDs).
NO_ADDONS = {"gpuOperator": {"install": False}, "kueue": {"install": False}, "monitoring": {"install": False},
             "efaDevicePlugin": {"install": False}}
PREVIEW_BUDGET_S = 60.0
UP_OVER_FLOOR = 2.0
MODES = {"default": {}, "skip-checkpoints": {"PULUMI_SKIP_CHECKPOINTS": "true"}}


@dataclass
class Timing:
    label: str
    seconds: float
    client_cpu: float
    server_cpu: float
    load: tuple[float, float]  # 1-minute load average before and after
    units: int  # resources (pulumi) or objects (kubectl) the step handled

    @property
    def per_100(self) -> float:
        return self.seconds / self.units * 100

    def line(self) -> str:
        return (f"{self.label:<58} {self.seconds:7.1f} s  {self.per_100:5.2f} s/100  "
                f"cpu client {self.client_cpu:6.1f} s, server {self.server_cpu:5.1f} s  "
                f"load {self.load[0]:.1f}->{self.load[1]:.1f}")


@dataclass
class Results:
    teams: int
    resources: int = 0
    objects: int = 0
    timings: dict[str, Timing] = field(default_factory=dict)


def _run(cmd: list[str], env: dict[str, str], timeout: float = 3600, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {out.returncode}\n--- stdout\n{out.stdout[-3000:]}\n"
                           f"--- stderr\n{out.stderr[-3000:]}")
    return out


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def _children_cpu() -> float:
    """CPU of every waited-for descendant: pulumi reaps its language host, program and provider."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class Cluster:
    """One fresh local cluster in its own state directory, stopped (and checked gone) on exit; the caller's
    LOCAL_CLUSTER_* settings do not apply (every run's cluster is the same)."""

    def __init__(self, state: Path):
        self.state = state
        self.driver = LocalCluster(state, APISERVER_PORT, ETCD_PORT, inherit_local_cluster=False)
        self.env = self.driver.env()
        self.kubeconfig = self.driver.kubeconfig
        self.pids: dict[str, int] = {}

    def __enter__(self) -> "Cluster":
        for port in (APISERVER_PORT, ETCD_PORT, ETCD_PORT + 10):
            if not _port_free(port):
                raise RuntimeError(f"port {port} is in use: set GPU_PLATFORM_BENCH_APISERVER_PORT / _ETCD_PORT")
        try:
            self.driver.start(timeout=600)
            # Asked once: a lookup between two CPU readings would count towards the client's CPU.
            for component in ("kube-apiserver", "etcd"):
                pid = self.driver.pid(component)
                if pid is None:
                    raise RuntimeError(f"{component} is not running after local-cluster start")
                self.pids[component] = pid
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        left = self.driver.stop()
        if left:
            raise RuntimeError(f"local-cluster stop left processes of {self.state}: {left}")

    def server_cpu(self) -> float:
        return sum(process_cpu_seconds(pid) for pid in self.pids.values())


def timed(label: str, cmd: list[str], env: dict[str, str], cluster: Cluster, units: int) -> tuple[Timing, str]:
    load0 = os.getloadavg()[0]
    client0, server0 = _children_cpu(), cluster.server_cpu()
    started = time.perf_counter()
    out = _run(cmd, env)
    seconds = time.perf_counter() - started
    t = Timing(label, seconds, _children_cpu() - client0, cluster.server_cpu() - server0,
               (load0, os.getloadavg()[0]), units)
    print(t.line(), flush=True)
    return t, out.stdout


def manifests(teams: int, out: Path) -> tuple[Path, int, int]:
    """All Kubernetes objects of the synthetic stack in one file, namespaces first (kubectl does not
    order them), and the number of custom resources pulumi registers (objects + the provider)."""
    import yaml

    from components.program import run
    from harness.render import run_program

    rendered = run_program(run, STACK, stack_config(teams, addons=NO_ADDONS))
    objects = sorted(rendered.kubernetes_objects(), key=lambda o: o["kind"] != "Namespace")
    path = out / "all.yaml"
    path.write_text(yaml.safe_dump_all(objects, sort_keys=False))
    return path, len(objects), len(rendered.custom)


def kubectl_floor(res: Results, tmp: Path, path: Path, label: str, extra: list[str]) -> None:
    with Cluster(tmp / f"cluster-{label}") as cluster:
        env = {**cluster.env, "KUBECONFIG": str(cluster.kubeconfig)}
        cmd = ["kubectl", "apply", "--server-side", "--field-manager=bench", *extra, "-f", str(path)]
        t, stdout = timed(" ".join(["kubectl apply --server-side", *extra]), cmd, env, cluster, res.objects)
        applied = sum(1 for line in stdout.splitlines() if line.endswith("serverside-applied"))
        if applied != res.objects:
            raise RuntimeError(f"kubectl applied {applied} of {res.objects} objects")
        res.timings[label] = t


class Stack:
    """A fresh stack in a temporary file backend, its config (with the passphrase salt) in a temporary file:
    the repository stays untouched (localcluster.driver.ensure_stack)."""

    def __init__(self, tmp: Path, teams: int, cluster: Cluster, extra_env: dict[str, str], name: str = STACK,
                 config: dict[str, Any] | None = None, backend: Path | None = None):
        """`name`, `config` and a shared `backend`: several stacks of one environment that reference each
        other (bench/engine_split.py); by default one stack of the synthetic `teams`-team config."""
        import yaml

        self.name = name
        self.backend = backend or tmp / "backend"
        tmp.mkdir(parents=True, exist_ok=True)
        self.backend.mkdir(parents=True, exist_ok=True)
        self.env = {**pulumi_env(self.backend, PASSPHRASE, base=cluster.env), **extra_env}
        self.config = tmp / f"Pulumi.{name}.yaml"
        config = config if config is not None else stack_config(teams, addons=NO_ADDONS)
        self.config.write_text(yaml.safe_dump({"config": config}))
        ensure_stack(self.env, name, self.config)

    def cmd(self, *args: str) -> list[str]:
        return [str(BIN / "pulumi"), *args, "--stack", self.name, "--config-file", str(self.config), "--non-interactive"]


def _count(stdout: str, word: str) -> int:
    found = re.findall(rf"(\d+) {word}\b", stdout)
    return int(found[-1]) if found else 0


def engine_runs(res: Results, tmp: Path, mode: str, with_previews: bool) -> None:
    with Cluster(tmp / f"cluster-{mode}") as cluster:
        stack = Stack(tmp / f"stack-{mode}", res.teams, cluster, MODES[mode])
        n = res.resources
        suffix = "" if mode == "default" else f", {' '.join(f'{k}={v}' for k, v in MODES[mode].items())}"
        if with_previews:
            t, out = timed("pulumi preview (new stack: every object a dry run)", stack.cmd("preview"),
                           stack.env, cluster, n)
            if _count(out, "to create") < n:
                raise RuntimeError(f"preview plans {_count(out, 'to create')} creates, expected {n}\n{out[-2000:]}")
            res.timings["preview-create"] = t
        t, out = timed(f"pulumi up --skip-preview{suffix}", stack.cmd("up", "--yes", "--skip-preview"),
                       stack.env, cluster, n)
        if _count(out, "created") < n:
            raise RuntimeError(f"up created {_count(out, 'created')} resources, expected {n}\n{out[-2000:]}")
        res.timings[f"up-{mode}"] = t
        if with_previews:
            t, _ = timed("pulumi preview --expect-no-changes (deployed stack)",
                         stack.cmd("preview", "--expect-no-changes"), stack.env, cluster, n)
            res.timings["preview-unchanged"] = t


def report(res: Results) -> bool:
    t = res.timings
    floor = t["kubectl"]
    ok = True
    print(f"\nN={res.teams} teams: {res.resources} resources ({res.objects} Kubernetes objects)")
    for key in ("preview-create", "preview-unchanged"):
        if key in t:
            # 60 s for ~1000 resources; a bigger stack gets no more, a smaller one proportionally less.
            budget = PREVIEW_BUDGET_S * min(1.0, res.resources / 1000)
            good = t[key].seconds < budget
            print(f"{t[key].label}: {t[key].seconds:.1f} s = {t[key].seconds / budget:.2f} of its {budget:.0f} s "
                  f"budget, {t[key].per_100:.2f} s/100 resources; target < 60 s per ~1000 resources: {verdict(good)}")
            ok = ok and good
    for mode in MODES:
        key = f"up-{mode}"
        if key not in t:
            continue
        ratio = t[key].seconds / floor.seconds
        lean = f", vs --validate=false {t[key].seconds / t['kubectl-novalidate'].seconds:.1f}" \
            if "kubectl-novalidate" in t else ""
        headline = mode == "default"
        print(f"up/floor ({mode}) = {ratio:.2f}{lean}; target <= {UP_OVER_FLOOR:g}: "
              f"{verdict(ratio <= UP_OVER_FLOOR) if headline else 'for comparison'}")
        if headline:
            ok = ok and ratio <= UP_OVER_FLOOR
    return ok


def available() -> str | None:
    missing = [t for t in TOOLS if not (BIN / t).exists()]
    if missing:
        return f"missing {', '.join(missing)} in {BIN}: run scripts/toolchain"
    if shutil.which("kubectl") is None:
        return "kubectl is not on PATH"
    if not (ROOT / "scripts" / "local-cluster").exists():
        return "no scripts/local-cluster"
    return None


def _stray_stack_files() -> set[Path]:
    return set(ROOT.glob(f"Pulumi.{STACK}*.yaml"))


def run_in_workdir(prefix: str, keep: bool, body: Callable[[Path], bool]) -> NoReturn:
    """An engine benchmark's run: body(work dir) says whether the targets were met. A tool failing or timing
    out exits 2; the work dir goes unless --keep; a Pulumi.<stack>*.yaml the run left in the repository
    fails it (exit 1, as a missed target)."""
    before = _stray_stack_files()
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    ok = False
    try:
        ok = body(tmp)
    except (RuntimeError, subprocess.TimeoutExpired) as err:
        print(f"error: {err}")
        sys.exit(2)
    finally:
        if keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    stray = _stray_stack_files() - before
    if stray:
        print(f"error: the benchmark left {sorted(map(str, stray))} in the repository")
        ok = False
    sys.exit(0 if ok else 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--teams", type=int, default=100)
    ap.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES),
                    help="how `pulumi up` runs (default: both; 'default' alone skips the fast comparison)")
    ap.add_argument("--no-lean-floor", action="store_true", help="skip the kubectl --validate=false floor")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, state)")
    ap.add_argument("--json", help="write the timings here as JSON")
    args = ap.parse_args()
    interrupt_on_sigterm()  # a SIGTERM stops the benchmark's clusters, as Ctrl-C does

    why = available()
    if why:
        print(f"engine benchmark skipped: {why}")
        sys.exit(3)
    res = Results(teams=args.teams)

    def body(tmp: Path) -> bool:
        path, res.objects, res.resources = manifests(args.teams, tmp)
        print(f"engine N={args.teams}: {res.resources} resources, {res.objects} Kubernetes objects; "
              f"{os.cpu_count()} cores; load {os.getloadavg()[0]:.1f}; work dir {tmp}", flush=True)
        kubectl_floor(res, tmp, path, "kubectl", [])
        if not args.no_lean_floor:
            kubectl_floor(res, tmp, path, "kubectl-novalidate", ["--validate=false"])
        for i, mode in enumerate(args.modes):
            engine_runs(res, tmp, mode, with_previews=i == 0)
        ok = report(res)
        if args.json:
            Path(args.json).write_text(json.dumps({
                "teams": res.teams, "resources": res.resources, "objects": res.objects,
                "timings": {k: {**vars(v), "per_100": v.per_100} for k, v in res.timings.items()},
            }, indent=2))
        return ok

    run_in_workdir("gpu-platform-bench-", args.keep, body)


if __name__ == "__main__":
    main()
