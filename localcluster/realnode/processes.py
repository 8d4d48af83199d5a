"""The real node's processes, run by the local cluster's driver like every other component: containerd (its images
imported from the tool cache's archives, no registry), the kubelet and the GPU device plugin, after `prepare`
wrote what they read; the node waited for until it is Ready with the pool's GPUs. `cleanup` after every stop and
before every start, and real nodes of earlier starts deleted."""

from __future__ import annotations

import json
import subprocess
import sys

from ..context import Context
from ..pki import issue, write_kubeconfig
from ..state import REAL_NODE_COMPONENTS
from ..supervise import StartError, log
from ..tools import NodeImages, binary
from . import orphans
from .leftovers import cleanup
from .node import OFF, Layout, RealNodeError, choose_pool, node_name, stale_nodes
from .prepare import write_files


def resolve(ctx: Context) -> None:
    """Whether this start runs a real node (LOCAL_CLUSTER_REAL_NODE), its tools built, installed or linked."""
    ctx.settings.started_real_node = []
    if ctx.settings.real_node.lower() in OFF:
        return
    ctx.node_images = NodeImages.ensure()
    ctx.settings.started_real_node = list(REAL_NODE_COMPONENTS)


def layout(ctx: Context) -> Layout:
    return Layout(ctx.paths.state.resolve())


def clean(ctx: Context) -> list[str]:
    """What the node's containers, mounts, links and cgroups left (nothing without a node directory); the problems
    that stay, each logged."""
    if not ctx.paths.real_node.is_dir():
        return []
    problems = cleanup(layout(ctx))
    for problem in problems:
        print(f"error: real node cleanup: {problem}", file=sys.stderr, flush=True)
    return problems


def remove_orphans(ctx: Context) -> None:
    """What real nodes of other state directories left when none of them runs (orphans), each logged."""
    found = orphans.find(layout(ctx))
    for what in found.describe():
        log(f"removing what {what} left: no real node runs on this machine")
    problems = orphans.remove(found, layout(ctx).device_plugin_dir)
    for problem in problems:
        print(f"error: real node cleanup: {problem}", file=sys.stderr, flush=True)
    if problems:
        raise StartError("the leftovers of another state directory's real node could not be removed (above)")


def remove_stale(ctx: Context) -> None:
    """Real nodes registered by an earlier start that this one does not run."""
    if not ctx.settings.started_real_node and not ctx.paths.real_node.is_dir():
        return   # this state never ran one
    keep = ""
    if ctx.settings.started_real_node:
        keep = node_name(_pool(ctx))
    listed = ctx.kubectl.run("get", "nodes", "-o", "json")
    for name in stale_nodes(json.loads(listed.stdout), keep) if listed.returncode == 0 else []:
        if ctx.kubectl.ok("delete", "node", name):
            log(f"removed stale real node {name}")


def _pool(ctx: Context):
    from gpu_platform.stack_files import load_plan

    try:
        return choose_pool(load_plan(ctx.settings.stack, None)[1], ctx.settings.real_node)
    except RealNodeError as err:
        print(f"error: {err}", file=sys.stderr, flush=True)
        raise StartError(f"the real node cannot start (LOCAL_CLUSTER_REAL_NODE={ctx.settings.real_node})") from None


def node_env(ctx: Context) -> dict[str, str]:
    """The facts `prepare` wrote to node.env (its name, socket, resource, ...)."""
    import shlex

    values = {}
    for line in (ctx.paths.real_node / "node.env").read_text().splitlines():
        key, _, value = line.partition("=")
        values[key] = shlex.split(value)[0] if value else ""
    return values


