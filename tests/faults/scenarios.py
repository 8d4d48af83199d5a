"""Fault scenarios on the real engine and a live local cluster, shared by tests/faults and bench/faults.py:
kill `pulumi up` at a seeded moment and recover as documented, two `up`s at once, an API server outage,
controllers restarting under load, drift. Test and benchmark rigging: the recovery and the inventory they
judge by are the runbook's (localcluster/recovery.py), the objects a config declares come from rendering
the program (platform_cli/inventory.py).
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from localcluster.driver import ROOT, LocalCluster
from localcluster.recovery import (
    Inventory, Key, Recovery, RecoveryError, inventory, kinds_of, pending_operations, recover, repair_state_sidecars,
)
# A step the CLI reports done, in its non-interactive progress lines (" +  kubernetes:...  name  created (0.1s)").
_DONE = re.compile(r"\b(created|updated|deleted|replaced)\b \(\d")

# ---------------------------------------------------------------------------------------------------
# killing the CLI


@dataclass
class Kill:
    after_steps: int          # the kill came right after this many steps were reported done
    seconds: float            # since the CLI started
    finished_first: bool      # the update ended before the kill point (no kill happened)
    stragglers: int           # plugin processes still alive 10 s after the CLI died (then killed)
    pid: int = 0
    output: str = field(repr=False, default="")


def _descendants(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=,ppid=", "-A"], capture_output=True, text=True).stdout
    children: dict[int, list[int]] = {}
    for line in out.splitlines():
        p, pp = (int(x) for x in line.split())
        children.setdefault(pp, []).append(p)
    found, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            found.append(c)
            todo.append(c)
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:   # a zombie is dead
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def kill_up_at(cmd: list[str], env: dict[str, str], cwd: str, at_step: int, jitter_s: float,
               timeout: float = 900) -> Kill:
    """Run `cmd` (a `pulumi up`), SIGKILL the CLI process jitter_s after it reports its at_step-th finished
    step, as a dying CI runner would. Its plugins (language host, program, provider) lose their engine;
    any still alive 10 s later are counted and killed so they cannot race the recovery."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    lines: list[str] = []
    steps = 0
    killed = threading.Event()
    kids: list[int] = []

    def kill() -> None:
        kids.extend(_descendants(proc.pid))
        os.kill(proc.pid, signal.SIGKILL)
        killed.set()

    timer: threading.Timer | None = None
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        if _DONE.search(line):
            steps += 1
            if steps == at_step and timer is None:
                timer = threading.Timer(jitter_s, kill)
                timer.start()
        if time.perf_counter() - started > timeout:
            kill()
    proc.wait()
    if timer is not None:
        timer.join()
    seconds = round(time.perf_counter() - started, 2)
    stragglers = 0
    if killed.is_set():
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_alive(k) for k in kids):
            time.sleep(0.2)
        for k in kids:
            if _alive(k):
                stragglers += 1
                try:
                    os.kill(k, signal.SIGKILL)
                except ProcessLookupError:
                    pass
    return Kill(at_step, seconds, not killed.is_set(), stragglers, proc.pid, "".join(lines))


def seeded_kill_points(seed: int, trials: int, steps: int) -> list[tuple[int, float]]:
    """(step, jitter) per trial: after a uniformly drawn step of the ~steps an update reports, plus up to 0.3 s."""
    rng = random.Random(seed)
    return [(rng.randint(1, max(1, steps - 1)), round(rng.uniform(0.0, 0.3), 3)) for _ in range(trials)]


@dataclass
class Trial:
    target: str
    kill: Kill
    after_kill: Inventory        # before any recovery: what the kill left
    recovery: Recovery
    converge_s: float
    final: Inventory
    no_changes: bool             # `pulumi preview --expect-no-changes` passed after the converging `up`

    def line(self) -> str:
        k = self.kill
        return (f"-> {self.target}: killed after step {k.after_steps} at {k.seconds:.1f}s"
                f"{' (finished first)' if k.finished_first else ''}; left orphans {len(self.after_kill.orphans)}, "
                f"pending {self.recovery.pending_before}, lock refused {self.recovery.lock_refused}; "
                f"recovery {self.recovery.seconds:.1f}s + up {self.converge_s:.1f}s; "
                f"orphans {len(self.final.orphans)} missing {len(self.final.missing)} "
                f"duplicates {len(self.final.duplicates)} pending {self.final.pending}; no changes {self.no_changes}")


