"""Start, stop and restart of the whole local cluster, in order, and what a failed or interrupted start undoes.

A start that fails half-way stops what it started, so a failed start never leaves an etcd or an API server holding
the ports; so does Ctrl-C or a SIGTERM during a start (a cancelled CI job, `timeout make up`), and any other error.
The processes run in sessions of their own: they outlive the command that started them, and no terminal signal
reaches them, so what a start has launched is stopped by this clean-up, never by the signal itself.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType
from typing import Callable

from . import addon_processes, control_plane, ports as portlib
from .context import Context
from .pki import ensure_pki, write_kubeconfig
from .realnode import processes as real_node
from .state import ALL_COMPONENTS, WORKLOAD_COMPONENTS, write_cluster_env
from .supervise import StartError, log

EXIT_FAILED = 1


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived during a start."""


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise Interrupted(signal.Signals(signum).name)


def _hold(signum: int, frame: FrameType | None) -> None:
    """During the clean-up a second signal waits: the stop it would cut short is what leaves nothing behind. (A
    handler, not SIG_IGN: an ignored signal stays ignored in the programs the clean-up runs.)"""
    log(f"{signal.Signals(signum).name} during the clean-up: it finishes first")


def stop(ctx: Context) -> bool:
    """Every process of the cluster (state is kept), then what a real node left; whether nothing stayed behind."""
    ctx.sup.stop_all()
    return not real_node.clean(ctx)


