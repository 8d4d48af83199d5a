"""The GPU telemetry's HTTP server (`python -m localcluster gpu-telemetry`): the paths Prometheus scrapes and
discovers targets from, and the loop that reads the cluster's nodes, pods, Jobs and Workloads into the
Telemetry (localcluster/telemetry.py) every few seconds."""

from __future__ import annotations

import argparse
import json
import os
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

from gpu_platform import useful_work as uw
from gpu_platform.plan import Plan

from .api import ApiError, Client
from .prometheus import SCRAPE_INTERVAL_ENV
from .telemetry import Telemetry

REFRESH_SECONDS = 5.0


def refresh_seconds() -> float:
    """Seconds between reads of the cluster: the local Prometheus' scrape interval when it is shortened
    (localcluster/prometheus.SCRAPE_INTERVAL_ENV, whole seconds), else REFRESH_SECONDS."""
    value = os.environ.get(SCRAPE_INTERVAL_ENV, "").strip()
    return min(REFRESH_SECONDS, float(value[:-1])) if re.fullmatch(r"[1-9][0-9]*s", value) else REFRESH_SECONDS


_DCGM_PATH = re.compile(r"^/dcgm/([a-z0-9.-]+)/metrics$")


def handler(telemetry: Telemetry, address: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            path = self.path.split("?", 1)[0]
            if path == "/healthz":
                self._send(200 if telemetry.ready else 503, "ok\n" if telemetry.ready else "starting\n")
            elif not telemetry.ready:
                self._send(503, "no snapshot of the cluster yet\n")
            elif path == "/targets":
                self._send(200, json.dumps(telemetry.targets(address)), "application/json")
            elif path == "/ksm/metrics":
                self._send(200, telemetry.ksm(), "text/plain; version=0.0.4")
            elif (m := _DCGM_PATH.match(path)) is not None:
                if m.group(1) in telemetry.failed:
                    self._send(503, f"node {m.group(1)} has failed: its exporter does not answer\n")
                    return
                text = telemetry.dcgm(m.group(1))
                self._send(404, f"no simulated GPU node {m.group(1)}\n") if text is None else \
                    self._send(200, text, "text/plain; version=0.0.4")
            else:
                self._send(404, "paths: /healthz /targets /ksm/metrics /dcgm/<node>/metrics\n")

        def _send(self, status: int, body: str, ctype: str = "text/plain") -> None:
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's signature)
            pass

    return Handler


def _items(client: Client, path: str) -> list[dict[str, Any]]:
    return client.get(path).get("items") or []


def _workloads(client: Client) -> list[dict[str, Any]]:
    """Kueue's Workloads (none before Kueue's CRDs are installed: the telemetry starts before it)."""
    gvk = uw.KUEUE_WORKLOAD_GVK
    try:
        return _items(client, f"/apis/{gvk['group']}/{gvk['version']}/workloads")
    except ApiError as err:
        if err.status == 404:
            return []
        raise


def serve(plan: Plan, kubeconfig: Path, host: str, port: int, refresh: float = REFRESH_SECONDS,
          log: Callable[[str], None] = print) -> None:
    """Serve until interrupted, reading the cluster every `refresh` seconds (an error is logged and the last
    snapshot kept: a restarting API server must not take the GPUs' series away)."""
    client = Client.from_kubeconfig(kubeconfig)
    telemetry = Telemetry(plan)
    server = ThreadingHTTPServer((host, port), handler(telemetry, f"{host}:{port}"))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    log(f"gpu telemetry on http://{host}:{port} (/targets, /ksm/metrics, /dcgm/<node>/metrics), "
        f"{'virtual GPUs' if telemetry.virtual else 'one series per device'}")
    try:
        while True:
            try:
                telemetry.update(_items(client, "/api/v1/nodes"), _items(client, "/api/v1/pods"),
                                 _items(client, "/apis/batch/v1/jobs"), _workloads(client))
            except (OSError, RuntimeError, ValueError) as err:
                log(f"reading the cluster failed (keeping the last snapshot): {err}")
            time.sleep(refresh)
    finally:
        server.shutdown()


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--stack", required=True)
    p.add_argument("--kubeconfig", required=True, help="a kubeconfig that may list nodes, pods and Jobs")
    p.add_argument("--listen", required=True, metavar="HOST:PORT")
    p.add_argument("--refresh", type=float, default=refresh_seconds(), help="seconds between reads of the cluster")
