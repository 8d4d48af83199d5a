"""The local cluster's certificates and kubeconfigs, made with openssl once per state directory.

One CA for the cluster (every component's and user's client certificate, the API server's and etcd's serving
ones), the service-account signing key, Kueue's webhook CA of its own (Kueue keeps it in a Secret, as its chart
does: never the cluster CA), and a CA for the workload controllers' webhooks. A certificate is issued only when
its file is missing, so a restart keeps every identity.
"""

from __future__ import annotations

import base64
import os
import subprocess
import tempfile
from pathlib import Path

from .state import CLUSTER_NAME, SERVICE_IP

CA_EXTENSIONS = ("-addext", "basicConstraints=critical,CA:TRUE",
                 "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature")
USAGES = {"client": "clientAuth", "server": "serverAuth", "both": "serverAuth,clientAuth"}
APISERVER_NAMES = ("IP:127.0.0.1", f"IP:{SERVICE_IP}", "DNS:localhost", "DNS:kubernetes", "DNS:kubernetes.default",
                   "DNS:kubernetes.default.svc", "DNS:kubernetes.default.svc.cluster.local")
# name: (subject, usage, subjectAltName) of the cluster CA's certificates every start needs.
CERTIFICATES = {
    "etcd-server": ("/CN=etcd-server", "both", "IP:127.0.0.1,DNS:localhost"),
    "apiserver-etcd-client": ("/CN=kube-apiserver-etcd-client", "client", ""),
    "apiserver": ("/CN=kube-apiserver", "server", ",".join(APISERVER_NAMES)),
    "apiserver-kubelet-client": ("/O=kubeadm:cluster-admins/CN=kube-apiserver-kubelet-client", "client", ""),
    "admin": ("/O=system:masters/CN=admin", "client", ""),
    "controller-manager": ("/CN=system:kube-controller-manager", "client", ""),
    "scheduler": ("/CN=system:kube-scheduler", "client", ""),
    # KWOK writes the status of every simulated node and its pods: it is every kubelet at once.
    "kwok": ("/O=system:masters/CN=kwok", "client", ""),
    # Kueue authenticates as the chart's ServiceAccount, so the chart's RBAC binds it as it binds the pod.
    "kueue": ("/O=system:serviceaccounts/O=system:serviceaccounts:kueue-system/CN=system:serviceaccount:kueue-system:"
              "kueue-controller-manager", "client", ""),
}


class PKIError(RuntimeError):
    """openssl failed; the message carries its output."""


def _openssl(*args: str) -> None:
    out = subprocess.run(["openssl", *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise PKIError(f"openssl {args[0]} failed: {out.stderr.strip()[-500:]}")


def _self_signed(pki: Path, name: str, subject: str, *extra: str) -> None:
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "3650",
             "-keyout", str(pki / f"{name}.key"), "-out", str(pki / f"{name}.crt"), "-subj", subject,
             *CA_EXTENSIONS, *extra)
    os.chmod(pki / f"{name}.key", 0o600)


def ensure_ca(pki: Path, log) -> None:
    """The cluster CA and the service-account key pair, unless there."""
    pki.mkdir(parents=True, exist_ok=True)
    if (pki / "ca.crt").is_file() and (pki / "ca.key").is_file():
        return
    log(f"generating CA and service account keys in {pki}")
    _self_signed(pki, "ca", f"/CN={CLUSTER_NAME}-ca")
    _openssl("genrsa", "-out", str(pki / "sa.key"), "2048")
    _openssl("rsa", "-in", str(pki / "sa.key"), "-pubout", "-out", str(pki / "sa.pub"))
    for key in pki.glob("*.key"):
        os.chmod(key, 0o600)


def issue(pki: Path, name: str, subject: str, usage: str, san: str = "", ca: str = "ca") -> None:
    """NAME.crt and NAME.key signed by CA (USAGE: client, server or both)."""
    lines = ["basicConstraints=critical,CA:FALSE", "keyUsage=critical,digitalSignature,keyEncipherment",
             f"extendedKeyUsage={USAGES[usage]}"] + ([f"subjectAltName={san}"] if san else [])
    with tempfile.NamedTemporaryFile("w", suffix=".ext") as ext:
        ext.write("".join(f"{line}\n" for line in lines))
        ext.flush()
        csr = pki / f"{name}.csr"
        _openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", str(pki / f"{name}.key"),
                 "-out", str(csr), "-subj", subject)
        _openssl("x509", "-req", "-in", str(csr), "-CA", str(pki / f"{ca}.crt"), "-CAkey", str(pki / f"{ca}.key"),
                 "-CAcreateserial", "-days", "3650", "-sha256", "-extfile", ext.name, "-out", str(pki / f"{name}.crt"))
        csr.unlink(missing_ok=True)
    os.chmod(pki / f"{name}.key", 0o600)