def fail(ctx: Context, err: BaseException, stop_started: bool) -> int:
    """Say why the command failed (a component's log tail when one explains it), stop what it started, exit 1."""
    if isinstance(err, StartError) and err.component:
        path = ctx.paths.log(err.component)
        log(f"error: {err}; last lines of {path}:")
        try:
            print("".join(path.read_text(errors="replace").splitlines(keepends=True)[-25:]), end="", file=sys.stderr)
        except OSError:
            pass
    elif isinstance(err, Interrupted):
        log("error: interrupted: stopping what this start started")
    elif isinstance(err, StartError):
        log(f"error: {err}")
    else:
        log(f"error: start failed ({type(err).__name__}: {err}): stopping what it started")
    if stop_started:
        previous = {s: signal.signal(s, _hold) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            stop(ctx)
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
    return EXIT_FAILED


def guarded(ctx: Context, steps: Callable[[], None]) -> int:
    """Run STEPS with SIGINT and SIGTERM turned into Interrupted; any failure stops every process of the cluster."""
    previous = {s: signal.signal(s, _interrupt) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        steps()
        return 0
    except BaseException as err:  # noqa: BLE001  (whatever ends a start, what it started stops)
        return fail(ctx, err, stop_started=True)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def start(ctx: Context, requested_stack: str, reload: Callable[[], None]) -> int:
    """Start every component (a no-op when the cluster runs and is ready), nodes and Kueue from the stack."""
    settings = ctx.settings
    if ctx.sup.all_running(settings.components) and ctx.admin_ok(f"{ctx.server}/readyz"):
        if requested_stack != settings.stack:
            log(f"error: running with the nodes and Kueue of stack {settings.stack}, not {requested_stack}: stop it "
                "first (or use another LOCAL_CLUSTER_DIR)")
            return EXIT_FAILED
        log(f"already running at {ctx.server} (stack {settings.stack})")
        return 0
    if ctx.sup.any_running():
        log("partly running; restarting")
        stop(ctx)
        reload()
        settings = ctx.settings
    try:
        ctx.tools = None
        control_plane.kueue_log_level(os.environ)   # a bad LOCAL_CLUSTER_KUEUE_LOG_LEVEL refused before anything runs
        _ = ctx.core
        real_node.resolve(ctx)
        for port in ctx.ports.checked_at_start(bool(settings.started_real_node)):
            if portlib.in_use(port):
                raise StartError(f"port {port} on 127.0.0.1 is in use (set LOCAL_CLUSTER_APISERVER_PORT / "
                                 "LOCAL_CLUSTER_ETCD_PORT)")
        for d in (ctx.paths.state, ctx.paths.run, ctx.paths.logs, ctx.paths.users):
            d.mkdir(parents=True, exist_ok=True)
        ensure_pki(ctx.paths.pki, log)
        addon_processes.resolve_workloads(ctx)
        write_cluster_env(ctx.paths.cluster_env, settings)
        state, pki, server = ctx.paths.state, ctx.paths.pki, ctx.server
        write_kubeconfig(ctx.paths.admin_kubeconfig, server, pki, "admin", "admin")
        for file, user, cert in (("controller-manager", "system:kube-controller-manager", "controller-manager"),
                                 ("scheduler", "system:kube-scheduler", "scheduler"), ("kwok", "kwok", "kwok"),
                                 ("kueue", "kueue", "kueue")):
            write_kubeconfig(state / f"{file}.kubeconfig", server, pki, user, cert)
    except Exception as err:  # noqa: BLE001  (nothing runs yet: the reason, and nothing to stop)
        return fail(ctx, err if isinstance(err, StartError) else StartError(str(err)), stop_started=False)
    return guarded(ctx, lambda: _start_processes(ctx))


def _start_processes(ctx: Context) -> None:
    settings, step = ctx.settings, ctx.clock.step
    step(f"starting etcd on 127.0.0.1:{ctx.ports.etcd} ...")
    control_plane.start_etcd(ctx)
    step(f"starting kube-apiserver on {ctx.server} ...")
    control_plane.start_apiserver(ctx)
    step("starting kube-controller-manager ...")
    control_plane.start_controller_manager(ctx)
    step("starting kube-scheduler ...")
    control_plane.start_scheduler(ctx)
    control_plane.install_crds(ctx)
    control_plane.install_kueue(ctx)
    step(f"starting Kueue (stack {settings.stack}'s Configuration) ...")
    control_plane.start_kueue(ctx)
    control_plane.register_nodes(ctx)
    step("starting KWOK ...")
    control_plane.start_kwok(ctx)
    step("starting Karpenter (KWOK provider) ...")
    control_plane.start_karpenter(ctx)
    real_node.remove_stale(ctx)
    if settings.started_real_node:
        step(f"starting the real node (pool of LOCAL_CLUSTER_REAL_NODE={settings.real_node}) ...")
        real_node.start(ctx)
    for component in settings.started_workloads:
        step(f"starting {component} ...")
        addon_processes.start_workload(ctx, component)
    if settings.started_monitoring:
        step(f"starting the GPU telemetry and Prometheus (http://127.0.0.1:{ctx.ports.prometheus}) ...")
        addon_processes.start_gpu_telemetry(ctx)
        addon_processes.start_prometheus(ctx)
    step(f"ready: {ctx.server} (kubeconfig: {ctx.paths.admin_kubeconfig})")


STARTERS: dict[str, Callable[[Context], None]] = {
    "etcd": control_plane.start_etcd,
    "kube-apiserver": control_plane.start_apiserver,
    "kube-controller-manager": control_plane.start_controller_manager,
    "kube-scheduler": control_plane.start_scheduler,
    "kueue": control_plane.start_kueue,
    "kwok": control_plane.start_kwok,
    "karpenter-kwok": control_plane.start_karpenter,
    "containerd": real_node.start_containerd,
    "kubelet": real_node.start_kubelet,
    "gpu-device-plugin": real_node.start_device_plugin,
    "gpu-telemetry": addon_processes.start_gpu_telemetry,
    "prometheus": addon_processes.start_prometheus,
    **{c: (lambda ctx, c=c: addon_processes.start_workload(ctx, c)) for c in WORKLOAD_COMPONENTS},
}
assert set(STARTERS) == set(ALL_COMPONENTS)


def restart(ctx: Context, component: str) -> int:
    """Stop (when running) and start one component; the others must run."""
    components = ctx.settings.components
    if component not in components:
        log(f"error: no component {component} (components: {' '.join(components)})")
        return EXIT_FAILED
    # The component itself may be down (it exited, or `stop COMPONENT` stopped it): restart starts it again.
    for c in components:
        if c != component and ctx.sup.pid_of(c) is None:
            log(f"error: the cluster is not running ({c} is not; scripts/local-cluster start)")
            return EXIT_FAILED
    try:
        _ = ctx.core
        ctx.sup.stop(component)
        ctx.clock.step(f"starting {component} ...")
        STARTERS[component](ctx)
        ctx.clock.step(f"{component} running again")
    except StartError as err:
        # A component that does not come up stops the cluster, as in a start; a step before it fails alone.
        return fail(ctx, err, stop_started=err.component is not None)
    return 0
