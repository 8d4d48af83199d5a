"""A small Kubernetes API client for the local cluster's callers that talk to it at volume (the trace
replayer, the live benchmark): one TLS connection per thread instead of one kubectl process per call,
and watches as streams. Standard library only; reads the client certificate a local-cluster kubeconfig
embeds.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import ssl
import tempfile
import threading
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import yaml


class ApiError(RuntimeError):
    def __init__(self, status: int, body: str, what: str):
        self.status = status
        try:
            self.reason = json.loads(body).get("message", body)
        except ValueError:
            self.reason = body
        super().__init__(f"{what}: HTTP {status}: {self.reason}")


@dataclass
class Client:
    host: str
    port: int
    context: ssl.SSLContext

    @classmethod
    def from_kubeconfig(cls, path: Path) -> "Client":
        cfg = yaml.safe_load(Path(path).read_text())
        cluster = cfg["clusters"][0]["cluster"]
        user = cfg["users"][0]["user"]
        url = urllib.parse.urlparse(cluster["server"])
        ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        # ssl wants files for the client pair: a private temporary directory, removed once loaded.
        with tempfile.TemporaryDirectory() as tmp:
            crt, key = Path(tmp, "c.crt"), Path(tmp, "c.key")
            crt.write_bytes(base64.b64decode(user["client-certificate-data"]))
            key.write_bytes(base64.b64decode(user["client-key-data"]))
            os.chmod(key, 0o600)
            ctx.load_cert_chain(str(crt), str(key))
        return cls(url.hostname or "127.0.0.1", url.port or 443, ctx)

    def __post_init__(self) -> None:
        self._local = threading.local()

    def _conn(self, timeout: float | None = 30) -> http.client.HTTPSConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=timeout)
            self._local.conn = conn
        return conn

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        for attempt in (1, 2):
            conn = self._conn()
            try:
                conn.request(method, path, body=data, headers=headers)
                resp = conn.getresponse()
                text = resp.read().decode()
                break
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt == 2:
                    raise
        if resp.status >= 400:
            raise ApiError(resp.status, text, f"{method} {path}")
        return json.loads(text) if text else None

    def get(self, path: str, **query: str) -> Any:
        return self.request("GET", path + (f"?{urllib.parse.urlencode(query)}" if query else ""))

    def create(self, path: str, obj: dict[str, Any]) -> Any:
        return self.request("POST", path, obj)

    def delete(self, path: str, **query: str) -> Any:
        return self.request("DELETE", path + (f"?{urllib.parse.urlencode(query)}" if query else ""))

    def watch(self, path: str, resource_version: str, timeout_seconds: int = 3600) -> Iterator[dict[str, Any]]:
        """Events of a list path from `resource_version` on, as they come (one connection of its own)."""
        query = urllib.parse.urlencode({"watch": "true", "resourceVersion": resource_version,
                                        "timeoutSeconds": str(timeout_seconds), "allowWatchBookmarks": "true"})
        conn = http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=timeout_seconds + 30)
        try:
            conn.request("GET", f"{path}?{query}", headers={"Accept": "application/json"})
            resp = conn.getresponse()
            if resp.status >= 400:
                raise ApiError(resp.status, resp.read().decode(), f"watch {path}")
            while True:
                line = resp.readline()
                if not line:
                    return
                if line.strip():
                    yield json.loads(line)
        finally:
            conn.close()


def path_of(obj: dict[str, Any], plural: str) -> str:
    """The collection path of a namespaced object (for create)."""
    group_version = obj["apiVersion"]
    prefix = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
    ns = obj["metadata"].get("namespace")
    return f"{prefix}/namespaces/{ns}/{plural}" if ns else f"{prefix}/{plural}"


WORKLOADS = "/apis/kueue.x-k8s.io/v1beta2/workloads"
JOBS = "/apis/batch/v1/jobs"
CLUSTER_QUEUES = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues"
