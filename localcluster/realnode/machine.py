"""The machine under the real node: its capacity, the runtime and CNI plugins it has, whether another real node
runs, whether the pod network clashes with a route, and what this process may do (the checks `preflight` makes
before anything is written)."""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Iterable

from .node import DEVICE_PLUGIN_DIR, DIR_NAME, POD_SUBNET, Layout, RealNodeError, disk_problem

# A Unix socket path is at most 107 bytes (sockaddr_un.sun_path holds 108 with the terminating NUL).
MAX_SOCKET_PATH = 107
# Where Debian's containernetworking-plugins puts the plugins, and upstream's default.
CNI_DIRS = (Path("/usr/lib/cni"), Path("/opt/cni/bin"))
CNI_PLUGINS = ("bridge", "host-local", "loopback", "portmap")


def machine_capacity() -> tuple[int, int]:
    """(vCPUs, MemTotal in MiB): what the kubelet's cAdvisor reports as the node's capacity."""
    meminfo = Path("/proc/meminfo").read_text()
    m = re.search(r"^MemTotal:\s+(\d+) kB", meminfo, re.M)
    if not m:
        raise RealNodeError("/proc/meminfo has no MemTotal")
    return os.cpu_count() or 1, int(m.group(1)) // 1024


def cni_dir() -> Path:
    for d in CNI_DIRS:
        if all((d / p).is_file() for p in CNI_PLUGINS):
            return d
    raise RealNodeError(f"no directory of {', '.join(CNI_PLUGINS)} CNI plugins in {', '.join(map(str, CNI_DIRS))} "
                        "(scripts/tools/containerd.sh installs Debian's containernetworking-plugins)")


def cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
    except OSError:
        return []


def pids() -> Iterable[int]:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            yield int(entry)


# A real node's processes (localcluster/state.py REAL_NODE_COMPONENTS run these binaries); their arguments name its
# directory (prepare.write_files: --config, --root-dir, --ready-file).
NODE_PROCESSES = ("containerd", "kubelet", "gpu-device-plugin")


def other_real_node(layout: Layout, among: Iterable[int] | None = None) -> str | None:
    """The command line of a process of another real node, or None: any kubelet not of this state directory (the
    kubelet's device-plugin directory is the machine's), or a containerd or device plugin of another node's
    directory (a system containerd is not one). AMONG: the processes to look at (default: every one)."""
    for pid in pids() if among is None else among:
        argv = cmdline(pid)
        name = Path(argv[0]).name if argv else ""
        if name not in NODE_PROCESSES or any(str(layout.dir) in a for a in argv):
            continue
        if name == "kubelet" or any(f"/{DIR_NAME}/" in a for a in argv):
            return " ".join(argv)[:200]
    return None


def preflight(layout: Layout) -> list[str]:
    """What stops a real node on this machine (empty: nothing)."""
    problems = []
    if os.geteuid() != 0:
        problems.append("the real node needs root (it mounts, makes cgroups and network links): run as root, or "
                        "LOCAL_CLUSTER_REAL_NODE=none")
    for binary in ("containerd", "containerd-shim-runc-v2", "runc", "ctr"):
        if shutil.which(binary) is None:
            problems.append(f"{binary} is not on PATH (scripts/tools/containerd.sh installs Debian's containerd and runc)")
    try:
        cni_dir()
    except RealNodeError as err:
        problems.append(str(err))
    longest = max(layout.socket_paths, key=len)
    if len(longest) > MAX_SOCKET_PATH:
        problems.append(f"the node's sockets under {layout.dir} would be longer than a Unix socket path may be "
                        f"({len(longest)} characters, at most {MAX_SOCKET_PATH}: {longest}): use a LOCAL_CLUSTER_DIR "
                        f"at least {len(longest) - MAX_SOCKET_PATH} characters shorter")
    other = other_real_node(layout)
    if other:
        problems.append(f"another real node runs ({other}): the kubelet's device-plugin directory "
                        f"{DEVICE_PLUGIN_DIR} is the machine's, so one real node per machine")
    clash = _route_clash(layout)
    if clash:
        problems.append(f"the pod network {POD_SUBNET} overlaps a route of this machine ({clash})")
    existing = next(p for p in (layout.dir, *layout.dir.parents) if p.exists())
    usage = shutil.disk_usage(existing)
    disk = disk_problem(existing, usage.free, usage.total)
    if disk:
        problems.append(disk)
    return problems


def _route_clash(layout: Layout) -> str | None:
    try:
        out = subprocess.run(["ip", "-j", "route", "show", "table", "all"], capture_output=True, text=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    for route in json.loads(out or "[]"):
        dst, dev = route.get("dst", ""), route.get("dev", "")
        if dev == layout.bridge or dst in ("default", "") or route.get("type") in ("local", "broadcast"):
            continue
        try:
            net = ipaddress.ip_network(dst, strict=False)
        except ValueError:
            continue
        if net.version == 4 and net.overlaps(POD_SUBNET):
            return f"{dst} dev {dev}"
    return None


CAP_SYS_RESOURCE = 24  # linux/capability.h


def can_lower_oom_score() -> bool:
    """Whether this process may lower an oom_score_adj (CAP_SYS_RESOURCE; some sandboxes' bounding sets lack it)."""
    m = re.search(r"^CapEff:\s+([0-9a-f]+)", Path("/proc/self/status").read_text(), re.M)
    return bool(m and int(m.group(1), 16) >> CAP_SYS_RESOURCE & 1)


def ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True)


def cgroup_mounts() -> list[Path]:
    """Every mounted cgroup hierarchy (v1 controllers and named ones, and v2)."""
    mounts = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        if right.split()[0] in ("cgroup", "cgroup2"):
            mounts.append(Path(left.split()[4]))
    return mounts
