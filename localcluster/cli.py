"""`scripts/local-cluster COMMAND`: the local cluster's one driver. The help text below is what `scripts/local-cluster
help` prints (its Usage part on a wrong command, with exit 2).

The live local cluster: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, Kueue, KWOK and
Karpenter (its KWOK provider) on loopback, with generated PKI, the GPU Operator / Prometheus Operator CRDs,
Kueue's CRDs, RBAC and webhooks from its real chart, and simulated nodes for every pool of a stack: the
pools that scale start at capacity.min and Karpenter adds and removes their nodes as pods wait and
nodes empty; reserved and topology-aware pools are there whole (docs/local-cluster.md says why).

Usage: scripts/local-cluster COMMAND
  start               start every component (no-op when running), install CRDs, register the nodes
  stop [COMPONENT]    stop every process of the cluster (state is kept); with COMPONENT only that one
                      (restart COMPONENT starts it again, start restarts the whole cluster)
  status              running/stopped per component and the server URL (exit 3 when not all running)
  kubeconfig          print the admin kubeconfig path (user admin, group system:masters)
  env                 print export lines (KUBECONFIG, LOCAL_CLUSTER_SERVER, LOCAL_CLUSTER_DIR)
  user NAME [GROUP..] write users/NAME.kubeconfig: client cert CN=NAME, O=GROUP each; print its path
  nodes               (re-)register the simulated nodes (done by start)
  restart COMPONENT   stop and start one process (kueue, kube-scheduler, kwok, etcd, ...), state kept; the
                      others must be running, the component itself may be stopped
  pid COMPONENT       print the pid of that running process (exit 3 when it is not running)
  multikueue-kubeconfig [FILE]  on a MultiKueue worker (stack deployed with gpu-platform:multiKueueRole
                      worker): write the kubeconfig a manager uses (this server, its CA, the token of
                      the stack's multikueue-manager ServiceAccount); print its path
  worker COMMAND ...  the same commands for a second, independent cluster, the MultiKueue "worker":
                      state .local/worker, API server 127.0.0.1:17443, etcd 23890 (LOCAL_CLUSTER_WORKER_DIR,
                      LOCAL_CLUSTER_WORKER_APISERVER_PORT and LOCAL_CLUSTER_WORKER_ETCD_PORT move them)
  logs [COMPONENT]    tail the logs (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kueue, kwok,
                      audit)
  audit-log           print the path of the API server's audit log (JSON lines, audit.k8s.io/v1 Events)
  reset               stop and delete all state (certificates, etcd data, kubeconfigs)

Environment:
  LOCAL_CLUSTER_DIR             state directory (default <repo>/.local/cluster)
  LOCAL_CLUSTER_STACK           stack whose pools become the nodes and whose Kueue Configuration Kueue
                                runs with (default local)
  LOCAL_CLUSTER_APISERVER_PORT  kube-apiserver port on 127.0.0.1 (default 16443); the next five ports are
                                Kueue's webhook, health and metrics ports, KWOK's and kube-scheduler's;
                                +6 and +7 are Karpenter's metrics and health ports; +8 to +19 the
                                workload controllers' webhook, health and metrics ports
  LOCAL_CLUSTER_ETCD_PORT       etcd client port on 127.0.0.1 (default 23790; peer port is +10)
  LOCAL_CLUSTER_PODS_READY_TIMEOUT  Kueue waitForPodsReady.timeout (default: the stack's, 30m)
  LOCAL_CLUSTER_WORKER_LOST_TIMEOUT Kueue multiKueue.workerLostTimeout (default: Kueue's, 15m)
  LOCAL_CLUSTER_KUEUE_LOG_LEVEL Kueue's --zap-log-level: info (default), debug, error or 1-9 (3: why each
                                workload was or was not admitted)
  GPU_PLATFORM_CRDS             directory whose subdirectories hold the CRD yaml files to install (default: the
                                tool cache's reference copy when scripts/tools/reference.sh has fetched it, else
                                none; "none" installs none); Kueue's come from its chart
  GPU_PLATFORM_PYTHON           python with the project's requirements (default <repo>/.venv/bin/python)
  GPU_PLATFORM_CACHE            tool cache (default: the one localcluster/toolcache.py names)
  LOCAL_CLUSTER_START_TIMEOUT   seconds to wait for each component (default 90)
  LOCAL_CLUSTER_SCALE_UP_DELAY  how long a node Karpenter adds takes to register (default 5s)
  LOCAL_CLUSTER_SCALE_DOWN_DELAY how long an empty node Karpenter added stays (default 30s)
  LOCAL_CLUSTER_PROMETHEUS      1 (default): run Prometheus (+20) and the GPU telemetry of the simulated nodes
                                (+21); 0: neither
  LOCAL_CLUSTER_SCRAPE_INTERVAL Prometheus' scrape and rule evaluation interval and the telemetry's reads of the
                                cluster, whole seconds such as 1s (default 15s; a compressed replay wants 1s)
  LOCAL_CLUSTER_WORKLOADS       workload controllers to run: jobset, leaderWorkerSet, trainer, kuberay (comma-
                                separated), or none (default: those the stack's add-ons install)
  LOCAL_CLUSTER_REAL_NODE       a real node beside the simulated ones (localcluster/realnode: containerd, runc, a
                                kubelet and a GPU device plugin; needs root): the pool it joins, 1 for the stack's
                                first whole-GPU pool, or none (default); its kubelet serves on +22 (healthz +23)

KWOK plays the kubelet of every simulated node: pods bound to one become Running, and Succeeded after
the duration they carry (annotation sim.gpu-platform.io/duration), and heartbeats every node. The
controller-manager runs every controller a real cluster runs by default, node lifecycle and taint
eviction included: a node that stops heartbeating or reports NotReady is tainted and its pods evicted,
as on EKS.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Sequence

from . import ports as portlib
from .ports import APISERVER_PORT_ENV, ETCD_PORT_ENV, PortError
from .state import ALL_COMPONENTS, CORE_COMPONENTS, DEFAULT_WORKER_STATE, Paths, from_environment, state_dir, with_running
from .supervise import Clock, Supervisor, log

EXIT_FAILED, EXIT_USAGE, EXIT_NOT_RUNNING = 1, 2, 3
NAME = r"^[A-Za-z0-9][A-Za-z0-9._:@-]*$"   # a user or group name in a certificate subject


class Failed(Exception):
    """The command cannot go on: `local-cluster: error: MESSAGE`, exit 1."""


def help_text() -> str:
    return (__doc__ or "").split("\n\n", 1)[1]


def usage() -> str:
    text = help_text()
    start = text.index("Usage:")
    end = text.index("\n", text.index("  reset "))
    return text[start:end + 1]


class Command:
    """One command on the cluster of LOCAL_CLUSTER_DIR, with the settings of the environment or of the running
    cluster (cluster.env wins once any of its processes runs)."""

    def __init__(self, env: dict[str, str], cwd: Path):
        self.env = env
        self.cwd = cwd
        self.paths = Paths(state_dir(env.get("LOCAL_CLUSTER_DIR"), cwd))
        self.timeout = float(env.get("LOCAL_CLUSTER_START_TIMEOUT") or 90)
        self.sup = Supervisor(self.paths)
        self.clock = Clock()
        self._lock: int | None = None
        self._ctx = None

    # settings and context ------------------------------------------------------------------------------

    def settings(self):
        requested = from_environment(self.env, self.cwd)
        if self.paths.cluster_env.is_file() and self.sup.any_running():
            return with_running(requested, self.paths.cluster_env)
        return requested

    def context(self, reload: bool = False):
        from .context import Context

        if self._ctx is None or reload:
            settings = self.settings()
            if self._ctx is None:
                python = self.env.get("GPU_PLATFORM_PYTHON") or sys.executable
                self._ctx = Context(self.paths, settings, self.sup, python, self.timeout, self.clock)
            else:
                self._ctx.settings = settings
        return self._ctx

    def lock(self) -> None:
        """Serialize start, stop, restart and reset of one state directory (the servers do not hold it)."""
        self.paths.state.mkdir(parents=True, exist_ok=True)
        self._lock = os.open(self.paths.lock, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        deadline = time.monotonic() + self.timeout * 3
        while True:
            try:
                fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise Failed(f"another local-cluster command holds {self.paths.lock}") from None
                time.sleep(0.1)

    def known(self, name: str) -> None:
        if name not in ALL_COMPONENTS:
            raise Failed(f"no component {name} (components: {' '.join(ALL_COMPONENTS)})")

    # commands -------------------------------------------------------------------------------------------

    def start(self, args: list[str]) -> int:
        from . import lifecycle

        self.lock()
        ctx = self.context()
        requested = from_environment(self.env, self.cwd).stack
        return lifecycle.start(ctx, requested, lambda: self.context(reload=True))

    def stop(self, args: list[str]) -> int:
        self.lock()
        if args:
            if len(args) != 1:
                raise Failed("usage: local-cluster stop [COMPONENT]")
            self.known(args[0])
            self.sup.stop(args[0])
            return 0
        if not self.sup.any_running():
            log("not running")
        from . import lifecycle

        return 0 if lifecycle.stop(self.context()) else EXIT_FAILED

    def restart(self, args: list[str]) -> int:
        if len(args) != 1:
            raise Failed(f"usage: local-cluster restart COMPONENT (one of: {' '.join(CORE_COMPONENTS)})")
        from . import lifecycle

        self.lock()
        return lifecycle.restart(self.context(), args[0])

    def pid(self, args: list[str]) -> int:
        if len(args) != 1:
            raise Failed(f"usage: local-cluster pid COMPONENT (one of: {' '.join(ALL_COMPONENTS)})")
        self.known(args[0])
        pid = self.sup.pid_of(args[0])
        if pid is None:
            log(f"{args[0]} is not running")
            return EXIT_NOT_RUNNING
        print(pid)
        return 0

    def status(self, args: list[str]) -> int:
        settings = self.settings()
        components, server = settings.components, settings.ports.server
        running = 0
        for c in components:
            pid = self.sup.pid_of(c)
            print(f"{c}: running (pid {pid})" if pid is not None else f"{c}: stopped")
            running += pid is not None
        if running == len(components):
            print(f"cluster: running at {server}")
            print(f"kubeconfig: {self.paths.admin_kubeconfig}")
            return 0
        if running == 0:
            print(f"cluster: stopped (server would be {server})")
        else:
            print(f"cluster: partly running (server {server}); run start to restart it or stop")
        return EXIT_NOT_RUNNING

    def kubeconfig(self, args: list[str]) -> int:
        print(self.paths.admin_kubeconfig)
        return 0

    def audit_log(self, args: list[str]) -> int:
        print(self.paths.audit_log)
        return 0

    def env_(self, args: list[str]) -> int:
        server = self.settings().ports.server
        print(f"export KUBECONFIG='{self.paths.admin_kubeconfig}'")
        print(f"export LOCAL_CLUSTER_SERVER='{server}'")
        print(f"export LOCAL_CLUSTER_DIR='{self.paths.state}'")
        print(f"export LOCAL_CLUSTER_AUDIT_LOG='{self.paths.audit_log}'")
        return 0

    def user(self, args: list[str]) -> int:
        import re

        from .pki import ensure_ca, issue, write_kubeconfig

        if not args:
            raise Failed("usage: local-cluster user NAME [GROUP...]")
        name, groups = args[0], args[1:]
        if not re.match(NAME, name):
            raise Failed(f"invalid user name: {name}")
        for g in groups:
            if not re.match(NAME, g):
                raise Failed(f"invalid group name: {g}")
        server, pki = self.settings().ports.server, self.paths.pki
        ensure_ca(pki, log)
        self.paths.users.mkdir(parents=True, exist_ok=True)
        issue(pki, f"user-{name}", "".join(f"/O={g}" for g in groups) + f"/CN={name}", "client")
        out = self.paths.users / f"{name}.kubeconfig"
        write_kubeconfig(out, server, pki, name, f"user-{name}")
        print(out)
        return 0

    def nodes(self, args: list[str]) -> int:
        from .control_plane import register_nodes
        from .supervise import StartError

        ctx = self.context()
        if not self.sup.all_running(ctx.settings.components):
            raise Failed("the cluster is not running (scripts/local-cluster start)")
        try:
            register_nodes(ctx)
        except StartError as err:
            raise Failed(str(err)) from None
        return 0

    def multikueue_kubeconfig(self, args: list[str]) -> int:
        """The kubeconfig a MultiKueue manager uses for this worker: this server, its CA, the token the token
        controller put in the stack's kueue-system/multikueue-manager-token Secret."""
        import base64

        from .kubectl import Kubectl
        from .pki import token_credentials, write_kubeconfig_for

        settings = self.settings()
        if not self.sup.all_running(settings.components):
            raise Failed("the cluster is not running (scripts/local-cluster start)")
        out = Path(args[0]) if args else self.paths.state / "multikueue-manager.kubeconfig"
        kubectl, token = Kubectl(self.paths.admin_kubeconfig), ""
        deadline = time.monotonic() + self.timeout
        while not token and time.monotonic() < deadline:
            got = kubectl.run("-n", "kueue-system", "get", "secret", "multikueue-manager-token",
                              "-o", "jsonpath={.data.token}")
            try:
                token = base64.b64decode(got.stdout.strip()).decode() if got.returncode == 0 else ""
            except ValueError:
                token = ""
            if not token:
                time.sleep(0.2)
        if not token:
            raise Failed("no token in kueue-system/multikueue-manager-token: deploy the stack here with "
                         "gpu-platform:multiKueueRole=worker first")
        write_kubeconfig_for(out, settings.ports.server, self.paths.pki / "ca.crt", "multikueue-manager",
                             token_credentials(token))
        print(args[0] if args else out)
        return 0

    def logs(self, args: list[str]) -> int:
        if args:
            path = self.paths.log(args[0])
            if not path.is_file():
                raise Failed(f"no log {path}")
            sys.stdout.write("".join(path.read_text(errors="replace").splitlines(keepends=True)[-50:]))
            return 0
        for c in self.settings().components:
            print(f"== {c}")
            path = self.paths.log(c)
            if path.is_file():
                sys.stdout.write("".join(path.read_text(errors="replace").splitlines(keepends=True)[-20:]))
        return 0

    def reset(self, args: list[str]) -> int:
        if not self.paths.looks_like_state():
            raise Failed(f"{self.paths.state} does not look like a local-cluster state directory; not deleting it")
        self.lock()
        from . import lifecycle

        if not lifecycle.stop(self.context()):
            raise Failed(f"not deleting {self.paths.state}: the real node's cleanup left something (above)")
        shutil.rmtree(self.paths.state)
        log(f"deleted {self.paths.state}")
        return 0


