"""The processes after the core: the workload controllers the stack installs (localcluster/workloads.py decides
what each is given), and the GPU telemetry and Prometheus (localcluster/telemetry.py, prometheus.py)."""

from __future__ import annotations

import json
import sys

from .context import Context
from .pki import token_credentials, write_kubeconfig_for
from .state import MONITORING_COMPONENTS, ROOT
from .supervise import StartError
from .tools import binary, tool


def resolve_workloads(ctx: Context) -> None:
    """Which workload controllers and monitoring processes this start runs (the stack's, or LOCAL_CLUSTER_WORKLOADS
    and LOCAL_CLUSTER_PROMETHEUS), their tools built or linked."""
    from gpu_platform.stack_files import load_plan

    from . import workloads

    settings = ctx.settings
    try:
        plan = load_plan(settings.stack, None)[1]
        chosen = workloads.components(plan, settings.workloads)
    except Exception as err:  # noqa: BLE001  (an invalid stack, an unknown controller: the reason, then refuse)
        print(f"error: {err}", file=sys.stderr, flush=True)
        raise StartError(f"resolving the workload controllers of stack {settings.stack} failed") from None
    ctx.workload_tools = {}
    for component in chosen:
        ctx.workload_tools[component] = workloads.BY_COMPONENT[component].tool
        tool(ctx.workload_tools[component])
    settings.started_workloads = list(chosen)
    settings.started_monitoring = list(MONITORING_COMPONENTS) if settings.monitoring else []
    if settings.monitoring:
        tool("prometheus")


def start_workload(ctx: Context, component: str) -> None:
    """One workload controller: its CRDs and chart objects, a token of its chart's ServiceAccount, the process,
    then the objects of its own kinds (which pass its webhooks)."""
    from . import workloads

    d = ctx.paths.state / component
    name = ctx.workload_tools.get(component) or workloads.BY_COMPONENT[component].tool
    ctx.files("workload-files", *ctx.stack_file_args(), "--component", component, "--helm", str(binary("helm")),
              "--src", tool(name, "--src"), "--kube-version", ctx.core.kube_version,
              "--apiserver-port", str(ctx.ports.apiserver), "--ca", str(ctx.paths.pki / "workloads-ca.crt"),
              "--pki", str(ctx.paths.pki), "--out", str(d), failure=f"rendering {component}'s objects failed")
    kubectl = ctx.kubectl
    kubectl.apply_crds(f"{component}-crds", [d / "crds.json"], ctx.paths.state, ctx.timeout)
    if not kubectl.apply_list(d / "objects.json"):
        raise StartError(f"applying {component}'s chart objects failed")
    args = (d / "args").read_text().splitlines()
    env = (d / "env").read_text().splitlines()
    # It runs as its chart's ServiceAccount, with a token of it, as in its pod: the tenant policies tell its objects
    # (a JobSet's Jobs) from a tenant's by that username. Bound to cluster-admin, standing in for the chart's RBAC
    # (KubeRay's chart is not in its module), which a host process needs no narrower.
    user, namespace = (d / "identity").read_text().split()[:2]
    account = user.rpartition(":")[2]
    identity = {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account, "namespace": namespace}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": f"local-cluster:{component}"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
         "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}]}]}
    if not kubectl.apply("-f", "-", input=json.dumps(identity)):
        raise StartError(f"creating {component}'s ServiceAccount failed")
    token = kubectl.run("-n", namespace, "create", "token", account, "--duration=8760h")
    if token.returncode != 0 or not token.stdout.strip():
        raise StartError(f"a token for {component}'s ServiceAccount {namespace}/{account} could not be made")
    kubeconfig = ctx.paths.state / f"{component}.kubeconfig"
    write_kubeconfig_for(kubeconfig, ctx.server, ctx.paths.pki / "ca.crt", user, token_credentials(token.stdout.strip()))
    ctx.sup.launch(component, ["env", f"KUBECONFIG={kubeconfig}", *[e for e in env if e], str(binary(component)),
                               *[a for a in args if a]])
    ctx.wait_http(component, (d / "health").read_text().strip())
    if not kubectl.apply_list(d / "after.json"):
        raise StartError(f"applying {component}'s own objects failed")


def start_gpu_telemetry(ctx: Context) -> None:
    """dcgm-exporter- and kube-state-metrics-shaped series of the simulated nodes' pods (localcluster/telemetry.py)."""
    port = ctx.ports.gpu_telemetry
    ctx.sup.launch("gpu-telemetry", [
        "env", f"PYTHONPATH={ROOT}", ctx.python, "-P", "-m", "localcluster", "gpu-telemetry", *ctx.stack_file_args(),
        "--kubeconfig", str(ctx.paths.admin_kubeconfig), "--listen", f"127.0.0.1:{port}",
    ])
    ctx.wait_http("gpu-telemetry", f"http://127.0.0.1:{port}/healthz")


def start_prometheus(ctx: Context) -> None:
    """Scrapes Kueue, Karpenter and the telemetry, and evaluates the stack's own rule groups
    (localcluster/prometheus.py)."""
    d, ports = ctx.paths.state / "prometheus", ctx.ports
    (d / "data").mkdir(parents=True, exist_ok=True)
    ctx.files("prometheus-config", *ctx.stack_file_args(), "--kubeconfig", str(ctx.paths.admin_kubeconfig),
              "--kueue-metrics", f"127.0.0.1:{ports.kueue_metrics}", "--telemetry", f"127.0.0.1:{ports.gpu_telemetry}",
              "--prometheus", f"127.0.0.1:{ports.prometheus}", "--karpenter-metrics",
              f"127.0.0.1:{ports.karpenter_metrics}", "--out", str(d),
              failure=f"writing the Prometheus configuration of stack {ctx.settings.stack} failed")
    ctx.sup.launch("prometheus", [
        str(binary("prometheus")), f"--config.file={d / 'prometheus.yml'}", f"--storage.tsdb.path={d / 'data'}",
        "--storage.tsdb.retention.time=15d", f"--web.listen-address=127.0.0.1:{ports.prometheus}",
        "--web.enable-lifecycle", "--log.level=warn",
    ])
    ctx.wait_http("prometheus", f"http://127.0.0.1:{ports.prometheus}/-/ready")

