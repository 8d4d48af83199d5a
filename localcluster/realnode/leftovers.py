"""What a stopped or crashed real node leaves and the kernel keeps, removed: container processes (runc's containers
outlive containerd by design), containerd's shims, the mounts under the node's directory (overlay root file systems,
network namespaces, tmpfs volumes, the kubelet's shared root), the bridge, the pod cgroups, the container log links,
the device manager's checkpoint; then the node's runtime state, so the next start begins from an empty node. `stop`
runs it after stopping the processes, and so does `start` before it launches them (after a crash, `start` finds
nothing running and has nothing to stop)."""

from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import signal
import time
from pathlib import Path
from typing import Callable, Iterable

from .machine import cgroup_mounts, cmdline, ip, other_real_node, pids
from .node import DIR_NAME, Layout, Names

# The device manager's checkpoint in the device-plugin directory (pkg/kubelet/cm/devicemanager/types.go kubeletDeviceManagerCheckpoint): it
# restores the resources of the last node that ran, so a node of another pool would report the old pool's resource.
DEVICE_CHECKPOINT = "kubelet_internal_checkpoint"
# The kubelet links every container's log here whatever its podLogsDir (k8s.io/kubernetes v1.33.13
# pkg/kubelet/kubelet.go ContainerLogsDir); cleanup removes the links into this node's directory.
CONTAINER_LOGS_DIR = Path("/var/log/containers")
MNT_DETACH = 2


def mountpoints() -> list[str]:
    """Every mount point of this mount namespace (mountinfo's fifth field, its octal escapes undone)."""
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        field = line.split()[4]
        points.append(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field))
    return points


def _under(path: str, root: Path) -> bool:
    return path == str(root) or path.startswith(f"{root}/")


def _unmount_all(root: Path) -> list[str]:
    """Detach every mount at or below ROOT, deepest first; the ones still there afterwards."""
    libc = ctypes.CDLL(None, use_errno=True)
    for _ in range(5):  # a mount stacked on another shows again once the top one is gone
        points = sorted({p for p in mountpoints() if _under(p, root)}, key=lambda p: p.count("/"), reverse=True)
        if not points:
            return []
        for p in points:
            libc.umount2(p.encode(), MNT_DETACH)  # a failure shows as a mount that stays
    return sorted({p for p in mountpoints() if _under(p, root)})


def cgroup_roots(node: Layout | Names) -> list[Path]:
    """The node's cgroup root in every hierarchy where it exists."""
    return [r for m in cgroup_mounts() if (r := m / node.cgroup_root.lstrip("/")).is_dir()]


def cgroup_pids(roots: Iterable[Path]) -> set[int]:
    pids: set[int] = set()
    for root in roots:
        for procs in root.rglob("cgroup.procs"):
            try:
                pids.update(int(p) for p in procs.read_text().split())
            except OSError:
                continue
    return pids


def _shim_pids(layout: Layout) -> set[int]:
    """containerd's shims of this node: their command line names its socket."""
    return {pid for pid in pids() if (argv := cmdline(pid)) and Path(argv[0]).name.startswith("containerd-shim")
            and any(str(layout.socket) in a for a in argv)}


def _kill_all(find: Callable[[], set[int]], timeout: float = 10) -> set[int]:
    """SIGKILL what FIND() returns until it returns nothing or TIMEOUT passes; what is left."""
    deadline = time.monotonic() + timeout
    while (pids := find() - {os.getpid()}) and time.monotonic() < deadline:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)
    return find() - {os.getpid()}


def _remove_cgroups(roots: Iterable[Path], timeout: float = 10) -> list[str]:
    """rmdir every cgroup below and at each root, children first (a cgroup empties a moment after its last
    process exits); those that stay."""
    left: list[str] = []
    deadline = time.monotonic() + timeout
    for root in roots:
        while root.exists():
            for d, _, _ in sorted(os.walk(root), key=lambda w: w[0].count("/"), reverse=True):
                try:
                    os.rmdir(d)
                except OSError:
                    pass
            if not root.exists() or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        if root.exists():
            left.append(str(root))
    return left