COMMANDS = {
    "start": Command.start, "stop": Command.stop, "restart": Command.restart, "pid": Command.pid,
    "status": Command.status, "kubeconfig": Command.kubeconfig, "audit-log": Command.audit_log, "env": Command.env_,
    "user": Command.user, "nodes": Command.nodes, "multikueue-kubeconfig": Command.multikueue_kubeconfig,
    "logs": Command.logs, "reset": Command.reset,
}


def worker_env(env: dict[str, str]) -> dict[str, str]:
    """A second, independent cluster beside the default one: its own state and ports."""
    return {**env,
            "LOCAL_CLUSTER_DIR": env.get("LOCAL_CLUSTER_WORKER_DIR") or str(DEFAULT_WORKER_STATE),
            APISERVER_PORT_ENV: env.get("LOCAL_CLUSTER_WORKER_APISERVER_PORT") or str(portlib.WORKER_APISERVER_PORT),
            ETCD_PORT_ENV: env.get("LOCAL_CLUSTER_WORKER_ETCD_PORT") or str(portlib.WORKER_ETCD_PORT)}


def main(argv: Sequence[str] | None = None, env: dict[str, str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    env = dict(os.environ if env is None else env)
    command = args.pop(0) if args else ""
    if command == "worker":
        if not args:
            log("error: usage: local-cluster worker COMMAND ...")
            return EXIT_FAILED
        env = worker_env(env)
        os.environ.update(env)   # the processes a worker command starts see its settings too
        command = args.pop(0)
    if command in ("-h", "--help", "help"):
        print(help_text(), end="")
        return 0
    if command not in COMMANDS:
        print(usage(), end="", file=sys.stderr)
        return EXIT_USAGE
    try:
        return COMMANDS[command](Command(env, Path.cwd()), args)
    except (Failed, PortError) as err:
        log(f"error: {err}")
        return EXIT_FAILED
    except ImportError as err:
        log(f"error: {sys.executable} cannot import the project ({err}): run make venv, or set GPU_PLATFORM_PYTHON")
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
