"""What one command of the local cluster works with: its state, settings, processes and tools, and the calls every
component's start makes (the admin's kubectl, a readiness wait, the files `python -m localcluster` writes)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

from . import probe
from .kubectl import Kubectl
from .ports import Ports
from .state import ROOT, Paths, Settings
from .supervise import Clock, StartError, Supervisor
from .tools import CoreTools, NodeImages


@dataclass
class Context:
    paths: Paths
    settings: Settings
    sup: Supervisor
    python: str                         # the interpreter the GPU telemetry runs with
    timeout: float = 90                 # LOCAL_CLUSTER_START_TIMEOUT: seconds to wait for each component
    clock: Clock = field(default_factory=Clock)
    tools: CoreTools | None = None
    node_images: NodeImages | None = None
    # component -> its scripts/tools/<tool>.sh, for the workload controllers this start runs
    workload_tools: dict[str, str] = field(default_factory=dict)

    @property
    def ports(self) -> Ports:
        return self.settings.ports

    @property
    def server(self) -> str:
        return self.ports.server

    @property
    def kubectl(self) -> Kubectl:
        return Kubectl(self.paths.admin_kubeconfig)

    @property
    def core(self) -> CoreTools:
        if self.tools is None:
            self.tools = CoreTools.ensure()
        return self.tools

    def admin_ok(self, url: str) -> bool:
        """URL answers 2xx to the cluster's admin (the API server's readyz)."""
        pki = self.paths.pki
        return probe.ok(url, ca=pki / "ca.crt", cert=pki / "admin.crt", key=pki / "admin.key")

    def wait_http(self, name: str, url: str, **tls: object) -> None:
        """Until URL answers 2xx while component NAME stays up."""
        self.sup.wait(name, lambda: probe.ok(url, **tls), self.timeout, f"{name} not ready after {self.timeout:g}s ({url})")

    def files(self, *args: str, failure: str | None = None) -> None:
        """`python -m localcluster ARGS` (localcluster/__main__.py) in this process, from the repository (where a
        stack name is found); StartError with FAILURE when it fails (its reason is on stderr already)."""
        from .__main__ import main

        with contextlib.chdir(ROOT):
            code = main(list(args))
        if code != 0:
            raise StartError(failure or f"python -m localcluster {args[0]} failed")

    def stack_file_args(self) -> list[str]:
        return ["--stack", self.settings.stack]


def component_dir(ctx: Context, name: str) -> Path:
    path = ctx.paths.state / name
    path.mkdir(parents=True, exist_ok=True)
    return path
