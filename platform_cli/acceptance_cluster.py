"""The acceptance command's cluster: kubectl, so any kubeconfig's authentication works (EKS's exec plugin included)
and impersonation is kubectl's own --as/--as-group; a test gives a fake ClusterClient."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Protocol, Sequence

from .acceptance_data import REPOSITORY

KUBECTL_TIMEOUT_S = 60


class ClusterError(RuntimeError):
    """The cluster refused or could not be reached: the message is its own (kubectl's stderr)."""


class ClusterClient(Protocol):
    def create(self, objects: Sequence[dict[str, Any]], as_user: tuple[str, tuple[str, ...]] | None) -> None: ...

    def get(self, resource: str, namespace: str) -> list[dict[str, Any]]: ...

    def delete(self, objects: Sequence[dict[str, Any]]) -> None: ...

    def logs(self, namespace: str, pod: str) -> str: ...


class WorkloadClient(ClusterClient, Protocol):
    """What steps 2 to 5 also need: the job's pods, one deleted, the JobSet's status, the data path's Secret."""

    def pods(self, namespace: str, selector: str) -> list[dict[str, Any]]: ...

    def delete_pod(self, namespace: str, pod: str) -> None: ...

    def get_object(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None: ...

    def ensure(self, obj: dict[str, Any]) -> bool: ...


class Kubectl:
    """The ClusterClient of a real cluster: kubectl, so any kubeconfig's authentication works (EKS's exec plugin
    included), and impersonation is kubectl's own --as/--as-group."""

    def __init__(self, kubeconfig: Path | None):
        self.kubeconfig = kubeconfig

    def _run(self, *args: str, stdin: str | None = None) -> str:
        exe = shutil.which("kubectl")
        if exe is None:
            raise ClusterError("kubectl is not on PATH")
        cmd = [exe, *([f"--kubeconfig={self.kubeconfig}"] if self.kubeconfig else []), *args]
        try:
            done = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=KUBECTL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise ClusterError(f"kubectl {' '.join(args[:2])} did not answer in {KUBECTL_TIMEOUT_S}s") from None
        if done.returncode != 0:
            raise ClusterError(done.stderr.strip() or f"kubectl {' '.join(args[:2])} exited {done.returncode}")
        return done.stdout

    def create(self, objects: Sequence[dict[str, Any]], as_user: tuple[str, tuple[str, ...]] | None) -> None:
        who = [] if as_user is None else ["--as", as_user[0], *[a for g in as_user[1] for a in ("--as-group", g)]]
        self._run("create", "-f", "-", *who, stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}))

    def get(self, resource: str, namespace: str) -> list[dict[str, Any]]:
        return json.loads(self._run("get", resource, "-n", namespace, "-o", "json")).get("items", [])

    def delete(self, objects: Sequence[dict[str, Any]]) -> None:
        self._run("delete", "--ignore-not-found", "--wait=false", "-f", "-",
                  stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}))

    def logs(self, namespace: str, pod: str) -> str:
        return self._run("logs", "-n", namespace, pod)

    def pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        return json.loads(self._run("get", "pods", "-n", namespace, "-l", selector, "-o", "json")).get("items", [])

    def delete_pod(self, namespace: str, pod: str) -> None:
        self._run("delete", "pod", "-n", namespace, pod, "--wait=false")

    def get_object(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        out = self._run("get", resource, "-n", namespace, name, "--ignore-not-found", "-o", "json")
        return json.loads(out) if out.strip() else None

    def ensure(self, obj: dict[str, Any]) -> bool:
        """Create OBJ unless an object of its kind and name exists (which is kept as it is); whether it created."""
        meta = obj["metadata"]
        if self.get_object(obj["kind"].lower(), meta["namespace"], meta["name"]) is not None:
            return False
        self._run("create", "-f", "-", stdin=json.dumps(obj))
        return True


def kubeconfig_of(flag: str | None) -> Path | None:
    """--kubeconfig, else $KUBECONFIG (kubectl reads it), else the live local cluster's admin kubeconfig."""
    if flag:
        return Path(flag)
    state = Path(os.environ.get("LOCAL_CLUSTER_DIR") or REPOSITORY / ".local" / "cluster")
    local = state / "admin.kubeconfig"
    return None if os.environ.get("KUBECONFIG") or not local.exists() else local