@dataclass
class StackRig:
    """One stack on one cluster, switched between named platform configs (the same stack file: its salt and
    secret config values stay), with the objects each config declares."""

    stack: str
    config_file: Path
    pulumi_bin: str
    env: dict[str, str]                          # the CLI's environment (backend, passphrase, KUBECONFIG, ...)
    kubectl: Callable[..., subprocess.CompletedProcess]
    configs: dict[str, dict[str, Any]]           # label -> `gpu-platform:platform` value
    declared: dict[str, set[Key]]                # label -> objects the program declares for it
    baseline: set[Key] = field(default_factory=set)   # labelled objects the cluster had before (local-cluster's)
    outputs: list[str] = field(default_factory=list)  # every CLI output, for the secrets grep
    current: str = ""

    @property
    def stack_args(self) -> list[str]:
        return ["--stack", self.stack, "--config-file", str(self.config_file)]

    def pulumi(self, *args: str, check: bool = True, timeout: float = 900,
               input: str | None = None) -> subprocess.CompletedProcess:
        out = subprocess.run([self.pulumi_bin, *args, "--non-interactive"], cwd=ROOT, env=self.env,
                             capture_output=True, text=True, timeout=timeout, input=input)
        self.outputs.append(out.stdout + out.stderr)
        if check and out.returncode != 0:
            raise FaultError(f"pulumi {' '.join(args[:3])} exited {out.returncode}\n{out.stdout[-4000:]}\n"
                             f"{out.stderr[-3000:]}")
        return out

    def use(self, label: str) -> None:
        import yaml

        doc = yaml.safe_load(self.config_file.read_text())
        doc["config"]["gpu-platform:platform"] = self.configs[label]
        self.config_file.write_text(yaml.safe_dump(doc, sort_keys=False))
        self.current = label

    def up(self, label: str) -> float:
        self.use(label)
        started = time.perf_counter()
        self.pulumi("up", "--yes", "--skip-preview", *self.stack_args)
        return round(time.perf_counter() - started, 1)

    def export(self) -> dict[str, Any]:
        return json.loads(self.pulumi("stack", "export", "--stack", self.stack).stdout)

    def inventory(self, label: str | None = None) -> Inventory:
        label = label or self.current
        kinds = kinds_of(set().union(*self.declared.values()))
        return inventory(self.export(), self.kubectl, self.declared[label], kinds, self.baseline)

    def no_changes(self, refresh: bool = False) -> bool:
        args = ["preview", "--expect-no-changes", *(["--refresh"] if refresh else []), *self.stack_args]
        return self.pulumi(*args, check=False).returncode == 0

    def trial(self, target: str, step: int, jitter: float) -> Trial:
        """Kill an `up` to TARGET after STEP finished steps (+JITTER s), recover as documented, `up` again."""
        self.use(target)
        kill = kill_up_at([self.pulumi_bin, "up", "--yes", "--skip-preview", *self.stack_args, "--non-interactive"],
                          self.env, str(ROOT), step, jitter)
        self.outputs.append(kill.output)
        repaired = repair_state_sidecars(self.env)
        after_kill = self.inventory(target)
        recovery = recover(self.pulumi, self.stack_args, kill.pid)
        if repaired:
            recovery.steps.insert(0, f"remove empty {', '.join(repaired)}")
        converge = self.up(target) if recovery.steps != ["up (not refused)"] else 0.0
        return Trial(target, kill, after_kill, recovery, converge, self.inventory(target), self.no_changes())


class FaultError(RecoveryError):
    """A step of a fault trial failed; the message carries the command's output."""


# ---------------------------------------------------------------------------------------------------
# two `up`s at once, an API server outage


@dataclass
class Concurrent:
    first_rc: int
    second_rc: int
    second_message: str        # the lock line of the refusal
    lock_named: bool           # the refusal names the first process's lock (its pid)
    second_s: float            # how long the second took to be refused