def _pkcs1(key: Path) -> None:
    """Kueue's cert-controller reads its keys as PKCS#1 (x509.ParsePKCS1PrivateKey, kubernetes-sigs/kueue's
    vendored open-policy-agent/cert-controller pkg/rotator/rotator.go buildArtifactsFromSecret)."""
    _openssl("rsa", "-in", str(key), "-out", str(key), "-traditional")


def ensure_pki(pki: Path, log) -> None:
    """Every certificate a start needs, issuing the missing ones."""
    ensure_ca(pki, log)
    for name, (subject, usage, san) in CERTIFICATES.items():
        if not (pki / f"{name}.crt").is_file():
            issue(pki, name, subject, usage, san)
    # Kueue's webhook CA: cert-controller accepts a CA whose certificate verifies for the name "kueue-ca" and a
    # serving certificate that verifies for the webhook Service's DNS name; 127.0.0.1 is where the API server calls.
    if not (pki / "kueue-ca.crt").is_file():
        _self_signed(pki, "kueue-ca", "/O=kueue/CN=kueue-ca", "-addext", "subjectAltName=DNS:kueue-ca")
        _pkcs1(pki / "kueue-ca.key")
        os.chmod(pki / "kueue-ca.key", 0o600)
        (pki / "kueue-webhook.crt").unlink(missing_ok=True)
    # The workload controllers' webhooks (localcluster/workloads.py): their own certificate management is off and
    # they serve this certificate on 127.0.0.1.
    if not (pki / "workloads-ca.crt").is_file():
        _self_signed(pki, "workloads-ca", f"/CN={CLUSTER_NAME}-workload-webhooks-ca")
        (pki / "workloads-webhook.crt").unlink(missing_ok=True)
    if not (pki / "workloads-webhook.crt").is_file():
        issue(pki, "workloads-webhook", "/CN=workload-webhooks", "server", "DNS:localhost,IP:127.0.0.1", "workloads-ca")
    if not (pki / "kueue-webhook.crt").is_file():
        issue(pki, "kueue-webhook", "/CN=kueue-webhook-service.kueue-system.svc", "server",
              "DNS:kueue-webhook-service.kueue-system.svc,DNS:localhost,IP:127.0.0.1", "kueue-ca")
        _pkcs1(pki / "kueue-webhook.key")


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def write_kubeconfig_for(file: Path, server: str, ca: Path, user: str, credentials: str) -> None:
    """FILE: a kubeconfig of SERVER and CA for USER, CREDENTIALS its user lines; only its owner may read it, and it
    appears whole."""
    text = f"""apiVersion: v1
kind: Config
clusters:
- name: {CLUSTER_NAME}
  cluster:
    server: {server}
    certificate-authority-data: {_b64(ca)}
users:
- name: {user}
  user:
{credentials}
contexts:
- name: {user}@{CLUSTER_NAME}
  context:
    cluster: {CLUSTER_NAME}
    user: {user}
current-context: {user}@{CLUSTER_NAME}
"""
    tmp = file.with_name(f"{file.name}.tmp.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, file)


def write_kubeconfig(file: Path, server: str, pki: Path, user: str, cert: str) -> None:
    """A kubeconfig with the client certificate CERT (PKI/CERT.crt and .key) embedded."""
    write_kubeconfig_for(file, server, pki / "ca.crt", user,
                         f"    client-certificate-data: {_b64(pki / f'{cert}.crt')}\n"
                         f"    client-key-data: {_b64(pki / f'{cert}.key')}")


def token_credentials(token: str) -> str:
    return f"    token: {token}"
