"""The workload controllers on the live local cluster: JobSet, LeaderWorkerSet, Kubeflow Trainer and KubeRay,
each the real controller (built from its Go module, scripts/tools/<tool>.sh) running as a host process.

What a chart installs around the controller is applied from the chart itself, rendered with the values the
stack gives it on EKS (gpu_platform.workload_controllers.chart_values): CRDs, RBAC, webhook configurations
and, for Trainer, its torch-distributed ClusterTrainingRuntime. As for Kueue (localcluster/kueue.py), every
webhook clientConfig names a loopback URL instead of the in-cluster Service, and what runs a pod is dropped.
KubeRay 1.5.0's chart is not in its Go module (it lives in helm-chart/ of the repository); the module's
CRDs are applied, and the operator serves no webhook unless ENABLE_WEBHOOKS=true (ray-operator main.go).

Certificates: each controller's own certificate management is off (JobSet and LWS
`internalCertManagement.enable`, Trainer `certManagement.enable`), and the script writes one serving
certificate valid for 127.0.0.1, signed by the cluster's workload-webhook CA, into the directory each
controller reads: JobSet's and LWS's `webhook.certDir`; Trainer has no such setting and uses
controller-runtime's default, $TMPDIR/k8s-webhook-server/serving-certs (webhook/server.go), so it runs with
TMPDIR in the state directory.

Which controllers run: those the stack installs (plan.workload_controllers), unless LOCAL_CLUSTER_WORKLOADS
names others ("none" for none).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpu_platform import workload_controllers as wc
from gpu_platform.plan import Plan

from .kueue import loopback_objects


@dataclass(frozen=True)
class LocalController:
    key: str
    component: str          # the binary, and the script's component name
    tool: str               # scripts/tools/<tool>.sh builds it and keeps its chart or CRDs
    port_offset: int        # from the API server's port: webhook +0, health +1, metrics +2
    config_group: str | None = None   # the controller's Configuration API group (None: flags only)


LOCAL: dict[str, LocalController] = {
    wc.JOBSET: LocalController(wc.JOBSET, "jobset-controller", "jobset", 8, "config.jobset.x-k8s.io"),
    wc.LWS: LocalController(wc.LWS, "lws-controller", "lws", 11, "config.lws.x-k8s.io"),
    wc.TRAINER: LocalController(wc.TRAINER, "trainer-controller-manager", "trainer", 14, "config.trainer.kubeflow.org"),
    wc.KUBERAY: LocalController(wc.KUBERAY, "kuberay-operator", "kuberay", 17),
}
BY_COMPONENT = {c.component: c for c in LOCAL.values()}
# What a chart renders that runs a pod on a real cluster: dropped, the controller runs on the host.
DROP = {"Deployment", "Service", "ConfigMap", "Secret", "PodDisruptionBudget", "ServiceMonitor", "Certificate",
        "Issuer", "NetworkPolicy"}
KEEP = {"CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ServiceAccount",
        "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "ClusterTrainingRuntime"}


def components(plan: Plan, requested: str | None = None) -> list[str]:
    """Component names to run: the stack's installed controllers, or LOCAL_CLUSTER_WORKLOADS's list (keys or
    component names, comma- or space-separated; "none")."""
    if requested is None or requested.strip() == "":
        return [LOCAL[c.key].component for c in plan.workload_controllers]
    names = [n for n in requested.replace(",", " ").split() if n]
    if names == ["none"]:
        return []
    out = []
    for n in names:
        c = LOCAL.get(n) or BY_COMPONENT.get(n)
        if c is None:
            raise ValueError(f"LOCAL_CLUSTER_WORKLOADS: unknown controller {n!r}; valid: "
                             f"{', '.join(LOCAL)} (or none)")
        out.append(c.component)
    return out


def _chart_dir(key: str, src: Path) -> Path:
    return src / "charts" / {wc.JOBSET: "jobset", wc.LWS: "lws", wc.TRAINER: "kubeflow-trainer"}[key]


def render(plan: Plan, key: str, helm: str, src: Path, kube_version: str) -> list[dict[str, Any]]:
    """The controller's cluster objects as its release installs them (KubeRay: the module's CRDs)."""
    ctl = wc.CONTROLLERS[key]
    if key == wc.KUBERAY:
        docs: list[dict[str, Any]] = []
        for f in sorted((src / "config" / "crd" / "bases").glob("*.yaml")):
            docs += [d for d in yaml.load_all(f.read_text(), Loader=yaml.CSafeLoader) if d]
        return docs
    planned = plan.workload_controller(key)
    values = dict(planned.values) if planned else wc.chart_values(key, ctl.default_version, False)
    with tempfile.TemporaryDirectory() as tmp:
        chart = Path(tmp) / "chart"
        shutil.copytree(_chart_dir(key, src), chart)
        meta = yaml.safe_load((chart / "Chart.yaml").read_text())
        # Trainer's chart lists JobSet as a subchart (off: jobset.install false, the platform runs JobSet
        # itself); helm refuses to render a chart whose dependency is absent even when disabled.
        if meta.pop("dependencies", None) is not None:
            (chart / "Chart.yaml").write_text(yaml.safe_dump(meta))
        values_file = Path(tmp) / "values.yaml"
        values_file.write_text(yaml.safe_dump(values))
        out = subprocess.run(
            [helm, "template", ctl.release, str(chart), "--namespace", ctl.namespace, "--include-crds",
             "--values", str(values_file), "--kube-version", kube_version],
            capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"helm template of the {ctl.title} chart failed: {out.stderr.strip()}")
    return [d for d in yaml.load_all(out.stdout, Loader=yaml.CSafeLoader) if d]


# KubeRay's chart is not rendered here; its ServiceAccount there is the fullname, kuberay-operator
# (helm-chart/kuberay-operator values.yaml fullnameOverride, templates/serviceaccount.yaml).
KUBERAY_SERVICE_ACCOUNT = "kuberay-operator"


def identity(key: str, rendered: list[dict[str, Any]]) -> tuple[str, str]:
    """(user, namespace) the controller authenticates as: its chart's ServiceAccount, as in its pod. The tenant
    admission policies tell a controller's objects (a JobSet's Jobs) from a tenant's by that username (a service
    account of another namespace: components/admission/matching.py `controlled`)."""
    ctl = wc.CONTROLLERS[key]
    if key == wc.KUBERAY:
        name = KUBERAY_SERVICE_ACCOUNT
    else:
        deployments = [o for o in rendered if o.get("kind") == "Deployment"]
        if len(deployments) != 1:
            raise ValueError(f"the {ctl.title} chart renders {len(deployments)} Deployments, expected 1")
        name = deployments[0]["spec"]["template"]["spec"].get("serviceAccountName") or "default"
    return f"system:serviceaccount:{ctl.namespace}:{name}", ctl.namespace


def objects(plan: Plan, key: str, rendered: list[dict[str, Any]], webhook_port: int,
            ca_pem: bytes) -> list[dict[str, Any]]:
    ctl = wc.CONTROLLERS[key]
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ctl.namespace}}
    return [namespace] + loopback_objects(rendered, webhook_port, ca_pem, keep=KEEP, drop=DROP,
                                          what=f"the {ctl.title} chart")


def configuration(key: str, webhook_port: int, cert_dir: Path) -> dict[str, Any] | None:
    """The controller's Configuration file (the chart's ConfigMap on a real cluster), for a host process."""
    lc = LOCAL[key]
    if lc.config_group is None:
        return None
    health, metrics = f"127.0.0.1:{webhook_port + 1}", f"127.0.0.1:{webhook_port + 2}"
    cfg: dict[str, Any] = {
        "apiVersion": f"{lc.config_group}/v1alpha1", "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        "health": {"healthProbeBindAddress": health},
        "metrics": {"bindAddress": metrics},
    }
    if key == wc.TRAINER:
        cfg["webhook"] = {"port": webhook_port, "host": "127.0.0.1"}
        cfg["certManagement"] = {"enable": False}
        cfg["metrics"]["secureServing"] = False
    else:
        cfg["webhook"] = {"port": webhook_port, "host": "127.0.0.1", "certDir": str(cert_dir)}
        cfg["internalCertManagement"] = {"enable": False}
    return cfg


def arguments(key: str, webhook_port: int, state: Path) -> list[str]:
    """The process's arguments (after the binary); every one names the state directory where it can, so the
    script recognises its process (pid_of)."""
    if key == wc.KUBERAY:
        # DELETE_RAYJOB_CR_AFTER_JOB_FINISHES comes from the chart's env on EKS (chart_values); here the script
        # sets it in the environment the same way.
        return [f"--metrics-addr=127.0.0.1:{webhook_port + 2}",
                f"--health-probe-bind-address=127.0.0.1:{webhook_port + 1}",
                "--enable-leader-election=false", f"--log-file-path={state / 'kuberay-operator.log'}"]
    return [f"--config={state / 'config.yaml'}"]


def write(plan: Plan, key: str, helm: str, src: Path, kube_version: str, webhook_port: int, ca_pem: bytes,
          out: Path) -> None:
    """Everything the script needs for one controller, in `out`: crds.json, objects.json (before the process),
    after.json (once it is ready), config.yaml, args and env (one per line), health (the readiness URL) and
    identity (its ServiceAccount's username and namespace)."""
    rendered = render(plan, key, helm, src, kube_version)
    user, namespace = identity(key, rendered)
    objs = objects(plan, key, rendered, webhook_port, ca_pem)
    crds = [o for o in objs if o["kind"] == "CustomResourceDefinition"]
    own = {c["spec"]["names"]["kind"] for c in crds}
    out.mkdir(parents=True, exist_ok=True)
    (out / "crds.json").write_text(_list(crds))
    (out / "objects.json").write_text(_list([o for o in objs if o["kind"] != "CustomResourceDefinition"
                                             and o["kind"] not in own]))
    # Objects of the controller's own kinds (Trainer's runtime) pass its webhooks: applied once it serves them.
    (out / "after.json").write_text(_list([o for o in objs if o["kind"] in own]))
    cfg = configuration(key, webhook_port, cert_dir(key, out))
    if cfg is not None:
        (out / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    (out / "args").write_text("".join(a + "\n" for a in arguments(key, webhook_port, out)))
    (out / "env").write_text("".join(f"{k}={v}\n" for k, v in environment(key, out).items()))
    (out / "health").write_text(f"http://127.0.0.1:{webhook_port + 1}/readyz\n")
    (out / "identity").write_text(f"{user} {namespace}\n")


def environment(key: str, state: Path) -> dict[str, str]:
    """Environment beside KUBECONFIG: Trainer's webhook certificates live under TMPDIR (module docstring);
    KubeRay deletes a finished RayJob at its TTL, as the chart's env sets it on EKS (chart_values)."""
    if key == wc.TRAINER:
        return {"TMPDIR": str(state / "tmp")}
    if key == wc.KUBERAY:
        return {e["name"]: e["value"] for e in wc.chart_values(key, wc.CONTROLLERS[key].default_version, False)["env"]}
    return {}


def cert_dir(key: str, state: Path) -> Path:
    """Where the controller reads its webhook serving certificate (tls.crt, tls.key)."""
    if key == wc.TRAINER:
        return state / "tmp" / "k8s-webhook-server" / "serving-certs"
    return state / "certs"


def _list(items: list[dict[str, Any]]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
