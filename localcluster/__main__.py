"""`python -m localcluster COMMAND`: the files the local cluster's driver hands to kubectl and to its processes.

Every command writes files and prints a one-line summary; errors go to stderr with exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

import yaml

from gpu_platform import conventions as cv
from gpu_platform.audit import audit_policy
from gpu_platform.errors import InputError
from gpu_platform.stack_files import load_plan
from gpu_platform.kueue_config import local_controller_config
from gpu_platform.nodes import fake_nodes
from gpu_platform.spec import SpecError

from . import autoscaler, kueue, kwok, nodes, prometheus, telemetry_server, workloads
from .api import Client


def _plan(stack: str):
    """A stack name (Pulumi.<stack>.yaml) or the path of a stack file (tests keep fixture stacks elsewhere):
    gpu_platform.stack_files.stack_file tells the two apart."""
    return load_plan(stack, None)[1]


def _list(items: list[dict[str, Any]]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})


def cmd_nodes(args: argparse.Namespace) -> str:
    plan = _plan(args.stack)
    count = nodes.write(fake_nodes(plan), args.kube_version, Path(args.out))
    return f"{count} simulated nodes of stack {args.stack}"


def cmd_autoscaler(args: argparse.Namespace) -> str:
    plan = _plan(args.stack)
    out = Path(args.out)
    (out / "instance-types.json").write_text(json.dumps(autoscaler.instance_types(plan), indent=1))
    objects = autoscaler.objects(plan)
    (out / "objects.json").write_text(_list(objects))
    pools = [o["metadata"]["name"] for o in objects if o["kind"] == "NodePool"]
    return f"Karpenter NodePools of stack {args.stack}: {', '.join(pools) or 'none (no pool scales)'}"


def cmd_workloads(args: argparse.Namespace) -> str:
    """The workload controllers to run: "COMPONENT TOOL" per line on stdout."""
    plan = _plan(args.stack)
    for comp in workloads.components(plan, args.requested):
        print(comp, workloads.BY_COMPONENT[comp].tool)
    return ""


def cmd_workload_files(args: argparse.Namespace) -> str:
    plan = _plan(args.stack)
    lc = workloads.BY_COMPONENT[args.component]
    out = Path(args.out)
    workloads.write(plan, lc.key, args.helm, Path(args.src), args.kube_version,
                    args.apiserver_port + lc.port_offset, Path(args.ca).read_bytes(), out)
    certs = workloads.cert_dir(lc.key, out)
    certs.mkdir(parents=True, exist_ok=True)
    for name in ("crt", "key"):
        target = certs / f"tls.{name}"
        target.write_bytes((Path(args.pki) / f"workloads-webhook.{name}").read_bytes())
        target.chmod(0o600)
    return f"{args.component}: objects, configuration and certificates in {out}"


def cmd_stale_nodes(args: argparse.Namespace) -> str:
    keep = set(Path(args.names).read_text().split())
    for name in nodes.stale(json.load(sys.stdin), keep):
        print(name)
    return ""


def cmd_kueue_objects(args: argparse.Namespace) -> str:
    plan = _plan(args.stack)
    pki = Path(args.pki)
    rendered = kueue.render_chart(args.helm, Path(args.chart), plan, args.kube_version)
    # The namespace first: kubectl applies a List in order.
    objects = kueue.namespace_and_secret(*((pki / f).read_bytes() for f in
                                           ("kueue-ca.crt", "kueue-ca.key", "kueue-webhook.crt", "kueue-webhook.key")))
    objects += kueue.local_objects(rendered, args.webhook_port, (pki / "kueue-ca.crt").read_bytes())
    crds, rest = kueue.split_crds(objects)
    out = Path(args.out)
    (out / "kueue-crds.json").write_text(_list(crds))
    (out / "kueue-objects.json").write_text(_list(rest))
    return f"Kueue chart: {len(crds)} CRDs and {len(rest)} objects for loopback port {args.webhook_port}"


def cmd_kueue_config(args: argparse.Namespace) -> str:
    plan = _plan(args.stack)
    config = local_controller_config(
        plan, health_port=args.health_port, metrics_port=args.metrics_port, webhook_port=args.webhook_port,
        cert_dir=args.cert_dir, pods_ready_timeout=args.pods_ready_timeout or None,
        worker_lost_timeout=args.worker_lost_timeout or None,
    )
    Path(args.out).write_text(yaml.safe_dump(config, sort_keys=False))
    return f"Kueue Configuration of stack {args.stack}"


def cmd_audit_policy(args: argparse.Namespace) -> str:
    plan = _plan(args.stack)
    Path(args.out).write_text(yaml.safe_dump(audit_policy(plan.addons.kueue.integrations), sort_keys=False))
    return f"audit policy of stack {args.stack}"


def cmd_kwok_stages(args: argparse.Namespace) -> str:
    Path(args.out).write_text(kwok.config_yaml())
    return f"{len(kwok.stages())} KWOK stages"


def cmd_kwok_selector(args: argparse.Namespace) -> str:
    print(f"{cv.KWOK_NODE_ANNOTATION}={cv.KWOK_NODE_ANNOTATION_VALUE}")
    return ""


def cmd_scheduler_config(args: argparse.Namespace) -> str:
    # kube-scheduler's own client limiter (50 QPS by default) would pace a replayed trace of thousands of
    # pods; the API server has priority and fairness of its own (k8s.io/kube-scheduler/config/v1).
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": args.kubeconfig, "qps": 300, "burst": 500},
        "leaderElection": {"leaderElect": False},
    }
    Path(args.out).write_text(yaml.safe_dump(config, sort_keys=False))
    return "kube-scheduler configuration"


def cmd_prometheus_config(args: argparse.Namespace) -> str:
    plan = _plan(args.stack)
    client = Client.from_kubeconfig(Path(args.kubeconfig)) if args.kubeconfig else None
    written = prometheus.write(plan, Path(args.out), kueue_metrics=args.kueue_metrics, telemetry=args.telemetry,
                               prometheus=args.prometheus, karpenter_metrics=args.karpenter_metrics or None,
                               client=client)
    return f"Prometheus of stack {args.stack}: {', '.join(p.name for p in written)} in {args.out}"


def cmd_gpu_telemetry(args: argparse.Namespace) -> str:
    host, _, port = args.listen.rpartition(":")
    telemetry_server.serve(_plan(args.stack), Path(args.kubeconfig), host or "127.0.0.1", int(port), args.refresh,
                           log=lambda m: print(m, file=sys.stderr, flush=True))
    return ""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m localcluster", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    n = sub.add_parser("nodes", help="simulated nodes of a stack: nodes.json, status.json, names in --out")
    n.add_argument("--stack", required=True)
    n.add_argument("--kube-version", required=True)
    n.add_argument("--out", required=True)
    n.set_defaults(func=cmd_nodes)
    au = sub.add_parser("autoscaler", help="Karpenter's KWOK provider: instance-types.json and objects.json in --out")
    au.add_argument("--stack", required=True)
    au.add_argument("--out", required=True)
    au.set_defaults(func=cmd_autoscaler)
    wl = sub.add_parser("workloads", help="the workload controllers to run (COMPONENT TOOL per line)")
    wl.add_argument("--stack", required=True)
    wl.add_argument("--requested", default=None, help="LOCAL_CLUSTER_WORKLOADS (default: the stack's installed ones)")
    wl.set_defaults(func=cmd_workloads)
    wf = sub.add_parser("workload-files", help="one workload controller's objects, configuration and certificates")
    wf.add_argument("--stack", required=True)
    wf.add_argument("--component", required=True, choices=sorted(workloads.BY_COMPONENT))
    wf.add_argument("--helm", required=True)
    wf.add_argument("--src", required=True, help="the controller's module files (scripts/tools/TOOL.sh --src)")
    wf.add_argument("--kube-version", required=True)
    wf.add_argument("--apiserver-port", type=int, required=True)
    wf.add_argument("--ca", required=True, help="the workload webhooks' CA certificate")
    wf.add_argument("--pki", required=True, help="directory with workloads-webhook.{crt,key}")
    wf.add_argument("--out", required=True)
    wf.set_defaults(func=cmd_workload_files)
    s = sub.add_parser("stale-nodes", help="names of nodes registered earlier and not in --names (kubectl JSON on stdin)")
    s.add_argument("--names", required=True)
    s.set_defaults(func=cmd_stale_nodes)
    k = sub.add_parser("kueue-objects", help="Kueue's chart objects for a host process on loopback")
    k.add_argument("--stack", required=True)
    k.add_argument("--helm", required=True)
    k.add_argument("--chart", required=True)
    k.add_argument("--kube-version", required=True)
    k.add_argument("--webhook-port", type=int, required=True)
    k.add_argument("--pki", required=True, help="directory with kueue-ca.{crt,key} and kueue-webhook.{crt,key}")
    k.add_argument("--out", required=True)
    k.set_defaults(func=cmd_kueue_objects)
    c = sub.add_parser("kueue-config", help="the stack's Kueue Configuration for a host process")
    c.add_argument("--stack", required=True)
    for port in ("health", "metrics", "webhook"):
        c.add_argument(f"--{port}-port", type=int, required=True)
    c.add_argument("--cert-dir", required=True)
    c.add_argument("--pods-ready-timeout", default="", help="waitForPodsReady.timeout (default: the stack's)")
    c.add_argument("--worker-lost-timeout", default="", help="multiKueue.workerLostTimeout (default: Kueue's, 15m)")
    c.add_argument("--out", required=True)
    c.set_defaults(func=cmd_kueue_config)
    a = sub.add_parser("audit-policy", help="the API server's audit policy (gpu_platform.audit) for a stack")
    a.add_argument("--stack", required=True)
    a.add_argument("--out", required=True)
    a.set_defaults(func=cmd_audit_policy)
    w = sub.add_parser("kwok-stages", help="KWOK's Stage configuration")
    w.add_argument("--out", required=True)
    w.set_defaults(func=cmd_kwok_stages)
    ks = sub.add_parser("kwok-selector", help="the annotation selector of the nodes KWOK manages")
    ks.set_defaults(func=cmd_kwok_selector)
    sc = sub.add_parser("scheduler-config", help="kube-scheduler's KubeSchedulerConfiguration")
    sc.add_argument("--kubeconfig", required=True)
    sc.add_argument("--out", required=True)
    sc.set_defaults(func=cmd_scheduler_config)
    pc = sub.add_parser("prometheus-config", help="the local Prometheus: prometheus.yml, the stack's rule file and "
                                                 "the scrape token in --out")
    pc.add_argument("--stack", required=True)
    pc.add_argument("--kubeconfig", help="admin kubeconfig: creates the scraper's ServiceAccount and reads its token "
                                         "(without it the token file is left as it is)")
    pc.add_argument("--kueue-metrics", required=True, metavar="HOST:PORT", help="Kueue's metrics endpoint (HTTPS)")
    pc.add_argument("--telemetry", required=True, metavar="HOST:PORT", help="the gpu-telemetry process")
    pc.add_argument("--prometheus", required=True, metavar="HOST:PORT", help="where Prometheus itself listens")
    pc.add_argument("--karpenter-metrics", default="", metavar="HOST:PORT", help="Karpenter's metrics endpoint")
    pc.add_argument("--out", required=True)
    pc.set_defaults(func=cmd_prometheus_config)
    gt = sub.add_parser("gpu-telemetry", help="serve DCGM-shaped and kube-state-metrics-shaped series of the "
                                              "simulated nodes (runs until stopped)")
    telemetry_server.add_arguments(gt)
    gt.set_defaults(func=cmd_gpu_telemetry)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        summary = args.func(args)
    except SpecError as err:
        print(f"error: invalid stack {args.stack}:", file=sys.stderr)
        for problem in err.problems:
            print(f"  {problem}", file=sys.stderr)
        return 2
    except (InputError, ValueError, RuntimeError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if summary:
        print(summary, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
