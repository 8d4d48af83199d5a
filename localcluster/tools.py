"""The binaries and files a start needs from the tool cache, each ensured by its scripts/tools/<tool>.sh (a link
when the cache is warm, a build when it is cold: that script's progress lines go to the terminal)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .state import ROOT
from .supervise import StartError
from .toolcache import BIN

TOOLS_DIR = ROOT / "scripts" / "tools"
# What every start runs (its own build scripts), and the commands it calls from PATH.
CORE_TOOLS = ("etcd", "kube-apiserver", "kueue", "kwok", "karpenter-kwok", "helm")
COMMANDS = ("kubectl", "openssl")
REAL_NODE_TOOLS = ("containerd", "kubelet", "gpu-device-plugin", "node-images")


def tool(name: str, *flags: str) -> str:
    """scripts/tools/NAME.sh FLAGS: what it prints (stdout), or StartError when the tool cannot be had."""
    out = subprocess.run([str(TOOLS_DIR / f"{name}.sh"), *flags], stdout=subprocess.PIPE, text=True)
    if out.returncode != 0:
        raise StartError(f"tool {name} is missing and could not be built (scripts/tools/{name}.sh)")
    return out.stdout.strip()


def binary(name: str) -> Path:
    return BIN / name


@dataclass(frozen=True)
class CoreTools:
    """The control plane's binaries (in the tool cache's bin), Kueue's chart, Karpenter's CRDs, the API server's
    version (the simulated nodes report it)."""

    karpenter_crds: Path
    kueue_chart: Path
    kube_version: str

    @staticmethod
    def ensure() -> "CoreTools":
        for name in CORE_TOOLS:
            tool(name)
        for command in COMMANDS:
            if shutil.which(command) is None:
                raise StartError(f"{command} is not on PATH")
        version = subprocess.run([str(binary("kube-apiserver")), "--version"], capture_output=True, text=True).stdout
        return CoreTools(karpenter_crds=Path(tool("karpenter-kwok", "--crds")),
                         kueue_chart=Path(tool("kueue", "--chart")),
                         kube_version=(version.split() + ["", ""])[1])


@dataclass(frozen=True)
class NodeImages:
    """The real node's images: the directory of their OCI archives, and (archive, image name) of each."""

    directory: Path
    names: tuple[tuple[str, str], ...]

    @property
    def pause(self) -> str:
        return next(image for archive, image in self.names if archive == "pause.oci.tar")

    @staticmethod
    def ensure() -> "NodeImages":
        for name in REAL_NODE_TOOLS:
            tool(name)
        names = tuple((line.split()[0], line.split()[1]) for line in tool("node-images", "--names").splitlines()
                      if len(line.split()) == 2)
        return NodeImages(Path(tool("node-images", "--print-dir")), names)
