"""Which provider plugins a stack's program loads, read from the installed Pulumi packages (`plugins`)."""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path

from gpu_platform.errors import InputError

# The Pulumi packages whose provider plugins a stack's program loads: Kubernetes always, AWS where node
# pools are made (cluster.provider eks).
KUBERNETES_PACKAGE = "pulumi_kubernetes"
AWS_PACKAGE = "pulumi_aws"


def plugin_of(package: str) -> tuple[str, str, str]:
    """(kind, name, version) of the provider plugin an installed Pulumi package asks the engine for: its
    pulumi-plugin.json, which is exactly what the engine reads (so the version is the requirements.txt pin
    installed in the virtualenv, never a second copy of it). Read without importing the package."""
    try:
        dist = metadata.distribution(package)
    except metadata.PackageNotFoundError:
        raise InputError(f"{package} is not installed in this Python: run `make venv`") from None
    data = json.loads(Path(str(dist.locate_file(f"{package}/pulumi-plugin.json"))).read_text())
    return ("resource" if data.get("resource") else "language", data["name"], data["version"])
