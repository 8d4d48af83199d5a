"""Real nodes of other state directories that nobody will stop: a cluster killed whole (kill -9, a CI job's
timeout, the end of a terminal session) whose state directory is never started again, or is gone (a test's
temporary directory, `rm -rf`). `cleanup` only removes what its own state directory's node left, so such a
node's bridge keeps the pod network's route and every later real node on the machine is refused ("the pod
network overlaps a route"), while its containers keep running.

`start` removes them first, but only when no real node runs on the machine (one per machine: the kubelet's
device-plugin directory is the machine's, so any kubelet, containerd or device plugin of another state directory
means a live node, whose leftovers are its own). They are found by what the kernel and the kubelet keep:
- with their state directory: a mount under `<state>/real-node/`, a container log link into it, a containerd shim
  whose address is its socket; that node's own `cleanup` then runs, as a `start` in that directory would;
- without it: a bridge or a cgroup root named with a node's tag (node.Names), released by name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .leftovers import CONTAINER_LOGS_DIR, cleanup, mountpoints, release
from .machine import cgroup_mounts, cmdline, ip, other_real_node, pids
from .node import BRIDGE_PREFIX, CGROUP_PREFIX, DIR_NAME, TAG_LENGTH, Layout, Names, state_tag

_TAG = rf"[0-9a-f]{{{TAG_LENGTH}}}"


@dataclass
class Orphans:
    """What `find` saw: nodes with their state directory, nodes known by their names only."""

    layouts: list[Layout] = field(default_factory=list)
    names: list[Names] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.layouts or self.names)

    def describe(self) -> list[str]:
        return ([f"the real node of {layout.state} (bridge {layout.bridge})" for layout in self.layouts] +
                [f"a real node whose state directory is gone (bridge {n.bridge}, cgroup {n.cgroup_root})"
                 for n in self.names])


def state_of(path: str) -> Path | None:
    """The state directory of a path under `<state>/real-node/`, when it holds the node's files (prepare wrote
    containerd.args there; cleanup keeps it) or the path is the node's socket."""
    head, sep, _ = path.partition(f"/{DIR_NAME}/")
    if not sep or not head:
        return None
    state = Path(head)
    return state if (state / DIR_NAME / "containerd.args").is_file() or path.endswith("/containerd.sock") else None


def _states() -> set[Path]:
    found = {s for p in mountpoints() if (s := state_of(p))}
    if CONTAINER_LOGS_DIR.is_dir():
        found |= {s for link in CONTAINER_LOGS_DIR.iterdir() if link.is_symlink()
                  and (s := state_of(str(link.readlink())))}
    for pid in pids():
        argv = cmdline(pid)
        if argv and Path(argv[0]).name.startswith("containerd-shim"):
            found |= {s for a in argv if (s := state_of(a))}
    return found


def _tags() -> set[str]:
    """Tags named by a bridge or a cgroup root of this machine."""
    links = ip("-o", "link", "show", "type", "bridge").stdout
    tags = set(re.findall(rf"^\d+: {BRIDGE_PREFIX}({_TAG})[:@]", links, re.M))
    for mount in cgroup_mounts():
        tags |= {m.group(1) for d in mount.glob(f"{CGROUP_PREFIX}*") if (m := re.fullmatch(
            rf"{CGROUP_PREFIX}({_TAG})", d.name))}
    return tags


def find(current: Layout) -> Orphans:
    """The leftovers of real nodes of other state directories (module docstring); nothing while one runs."""
    if other_real_node(current):
        return Orphans()
    layouts = sorted((Layout(s, current.device_plugin_dir) for s in _states() if state_tag(s) != current.tag),
                     key=lambda layout: str(layout.state))
    known = {layout.tag for layout in layouts} | {current.tag}
    return Orphans(layouts, [Names(t) for t in sorted(_tags() - known)])


def remove(orphans: Orphans, device_plugin_dir: Path) -> list[str]:
    """Each orphan's cleanup (with its state directory) or release (by name); the problems that remain."""
    problems = [p for layout in orphans.layouts for p in cleanup(layout)]
    return problems + [p for names in orphans.names for p in release(names, device_plugin_dir)]
