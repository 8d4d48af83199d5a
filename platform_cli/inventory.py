"""`python -m platform_cli inventory`: after a recovery (docs/runbook.md, step 5), the platform objects of the
cluster that a stack's state does not list, and what the state or the program declares that the cluster
lacks. The comparison is localcluster/recovery.py's; what the program declares comes from rendering it here,
where the application may run the components.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from gpu_platform.errors import InputError
from localcluster.recovery import Key, cluster_objects, inventory, key_of, kinds_of

ROOT = Path(__file__).resolve().parent.parent


def declared_objects(config: dict[str, Any], stack: str = "faults") -> set[Key]:
    """The objects the program declares for a stack config (the real program under mocks)."""
    from components.program import run
    from harness.render import run_program

    return {key_of(o) for o in run_program(run, stack, config).kubernetes_objects()}


def run_inventory(stack: str, config_file: str | None, ignore: list[str]) -> int:
    """Print the inventory as JSON; 0 when converged, 1 otherwise."""
    from harness.render import stack_config

    try:
        export = subprocess.run(["pulumi", "stack", "export", "--stack", stack, "--non-interactive"],
                                capture_output=True, text=True)
    except FileNotFoundError:
        raise InputError("no pulumi on PATH: the inventory reads the stack's state with `pulumi stack export` "
                         "(docs/runbook.md)") from None
    if export.returncode != 0:
        raise InputError(f"`pulumi stack export --stack {stack}` failed: {export.stderr.strip()[-2000:]}")
    exported = json.loads(export.stdout)
    config_file = config_file or str(ROOT / f"Pulumi.{stack}.yaml")
    declared = declared_objects(stack_config(config_file), stack)

    def kubectl(*a: str) -> subprocess.CompletedProcess:
        return subprocess.run(["kubectl", *a], capture_output=True, text=True, check=True)

    def named(k: Key) -> str:
        return "/".join(p for p in k[1:] if p)

    ignored = set(ignore)
    baseline = [k for k in cluster_objects(kubectl, kinds_of(declared)) if named(k) in ignored]
    inv = inventory(exported, kubectl, declared, baseline=baseline)
    print(json.dumps({**inv.summary(), "orphan_objects": [named(k) for k in inv.orphans],
                      "missing_objects": [named(k) for k in inv.missing],
                      "duplicated_objects": [named(k) for k in inv.duplicates]}, indent=2))
    return 0 if inv.converged else 1
