"""The `plan` command's report: a plan as data (JSON) and as tables (text or Markdown for a PR comment)."""

from __future__ import annotations

import json
from typing import Any

from gpu_platform.plan import Plan, PoolPlan
from gpu_platform.plan.monitoring import MODE_IN_CLUSTER, MODE_MANAGED, MonitoringPlan
from gpu_platform.plan.monitoring_sizing import TARGET_FLEET_NODES


def _sharing(p: PoolPlan) -> str:
    if p.sharing_mode == "mig":
        return f"mig {p.mig_profile}"
    if p.sharing_mode == "time-slicing":
        return f"time-slicing x{p.replicas}"
    return "full"


def monitoring_data(m: MonitoringPlan) -> dict[str, Any] | None:
    """The observability layer: its mode, what the stack installs, and the estimate at the stack's capacity.max and
    at TARGET_FLEET_NODES GPU nodes of the same pool mix (gpu_platform/plan/monitoring_sizing.py)."""
    if not m.enabled or m.sizing is None:
        return None
    return {
        "mode": m.mode,
        "chartVersion": m.chart_version if m.mode == MODE_IN_CLUSTER else None,
        "kubeStateMetricsVersion": m.ksm_chart_version if m.mode == MODE_MANAGED else None,
        "retentionDays": m.retention_days,
        "volumeGiB": m.volume_gib if m.mode == MODE_IN_CLUSTER else None,
        "memoryGiB": m.memory_gib if m.mode == MODE_IN_CLUSTER else None,
        "sized": {"volume": m.volume_sized, "memory": m.memory_sized},
        "receivers": [{"name": r.name, "type": r.type, "severities": list(r.severities)} for r in m.receivers],
        "estimate": {"stack": m.sizing.stack.to_json(), f"at{TARGET_FLEET_NODES}Nodes": m.sizing.target.to_json()},
    }


def _monitoring_lines(data: dict[str, Any] | None, md: bool) -> str:
    if data is None:
        return "addons.monitoring.install is false: no monitoring"
    mode = data["mode"]
    head = {"external": "mode external: the platform's rules, monitors and dashboards for a Prometheus installed "
                        "elsewhere (it must hold the series below)",
            "in-cluster": f"mode in-cluster: kube-prometheus-stack {data['chartVersion']}, retention "
                          f"{data['retentionDays']} days, gp3 volume {data['volumeGiB']} GiB"
                          f" ({'sized' if data['sized']['volume'] else 'set'}), memory {data['memoryGiB']} GiB"
                          f" ({'sized' if data['sized']['memory'] else 'set'})",
            "managed": f"mode managed: Amazon Managed Service for Prometheus workspace (retention {data['retentionDays']} "
                       f"days), managed collector, kube-state-metrics {data['kubeStateMetricsVersion']}"}[mode]
    receivers = ", ".join(f"{r['name']} ({r['type']}: {'/'.join(r['severities'])})" for r in data["receivers"])
    head += f"; alerts to {receivers}" if receivers else ("" if mode == "external" else "; no alert receivers")
    est = data["estimate"]
    rows = []
    for label, e in (("stack at capacity.max", est["stack"]), (f"{TARGET_FLEET_NODES:,} GPU nodes", est[f"at{TARGET_FLEET_NODES}Nodes"])):
        rows.append([label, f"{e['nodes']:,}", f"{e['activeSeries']:,}", f"{e['samplesPerSecond']:,}",
                     f"{e['samplesPerMonth'] / 1e9:,.1f} B",
                     "-" if e["memoryGiB"] is None else f"{e['memoryGiB']} GiB",
                     "-" if e["volumeGiB"] is None else f"{e['volumeGiB']} GiB"])
    table = _table(["where", "GPU nodes", "active series", "samples/s", "samples/30 days", "Prometheus memory",
                    f"volume ({data['retentionDays']} d)"], rows, md)
    sources = "series by source at capacity.max: " + ", ".join(
        f"{k} {v:,}" for k, v in est["stack"]["series"].items())
    return "\n\n".join([head, table, sources])