def _popen_up(rig: "StackRig") -> tuple[subprocess.Popen, list[str], threading.Event]:
    proc = subprocess.Popen([rig.pulumi_bin, "up", "--yes", "--skip-preview", *rig.stack_args, "--non-interactive"],
                            cwd=ROOT, env=rig.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    first_step = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if _DONE.search(line):
                first_step.set()
        first_step.set()

    threading.Thread(target=read, daemon=True).start()
    return proc, lines, first_step


def concurrent_ups(rig: "StackRig", target: str) -> Concurrent:
    """An `up` to TARGET, and once it has applied its first step a second `up` of the same stack."""
    rig.use(target)
    proc, lines, first_step = _popen_up(rig)
    first_step.wait(300)
    started = time.perf_counter()
    second = rig.pulumi("up", "--yes", "--skip-preview", *rig.stack_args, check=False)
    second_s = round(time.perf_counter() - started, 1)
    rc = proc.wait(900)
    time.sleep(0.2)
    rig.outputs.append("".join(lines))
    text = second.stdout + second.stderr
    message = next((ln.strip() for ln in text.splitlines() if "currently locked" in ln), "")
    return Concurrent(rc, second.returncode, message, f"(pid {proc.pid})" in text, second_s)


@dataclass
class Outage:
    rc: int
    running_at_stop: bool      # the `up` was still applying when the API server stopped
    detect_s: float            # from the API server's stop to the CLI's exit
    names_cluster: bool        # the failure names the server the kubeconfig points at
    message: str               # the first error line
    restart_s: float           # `scripts/local-cluster start` bringing the cluster back
    restart_attempts: int
    pending: int               # pending operations the failed `up` left
    converge_s: float
    final: Inventory
    no_changes: bool


def _stop_apiserver(cluster: LocalCluster) -> float:
    """SIGTERM kube-apiserver (as `scripts/local-cluster stop` does) and wait for it to exit; returns when the
    signal was sent (it stops serving then, before its graceful shutdown ends). Signalled from here, not with
    `local-cluster stop kube-apiserver`, so the detection time starts at the signal itself."""
    pid = cluster.pid("kube-apiserver")
    if pid is None:
        raise FaultError(f"kube-apiserver of {cluster.state} is not running")
    sent = time.perf_counter()
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.05)
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)
    return sent


def apiserver_outage(rig: "StackRig", target: str, cluster: LocalCluster, at_step: int = 3,
                     timeout: float = 600) -> Outage:
    """Stop kube-apiserver once an `up` to TARGET has applied AT_STEP steps; time the CLI's failure; bring the
    cluster back (`scripts/local-cluster start`); clear pending operations if any; `up` again."""
    rig.use(target)
    proc, lines, _ = _popen_up(rig)
    while sum(1 for ln in lines if _DONE.search(ln)) < at_step and proc.poll() is None:
        time.sleep(0.02)
    running = proc.poll() is None
    exited: list[float] = []
    waiter = threading.Thread(target=lambda: (proc.wait(), exited.append(time.perf_counter())), daemon=True)
    waiter.start()
    stopped = _stop_apiserver(cluster)
    waiter.join(timeout)
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    rc = proc.returncode
    detect = round((exited[0] if exited else time.perf_counter()) - stopped, 1)
    time.sleep(0.2)
    text = "".join(lines)
    rig.outputs.append(text)
    errors = [ln.strip() for ln in text.splitlines() if "error" in ln.lower()]
    started = time.perf_counter()
    attempts = 0
    while True:   # the local cluster's own restart, not the platform under test: counted, retried once
        attempts += 1
        out = cluster.script("start", timeout=900, check=False)
        if out.returncode == 0:
            break
        steps = "\n".join(ln for ln in out.stderr.splitlines() if ln.startswith("local-cluster:"))
        if attempts == 2:
            raise FaultError(f"local-cluster start after the outage failed twice:\n{steps}\n{out.stderr[-2000:]}")
        print(f"faults: local-cluster start failed, once more:\n{steps}", file=sys.stderr)
    restart = round(time.perf_counter() - started, 1)
    pending = len(pending_operations(rig.export()))
    if pending:
        rig.pulumi("refresh", "--yes", "--clear-pending-creates", "--skip-preview", *rig.stack_args)
    converge = rig.up(target)
    host = cluster.server.split("://", 1)[-1]
    return Outage(rc, running, detect, any(host in e for e in errors), errors[0] if errors else "", restart, attempts,
                  pending,
                  converge, rig.inventory(target), rig.no_changes())


# ---------------------------------------------------------------------------------------------------
# controllers restarting under a loaded platform