def start(ctx: Context) -> None:
    """Clean up, prepare, then containerd, the kubelet and the device plugin; until the node is Ready with the
    pool's units."""
    from gpu_platform.stack_files import load_plan

    if clean(ctx):
        raise StartError("the real node's leftovers could not be removed (above)")
    remove_orphans(ctx)
    assert ctx.node_images is not None
    try:
        plan = load_plan(ctx.settings.stack, None)[1]
        facts = write_files(plan, ctx.settings.real_node, layout(ctx), (ctx.ports.kubelet, ctx.ports.kubelet_healthz),
                            ctx.paths.pki, ctx.node_images.pause)
    except RealNodeError as err:
        print(f"error: {err}", file=sys.stderr, flush=True)
        raise StartError(f"the real node cannot start (LOCAL_CLUSTER_REAL_NODE={ctx.settings.real_node})") from None
    print(f"real node {facts.name}: pool {facts.pool.name}, {facts.pool.units_per_node} x {facts.pool.resource_name}, "
          f"allocatable {facts.allocatable[0]}m CPU and {facts.allocatable[1]}Mi of {facts.capacity[0]}m and "
          f"{facts.capacity[1]}Mi", file=sys.stderr, flush=True)
    if facts.fit:
        print(f"warning: {facts.fit}", file=sys.stderr, flush=True)
    env = node_env(ctx)
    name, pki = env["REAL_NODE_NAME"], ctx.paths.pki
    # The kubelet's client certificate: the Node authorizer and NodeRestriction know it as this node.
    if not (pki / f"kubelet-{name}.crt").is_file():
        issue(pki, f"kubelet-{name}", f"/O=system:nodes/CN=system:node:{name}", "client")
    write_kubeconfig(ctx.paths.real_node / "kubelet.kubeconfig", ctx.server, pki, f"system:node:{name}",
                     f"kubelet-{name}")
    if not ctx.kubectl.apply_list(ctx.paths.real_node / "objects.json"):
        raise StartError("applying the real node's RBAC failed")
    start_containerd(ctx)
    start_kubelet(ctx)
    start_device_plugin(ctx)
    want = f"{env['REAL_NODE_UNITS']} True"
    template = (f'{{{{if .status.allocatable}}}}{{{{index .status.allocatable "{env["REAL_NODE_RESOURCE"]}"}}}}'
                '{{end}} {{range .status.conditions}}{{if eq .type "Ready"}}{{.status}}{{end}}{{end}}')
    got = [""]

    def ready() -> bool:
        got[0] = ctx.kubectl.run("get", "node", name, "-o", f"go-template={template}").stdout.strip()
        return got[0] == want

    ctx.sup.wait("kubelet", ready, ctx.timeout, lambda: f"node {name} not Ready with {env['REAL_NODE_UNITS']} "
                 f"{env['REAL_NODE_RESOURCE']} after {ctx.timeout:g}s (got: {got[0]})")
    ctx.clock.step(f"real node {name} Ready: pool {env['REAL_NODE_POOL']}, {env['REAL_NODE_UNITS']} "
                   f"{env['REAL_NODE_RESOURCE']} (kubelet https://{env['REAL_NODE_IP']}:{env['REAL_NODE_KUBELET_PORT']})")


def _args(ctx: Context, name: str) -> list[str]:
    return [a for a in (ctx.paths.real_node / f"{name}.args").read_text().splitlines() if a]


def start_containerd(ctx: Context) -> None:
    socket = node_env(ctx)["REAL_NODE_SOCKET"]
    ctr = [str(binary("ctr")), "--address", socket]
    ctx.sup.launch("containerd", [str(binary("containerd")), *_args(ctx, "containerd")])
    ctx.sup.wait("containerd", lambda: subprocess.run([*ctr, "version"], capture_output=True).returncode == 0,
                 ctx.timeout, f"containerd not answering on {socket} after {ctx.timeout:g}s")
    # No registry: the images are the tool cache's archives (scripts/tools/node-images.sh), under the names the
    # templates and the kubelet use.
    images = ctx.node_images or NodeImages.ensure()
    for archive, image in images.names:
        path = images.directory / archive
        if subprocess.run([*ctr, "-n", "k8s.io", "images", "import", str(path)], capture_output=True).returncode != 0:
            raise StartError(f"importing {image} ({path}) into containerd failed", "containerd")


def start_kubelet(ctx: Context) -> None:
    ctx.sup.launch("kubelet", [str(binary("kubelet")), *_args(ctx, "kubelet")])
    ctx.wait_http("kubelet", node_env(ctx)["REAL_NODE_HEALTHZ"])


def start_device_plugin(ctx: Context) -> None:
    ready = ctx.paths.real_node / "gpu-device-plugin.ready"
    ready.unlink(missing_ok=True)
    ctx.sup.launch("gpu-device-plugin", [str(binary("gpu-device-plugin")), *_args(ctx, "gpu-device-plugin")])
    ctx.sup.wait("gpu-device-plugin", lambda: ready.is_file() and ready.stat().st_size > 0, ctx.timeout,
                 f"gpu-device-plugin did not register with the kubelet within {ctx.timeout:g}s")