def plan_data(plan: Plan) -> dict[str, Any]:
    pools = []
    for p in plan.pools:
        allocated = plan.allocated_units(p.name)
        pools.append({
            "name": p.name,
            "accelerator": p.accelerator,
            "instanceType": p.instance_type,
            "nodes": f"{p.min_nodes}-{p.max_nodes}",
            "gpus": p.capacity_gpus,
            "units": p.capacity_units,
            "resource": p.resource_name,
            "sharing": _sharing(p),
            "fabric": p.fabric,
            "efaDevicesPerNode": p.efa_interfaces,
            "capacityType": p.capacity_type,
            "provisioner": p.provisioner,
            "karpenterCapacityTypes": list(p.karpenter.capacity_types) if p.karpenter else None,
            "capacity": p.capacity_semantics,
            "reservedNodes": p.reserved_nodes,
            "scaledBy": p.scaler,
            "provisioningRequest": p.flavor in plan.provisioning.flavors,
            # What the pool costs when nothing runs (a reservation whole, else what always runs) and when full.
            "usdPerHourMin": p.usd_per_hour_min,
            "usdPerHourMax": p.usd_per_hour_max,
            "allocated": allocated,
            "allocation": round(allocated / p.capacity_units, 3) if p.capacity_units else 0.0,
            "cpuPerUnit": f"{p.cpu_millis_per_unit}m",
            "memoryPerUnit": f"{p.memory_mib_per_unit}Mi",
            "scratch": p.scratch,
        })
    teams = []
    for t in plan.teams:
        teams.append({
            "name": t.name,
            "cohort": t.cohort,
            "namespaces": list(t.namespaces),
            "usdPerHourNominal": t.usd_per_hour_nominal,
            "quotas": [
                {"pool": q.pool, "resource": q.resource_name, "nominal": q.nominal,
                 "borrowingLimit": q.borrowing, "lendingLimit": q.lending,
                 "cpu": q.cpu(q.nominal), "memory": q.memory(q.nominal),
                 # The most the team can ever hold there: what the job template and the trace check accept.
                 "mostHeld": {"units": q.reach.units, "limitedBy": q.reach.limited_by,
                              "lendable": q.reach.lendable, "arithmetic": q.reach.arithmetic()}}
                for q in t.quotas
            ],
            "namespaceQuota": dict(t.namespace_quota),
        })
    return {
        "environment": plan.environment,
        "cluster": plan.cluster.name,
        "provider": plan.cluster.provider,
        "migStrategy": plan.mig_strategy,
        "systemPool": None if (sp := plan.cluster.system_pool) is None else {
            "nodeGroup": sp.node_group_name, "instanceType": sp.instance_type, "nodes": f"{sp.min_nodes}-{sp.max_nodes}"},
        "vpcCniNetworkPolicy": plan.cluster.manage_vpc_cni,
        "efaDevicePlugin": plan.installs_efa_device_plugin,
        "karpenter": None if plan.karpenter is None else plan.karpenter.version,
        "clusterAutoscaler": None if (ca := plan.cluster_autoscaler) is None else {
            "chartVersion": ca.chart_version, "image": ca.image_tag, "nodeGroups": list(ca.node_groups),
            "provisioningRequests": ca.provisioning_requests},
        "provisioningRequest": {"enabled": plan.provisioning.enabled, "reason": plan.provisioning.reason,
                                "flavors": list(plan.provisioning.flavors)},
        "pools": pools,
        "teams": teams,
        "cohorts": [{"name": c.name, "parent": c.parent} for c in plan.cohorts],
        "usdPerHourMin": plan.usd_per_hour_min,
        "usdPerHourMax": plan.usd_per_hour_max,
        "monitoring": monitoring_data(plan.addons.monitoring),
        "warnings": [*plan.warnings, *plan.addons.monitoring.warnings],
    }


def _table(headers: list[str], rows: list[list[Any]], markdown: bool) -> str:
    cells = [[("-" if v is None else str(v)) for v in row] for row in rows]
    if markdown:
        out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
        out += ["| " + " | ".join(r) + " |" for r in cells]
        return "\n".join(out)
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    line = lambda r: "  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in cells])