def queue_snapshot(kubectl: Callable[..., subprocess.CompletedProcess]) -> dict[str, Any]:
    """Workloads (by owning Job) with their admission, and every ClusterQueue's usage."""
    wls = json.loads(kubectl("get", "workloads.kueue.x-k8s.io", "-A", "-o", "json").stdout)["items"]
    cqs = json.loads(kubectl("get", "clusterqueues.kueue.x-k8s.io", "-o", "json").stdout)["items"]

    def admitted(w: dict[str, Any]) -> bool:
        return any(c["type"] == "Admitted" and c["status"] == "True" for c in w.get("status", {}).get("conditions", []))

    def owner(w: dict[str, Any]) -> str:
        refs = [o["name"] for o in w["metadata"].get("ownerReferences", []) if o.get("kind") == "Job"]
        return f"{w['metadata']['namespace']}/{refs[0] if refs else w['metadata']['name']}"

    usage = {}
    for cq in cqs:
        usage[cq["metadata"]["name"]] = sorted(
            (f["name"], r["name"], r.get("total", "0"))
            for f in cq.get("status", {}).get("flavorsUsage", []) for r in f.get("resources", []))
    return {"workloads": {owner(w): admitted(w) for w in wls},
            "uids": {owner(w): w["metadata"]["uid"] for w in wls}, "usage": usage}


@dataclass
class Restart:
    component: str
    seconds: float             # `scripts/local-cluster restart COMPONENT`
    lost: list[str]            # workloads gone after the restart
    unadmitted: list[str]      # admitted before, not after
    newly_admitted: list[str]  # pending before, admitted after (none expected: nothing finished)
    recreated: list[str]       # same Job, another Workload object
    usage_equal: bool
    usage_changes: dict[str, Any] = field(default_factory=dict)   # ClusterQueue: (before, after) where they differ


def restart_component(component: str, cluster: LocalCluster, kubectl: Callable[..., subprocess.CompletedProcess],
                      settle_s: float = 2.0, settle_deadline_s: float = 60.0) -> Restart:
    before = queue_snapshot(kubectl)
    started = time.perf_counter()
    out = cluster.script("restart", component, timeout=600, check=False)
    if out.returncode != 0:
        steps = "\n".join(ln for ln in out.stderr.splitlines() if ln.startswith("local-cluster:"))
        raise FaultError(f"local-cluster restart {component} failed:\n{steps}\n{out.stderr[-1500:]}")
    seconds = round(time.perf_counter() - started, 1)
    # The API server answers again (after etcd), and a restarted Kueue rebuilds its cache from the Workloads
    # and rewrites each ClusterQueue's status: what it settles on is the answer, so poll until the snapshot
    # equals the one before (at most settle_deadline_s), and judge the last one taken.
    deadline = time.monotonic() + settle_deadline_s
    after: dict[str, Any] | None = None
    while True:
        time.sleep(settle_s)
        try:
            after = queue_snapshot(kubectl)
        except Exception:
            if time.monotonic() > deadline and after is None:
                raise
            continue
        if (after["usage"] == before["usage"] and after["workloads"] == before["workloads"]) \
                or time.monotonic() > deadline:
            break
    b, a = before["workloads"], after["workloads"]
    return Restart(
        component, seconds,
        lost=sorted(set(b) - set(a)),
        unadmitted=sorted(k for k, v in b.items() if v and not a.get(k)),
        newly_admitted=sorted(k for k, v in b.items() if not v and a.get(k)),
        recreated=sorted(k for k in b if k in a and before["uids"][k] != after["uids"][k]),
        usage_equal=before["usage"] == after["usage"],
        usage_changes={q: (before["usage"].get(q), after["usage"].get(q))
                       for q in sorted(set(before["usage"]) | set(after["usage"]))
                       if before["usage"].get(q) != after["usage"].get(q)},
    )


# ---------------------------------------------------------------------------------------------------
# drift


def planned_changes(preview_json: str) -> dict[str, str]:
    """URN -> op of every step a `pulumi preview --json` would apply (reads, refreshes and sames left out)."""
    doc = json.loads(preview_json)
    return {s["urn"]: s["op"] for s in doc.get("steps") or []
            if s.get("op") not in ("same", "refresh", "read") and "::pulumi:pulumi:Stack::" not in s["urn"]
            and "pulumi:providers:" not in s["urn"]}
