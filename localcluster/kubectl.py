"""kubectl against the local cluster, as the driver uses it: server-side applies owned by the field manager
`local-cluster`, CRDs applied once per content and waited for until Established."""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
from pathlib import Path
from typing import Any, Sequence

from .supervise import StartError

FIELD_MANAGER = "local-cluster"


class Kubectl:
    def __init__(self, kubeconfig: Path):
        self.kubeconfig = kubeconfig

    def run(self, *args: str, input: str | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["kubectl", f"--kubeconfig={self.kubeconfig}", *args], input=input, text=True,
                              capture_output=True, timeout=timeout)

    def ok(self, *args: str, input: str | None = None) -> bool:
        return self.run(*args, input=input).returncode == 0

    def apply(self, *args: str, manager: str = FIELD_MANAGER, input: str | None = None) -> bool:
        """Server-side apply (some CRDs are larger than the client-side last-applied annotation allows)."""
        return self.ok("apply", "--server-side", "--force-conflicts", f"--field-manager={manager}", *args,
                       input=input)

    def apply_list(self, path: Path) -> bool:
        """A v1 List; one with no items is nothing to apply."""
        if not json.loads(path.read_text()).get("items"):
            return True
        return self.apply("-f", str(path))

    def get_json(self, *args: str) -> Any:
        out = self.run("get", *args, "-o", "json")
        if out.returncode != 0:
            raise StartError(f"kubectl get {' '.join(args)} failed: {out.stderr.strip()[-500:]}")
        return json.loads(out.stdout)

    def apply_crds(self, tag: str, files: Sequence[Path], state: Path, timeout: float) -> None:
        """Server-side apply of FILES (skipped when they are unchanged since the last start, etcd keeps them), then
        until every CRD in them is Established."""
        args = [a for f in files for a in ("-f", str(f))]
        digest = hashlib.sha256(b"".join(Path(f).read_bytes() for f in files)).hexdigest()
        record = state / f"{tag}.sha256"
        recorded = record.read_text().strip() if record.is_file() else ""
        if not (digest == recorded and self.ok("get", *args, "-o", "name")):
            record.unlink(missing_ok=True)
            if not self.apply(*args):
                raise StartError(f"installing the CRDs ({tag}) failed")
            record.write_text(f"{digest}\n")
        # A CRD created a moment ago may have no status.conditions yet, and kubectl wait then fails at once
        # (".status.conditions accessor error: <nil>") instead of waiting: try again until the deadline.
        deadline = time.monotonic() + timeout
        while not self.ok("wait", "--for=condition=Established", f"--timeout={int(timeout)}s", *args):
            if time.monotonic() > deadline:
                raise StartError(f"CRDs ({tag}) did not become Established")
            time.sleep(0.5)