def format_plan(plan: Plan, fmt: str, title: str) -> str:
    data = plan_data(plan)
    if fmt == "json":
        return json.dumps(data, indent=2, sort_keys=True)
    md = fmt == "markdown"
    h = (lambda s: f"### {s}") if md else (lambda s: f"{s}\n{'=' * len(s)}")
    parts = [
        (f"## gpu-platform plan: `{title}`" if md else f"gpu-platform plan: {title}")
        + f"\n\nenvironment {plan.environment}, cluster {plan.cluster.name} ({plan.cluster.provider}), "
        f"MIG strategy {plan.mig_strategy}, ${data['usdPerHourMin']:,.2f}/h at min to "
        f"${data['usdPerHourMax']:,.2f}/h at max"
        + (f"; system pool {data['systemPool']['instanceType']} x {data['systemPool']['nodes']}" if data["systemPool"] else "")
        + ("; vpc-cni add-on with network policy" if data["vpcCniNetworkPolicy"] else "")
        + ("; EFA device plugin" if data["efaDevicePlugin"] else "")
        + (f"; Karpenter {data['karpenter']}" if data["karpenter"] else "")
        + (f"; Cluster Autoscaler {data['clusterAutoscaler']['image']} (chart {data['clusterAutoscaler']['chartVersion']})"
           if data["clusterAutoscaler"] else ""),
        h("Pools"),
        _table(
            ["pool", "accelerator", "instance type", "nodes", "GPUs", "units", "sharing", "fabric", "capacity",
             "scaled by", "$/h min", "$/h max"],
            [[p["name"], p["accelerator"], p["instanceType"], p["nodes"], p["gpus"], f"{p['units']} {p['resource']}",
              p["sharing"], p["fabric"] + (f" ({p['efaDevicesPerNode']}/node)" if p["efaDevicesPerNode"] else ""),
              p["capacityType"] + (f" (karpenter: {', '.join(p['karpenterCapacityTypes'])})"
                                   if p["karpenterCapacityTypes"] else ""),
              p["scaledBy"] + (" + ProvisioningRequest" if p["provisioningRequest"] else ""),
              f"{p['usdPerHourMin']:,.2f}", f"{p['usdPerHourMax']:,.2f}"] for p in data["pools"]]
            + [["total", "", "", "", "", "", "", "", "", "", f"{data['usdPerHourMin']:,.2f}",
                f"{data['usdPerHourMax']:,.2f}"]],
            md,
        ),
        h("Capacity"),
        "\n".join(
            [f"- {p['name']}: {p['capacity']}, " + (
                f"{p['reservedNodes']} reserved nodes paid for whole" if p["reservedNodes"]
                else f"{p['nodes']} nodes") + f", scaled by {p['scaledBy']}" for p in data["pools"]]
            + [f"- Kueue ProvisioningRequest check: {'on' if data['provisioningRequest']['enabled'] else 'off'} "
               f"({data['provisioningRequest']['reason']})"]),
        h("Node storage and checkpoints"),
        _table(["pool", "what a node's disks hold"], [[p["name"], p["scratch"]] for p in data["pools"]], md),
        h("Teams by pool"),
        _table(
            ["team", "cohort", "pool", "nominal", "borrowing", "lending", "most held", "cpu", "memory"],
            [[t["name"], t["cohort"], q["pool"], q["nominal"], q["borrowingLimit"], q["lendingLimit"],
              f"{q['mostHeld']['units']} ({q['mostHeld']['limitedBy']})", q["cpu"], q["memory"]]
             for t in data["teams"] for q in t["quotas"]],
            md,
        ),
        h("Allocation"),
        _table(
            ["pool", "nominal / capacity", "allocated"],
            [[p["name"], f"{p['allocated']} / {p['units']}", f"{p['allocation'] * 100:.0f}%"] for p in data["pools"]],
            md,
        ),
        h("Monitoring"),
        _monitoring_lines(data["monitoring"], md),
        h("Team cost at nominal quota"),
        _table(["team", "$/h"], [[t["name"], f"{t['usdPerHourNominal']:,.2f}"] for t in data["teams"]], md),
        h("Warnings"),
        "\n".join(f"- {w}" for w in data["warnings"]) or "none",
    ]
    return "\n\n".join(parts) + "\n"