def _delete_bridge(bridge: str) -> list[str]:
    """The bridge and what is still attached to it; the problems."""
    problems: list[str] = []
    if ip("link", "show", bridge).returncode == 0:
        # A pod's veth goes with its network namespace (gone once unmounted and unused); one still on the bridge
        # is deleted with its peer, then the bridge.
        ports = json.loads(ip("-j", "link", "show", "master", bridge).stdout or "[]")
        for link in [p["ifname"] for p in ports] + [bridge]:
            out = ip("link", "delete", link)
            if out.returncode != 0 and ip("link", "show", link).returncode == 0:
                problems.append(f"ip link delete {link}: {out.stderr.strip()}")
    return problems


def _forget(names: Names, device_plugin_dir: Path) -> None:
    """The node's device-plugin socket and libcni's cache of its pods (github.com/containernetworking/cni libcni:
    /var/lib/cni/results, CacheDir's default, which containerd 1.6 keeps)."""
    (device_plugin_dir / names.plugin_socket).unlink(missing_ok=True)
    for cached in Path("/var/lib/cni/results").glob(f"{names.network}-*"):
        cached.unlink(missing_ok=True)


def _unlink_logs(into: Callable[[str], bool]) -> None:
    """The kubelet's container log links whose target INTO accepts."""
    if CONTAINER_LOGS_DIR.is_dir():
        for link in CONTAINER_LOGS_DIR.iterdir():
            if link.is_symlink() and into(os.readlink(link)):
                link.unlink(missing_ok=True)


def cleanup(layout: Layout) -> list[str]:
    """Undo what the node's processes leave (module docstring): the problems that remain (empty: none). Safe to
    run when nothing is left, and idempotent."""
    problems: list[str] = []
    roots = cgroup_roots(layout)
    if left := _kill_all(lambda: cgroup_pids(roots)):
        problems.append(f"container processes still running: {sorted(left)}")
    if left := _kill_all(lambda: _shim_pids(layout)):
        problems.append(f"containerd shims still running: {sorted(left)}")
    if layout.dir.exists() and (mounts := _unmount_all(layout.dir)):
        problems.append(f"still mounted: {', '.join(mounts)}")
    problems += _delete_bridge(layout.bridge)
    if left := _remove_cgroups(roots):
        problems.append(f"cgroups not removed: {', '.join(left)}")
    _unlink_logs(lambda target: _under(target, layout.dir))
    _forget(layout.names, layout.device_plugin_dir)
    if other_real_node(layout) is None:  # the kubelet's own socket and checkpoint there, when no kubelet runs
        for name in (DEVICE_CHECKPOINT, "kubelet.sock"):
            (layout.device_plugin_dir / name).unlink(missing_ok=True)
    if not problems:
        # The runtime's and the kubelet's state of pods that no longer run: only once nothing is mounted below it.
        for d in layout.runtime_dirs:
            shutil.rmtree(d, ignore_errors=True)
        for stale in ("gpu-device-plugin.ready", "containerd.sock", "containerd.sock.ttrpc"):
            (layout.dir / stale).unlink(missing_ok=True)
    return problems


def release(names: Names, device_plugin_dir: Path) -> list[str]:
    """What a node known only by its names left (its state directory gone with its mounts, so no shim or mount
    is left to find): its containers, bridge, cgroups, socket, CNI cache and the log links into a directory
    that no longer exists; the problems that remain."""
    problems: list[str] = []
    roots = cgroup_roots(names)
    if left := _kill_all(lambda: cgroup_pids(roots)):
        problems.append(f"container processes still running: {sorted(left)}")
    problems += _delete_bridge(names.bridge)
    if left := _remove_cgroups(roots):
        problems.append(f"cgroups not removed: {', '.join(left)}")
    _unlink_logs(lambda target: f"/{DIR_NAME}/pod-logs/" in target and not os.path.exists(target))
    _forget(names, device_plugin_dir)
    return problems
