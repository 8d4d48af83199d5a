"""Kueue on the live local cluster: the real chart's cluster objects, pointed at a host process.

The chart is rendered with the values the stack gives it on a real cluster (gpu_platform.kueue_config.
chart_values). Its CRDs, RBAC and webhook configurations are applied as rendered, except that every
webhook and conversion clientConfig names a loopback URL instead of the in-cluster Service, as
controller-runtime's envtest registers webhooks (sigs.k8s.io/controller-runtime pkg/envtest/webhook.go).
What runs a pod on a real cluster (Deployment, Services, the manager ConfigMap) is dropped: the process
runs on the host with the same Configuration in a file. The visibility APIService is dropped with it,
because its server needs a fixed certificate path (/visibility, pkg/visibility/server.go) and the local
process runs with the VisibilityOnDemand gate off.

Certificates: the chart runs Kueue with internal certificate management (open-policy-agent/cert-controller),
which keeps the webhook certificate in a Secret and accepts one it finds there if it verifies for the
webhook Service's DNS name (pkg/rotator/rotator.go ValidCert, CA named "kueue-ca"). The script seeds
that Secret with a certificate that is also valid for 127.0.0.1, so the controller keeps it, and writes
the same files into the webhook's certDir (in a pod the kubelet would mount the Secret there).
"""

from __future__ import annotations

import base64
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Iterable

import yaml

from gpu_platform import conventions as cv
from gpu_platform.kueue_config import INTERNAL_CERT_MANAGEMENT, chart_values
from gpu_platform.plan import Plan

# The chart's ServiceAccount for the manager (charts/kueue/templates/rbac/service_account.yaml:
# "<fullname>-controller-manager"); the host process authenticates with a client certificate whose name
# is that ServiceAccount's username, so the chart's RBAC binds it exactly as it binds the pod.
SERVICE_ACCOUNT = f"{cv.KUEUE_RELEASE_NAME}-controller-manager"
SERVICE_ACCOUNT_USER = f"system:serviceaccount:{cv.KUEUE_NAMESPACE}:{SERVICE_ACCOUNT}"
SERVICE_ACCOUNT_GROUPS = ("system:serviceaccounts", f"system:serviceaccounts:{cv.KUEUE_NAMESPACE}")
# cert-controller's CA name check (Kueue pkg/util/cert/cert.go caName) and the Secret's keys (rotator.go).
CA_NAME = "kueue-ca"
SECRET_NAME = INTERNAL_CERT_MANAGEMENT["webhookSecretName"]
WEBHOOK_DNS_NAME = f"{INTERNAL_CERT_MANAGEMENT['webhookServiceName']}.{cv.KUEUE_NAMESPACE}.svc"

KEEP = {
    "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ServiceAccount",
    "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "FlowSchema",
    "PriorityLevelConfiguration",
}
DROP = {
    "Deployment": "the controller runs as a host process",
    "Service": "the webhook and metrics listen on loopback",
    "ConfigMap": "the Configuration is passed as a file",
    "Secret": "seeded with a certificate valid for loopback",
    "APIService": "the visibility server is off on the local cluster",
    "PodDisruptionBudget": "no pod",
}


def render_chart(helm: str, chart: Path, plan: Plan, kube_version: str) -> list[dict[str, Any]]:
    """`helm template` of the chart with the stack's values, as Helm would install it."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as values:
        yaml.safe_dump(chart_values(plan), values)
        values.flush()
        out = subprocess.run(
            [helm, "template", cv.KUEUE_RELEASE_NAME, str(chart), "--namespace", cv.KUEUE_NAMESPACE,
             "--values", values.name, "--kube-version", kube_version],
            capture_output=True, text=True, check=False,
        )
    if out.returncode != 0:
        raise RuntimeError(f"helm template {chart} failed: {out.stderr.strip()}")
    # The C loader: the CRDs alone are close to a megabyte of YAML.
    return [d for d in yaml.load_all(out.stdout, Loader=yaml.CSafeLoader) if d]


def _url_client_config(config: dict[str, Any], port: int, ca_bundle: str, default_path: str) -> dict[str, Any]:
    path = (config.get("service") or {}).get("path") or default_path
    return {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca_bundle}


def loopback_objects(rendered: Iterable[dict[str, Any]], webhook_port: int, ca_pem: bytes, *,
                     keep: set[str], drop: set[str] | dict[str, str], what: str) -> list[dict[str, Any]]:
    """Rendered chart objects to apply for a host process: `drop` kinds left out, webhooks and CRD conversions
    pointed at https://127.0.0.1:PORT with `ca_pem`; a kind in neither set is an error (`what` rendered it)."""
    ca_bundle = base64.b64encode(ca_pem).decode()
    out: list[dict[str, Any]] = []
    for obj in rendered:
        kind = obj.get("kind")
        if kind in drop:
            continue
        if kind not in keep:
            raise ValueError(f"{what} renders a {kind} this script does not know how to run locally")
        if kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            for hook in obj.get("webhooks", []):
                hook["clientConfig"] = _url_client_config(hook.get("clientConfig") or {}, webhook_port, ca_bundle, "/")
        if kind == "CustomResourceDefinition":
            webhook = ((obj.get("spec") or {}).get("conversion") or {}).get("webhook")
            if webhook:
                webhook["clientConfig"] = _url_client_config(webhook.get("clientConfig") or {}, webhook_port,
                                                             ca_bundle, "/convert")
        out.append(obj)
    return out


def local_objects(rendered: Iterable[dict[str, Any]], webhook_port: int, ca_pem: bytes) -> list[dict[str, Any]]:
    """Kueue's rendered objects to apply, webhooks and conversions pointed at https://127.0.0.1:PORT."""
    return loopback_objects(rendered, webhook_port, ca_pem, keep=KEEP, drop=DROP, what="the Kueue chart")


def namespace_and_secret(ca_crt: bytes, ca_key: bytes, tls_crt: bytes, tls_key: bytes) -> list[dict[str, Any]]:
    """Kueue's namespace (a real cluster's stack makes it with the release) and the seeded cert Secret."""
    b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
    return [
        {"apiVersion": "v1", "kind": "Namespace",
         "metadata": {"name": cv.KUEUE_NAMESPACE,
                      "labels": {cv.MANAGED_BY: cv.MANAGED_BY_VALUE, cv.COMPONENT: "kueue",
                                 **cv.psa_labels(cv.PSA_RESTRICTED, cv.PSA_RESTRICTED, "latest")}}},
        {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
         "metadata": {"name": SECRET_NAME, "namespace": cv.KUEUE_NAMESPACE},
         "data": {"ca.crt": b64(ca_crt), "ca.key": b64(ca_key), "tls.crt": b64(tls_crt), "tls.key": b64(tls_key)}},
    ]


def split_crds(objects: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """CRDs first (they must be Established before anything else of theirs is applied), then the rest."""
    crds = [o for o in objects if o.get("kind") == "CustomResourceDefinition"]
    return crds, [o for o in objects if o.get("kind") != "CustomResourceDefinition"]
