"""Faults on the real engine and the live local cluster: a killed, failed or concurrent `up` loses
nothing, controllers restarting lose no workload, drift is found and undone, secrets stay secret.

One cluster (30443/21790, or GPU_PLATFORM_FAULTS_APISERVER_PORT / _ETCD_PORT) for the module, two stacks on
it in turn (tests/faults/configs.py): the throwaway `local` config without checkpoints, then a synthetic
checkpointed stack. The shared fault logic (kill at a seeded step, recovery, inventory of the cluster against
the state) is tests/faults/scenarios.py over the runbook's localcluster/recovery.py, which bench/faults.py
runs with the full trial counts; here each fault runs a couple of times.

The tests run in file order: each leaves its stack converged for the next.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from gpu_platform import conventions as cv
from gpu_platform.jobs import JobRequest, job
from gpu_platform.plan import build_plan
from gpu_platform.spec import load_platform
from localcluster import recovery as R
from tests.conftest import ROOT
from tests.faults import scenarios as F
from tests.faults.configs import SECRET_KEY, ckpt_configs, kubectl_of, local_configs, make_stack
from tests.live.conftest import wait_for
from tests.realtools import CLUSTER_TOOLS, ENGINE_TOOLS, TIMINGS, Cluster, Engine, new_engine, require, running_cluster

PORTS = (os.environ.get("GPU_PLATFORM_FAULTS_APISERVER_PORT", "30443"), os.environ.get("GPU_PLATFORM_FAULTS_ETCD_PORT", "21790"))
SEED = int(os.environ.get("GPU_PLATFORM_FAULTS_SEED", "17"))
KILL_TRIALS = int(os.environ.get("GPU_PLATFORM_FAULTS_TRIALS", "2"))
CKPT_TEAMS = int(os.environ.get("GPU_PLATFORM_FAULTS_TEAMS", "3"))  # bench.faults: 16-20
# The CLI must give up on a stopped API server within this (measured: see TIMINGS and bench/faults.py).
OUTAGE_BOUND_S = 120


@dataclass
class Rig:
    cluster: Cluster
    engine: Engine
    tmp: Path
    local: F.StackRig
    ckpt: F.StackRig
    token: str
    kubeconfig: str


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    require(CLUSTER_TOOLS + ENGINE_TOOLS)
    tmp = tmp_path_factory.mktemp("faults")
    engine = new_engine(tmp / "backend")
    with running_cluster(tmp / "cluster", *PORTS, "faults") as cluster:
        # A worker kubeconfig as MultiKueue takes it; its token is what the secrets test greps for.
        token = f"faults-{secrets.token_hex(16)}"
        kubeconfig = yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "w",
            "clusters": [{"name": "w", "cluster": {"server": "https://127.0.0.1:9"}}],
            "users": [{"name": "w", "user": {"token": token}}],
            "contexts": [{"name": "w", "context": {"cluster": "w", "user": "w"}}]})
        local = make_stack(engine, cluster, tmp, "faults-local", local_configs(), skip_checkpoints=True)
        ckpt = make_stack(engine, cluster, tmp, "faults-ckpt", ckpt_configs(CKPT_TEAMS), skip_checkpoints=False,
                      secret_config={SECRET_KEY: kubeconfig})
        # The value from stdin: never on a command line, never in a file of the checkout.
        ckpt.pulumi("config", "set", "--secret", SECRET_KEY, *ckpt.stack_args, input=kubeconfig)
        kinds = R.kinds_of(set().union(*local.declared.values(), *ckpt.declared.values()))
        baseline = set(R.cluster_objects(kubectl_of(cluster), kinds))   # local-cluster's kueue-system namespace
        local.baseline = ckpt.baseline = baseline
        yield Rig(cluster, engine, tmp, local, ckpt, token, kubeconfig)


def _assert_converged(stack: F.StackRig, label: str, what: str) -> None:
    inv = stack.inventory(label)
    assert inv.converged, f"{what}: {inv}"
    assert inv.objects == len(stack.declared[label]), f"{what}: {inv}"
    assert stack.no_changes(), f"{what}: `pulumi preview --expect-no-changes` reports changes"


def _kill_trials(stack: F.StackRig, label: str) -> list[F.Trial]:
    """KILL_TRIALS killed `up`s alternating between A and B, the last to B; each recovered and converged."""
    targets = ["B" if (KILL_TRIALS - i) % 2 else "A" for i in range(KILL_TRIALS)]
    start = "A" if targets[0] == "B" else "B"
    started = time.perf_counter()
    stack.up(start)
    TIMINGS[f"faults: {label} up (A, {len(stack.declared['A'])} objects)"] = round(time.perf_counter() - started, 1)
    changes = len(stack.declared["A"] ^ stack.declared["B"])
    trials = []
    for i, (step, jitter) in enumerate(F.seeded_kill_points(SEED, KILL_TRIALS, changes)):
        t = stack.trial(targets[i], step, jitter)
        trials.append(t)
        TIMINGS[f"faults: {label} kill {i + 1}: recovery + converging up"] = round(t.recovery.seconds + t.converge_s, 1)
        assert not t.kill.finished_first, f"trial {i}: the update ended before step {step}: {t.line()}"
        assert t.recovery.lock_refused, f"trial {i}: the `up` after the kill was not refused for the lock: {t.line()}"
        assert t.final.converged, f"trial {i}: {t.line()}\n{t.final}"
        assert t.final.objects == len(stack.declared[targets[i]]), t.line()
        assert t.no_changes, t.line()
    # Objects adopted after the kill (created by the dead run) take a later change: no field conflict.
    stack.up("B2")
    _assert_converged(stack, "B2", "a change of the objects adopted after a kill")
    return trials


def test_killed_up_of_the_throwaway_local_stack_converges(rig: Rig) -> None:
    """No checkpoints: after SIGKILL the state is the previous update's, the objects created since are in the
    cluster only (orphans, counted), and the documented recovery + `up` adopts them."""
    trials = _kill_trials(rig.local, "local")
    assert any(t.after_kill.orphans or t.after_kill.missing for t in trials), \
        "the kills left nothing to recover: they did not land mid-update"
    assert all(t.recovery.pending_before == 0 for t in trials), "a stack without checkpoints has no pending operations"
    rig.local.up("A")


def test_controllers_restarting_lose_no_workload_and_keep_quota_usage(rig: Rig) -> None:
    """Jobs admitted and one pending on the local platform; Kueue, the scheduler and etcd restarted in turn."""
    c = rig.cluster
    plan = build_plan(load_platform(rig.local.configs["A"], "us-east-1"), "us-east-1")
    objs = []
    for i in range(4):   # vision may hold 12 train GPUs (8 + borrowing bounded by nlp's lendingLimit 4): 3 of 4 fit
        objs += job(plan, JobRequest(team="vision", pool="train", gpus=4, name=f"restart-{i}", duration="1h"))
    # one time-sliced replica: the template refuses more per container (the device plugin would)
    objs += job(plan, JobRequest(team="serving", pool="infer", gpus=1, name="restart-infer", duration="1h"))
    c.kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    kubectl = kubectl_of(c)

    pools = plan.pools_by_name
    # What the ClusterQueues must show as used once Kueue has written their status (it does so after admitting:
    # a snapshot taken before that would compare a stale zero with the restarted Kueue's true figures).
    expected = {("vision", "train", pools["train"].resource_name, str(3 * 4)),
                ("serving", "infer", pools["infer"].resource_name, "1")}

    def settled() -> dict | None:
        s = F.queue_snapshot(kubectl)
        shown = {(q, f, r, t) for q, rows in s["usage"].items() for f, r, t in rows}
        return s if len(s["workloads"]) == 5 and sum(s["workloads"].values()) == 4 and expected <= shown else None

    try:
        wait_for(settled, 90, "four of five jobs admitted and the ClusterQueues' usage showing them")
        for component in ("kueue", "kube-scheduler", "etcd"):
            r = F.restart_component(component, c.driver, kubectl)
            TIMINGS[f"faults: restart {component}"] = r.seconds
            assert r.lost == [], f"{component}: workloads lost {r.lost}"
            assert r.unadmitted == [], f"{component}: admitted workloads lost their admission {r.unadmitted}"
            assert r.newly_admitted == [], f"{component}: a pending workload admitted with nothing freed {r.newly_admitted}"
            assert r.recreated == [], f"{component}: workloads recreated {r.recreated}"
            assert r.usage_equal, f"{component}: ClusterQueue usage changed (and did not come back within 60 s): {r.usage_changes}"
        pods = c.get("pods", "-n", "vision")["items"]
        assert sum(1 for p in pods if p["status"].get("phase") == "Running") == 3
    finally:
        # Whatever happened above, the jobs go: the later tests destroy and redeploy these namespaces.
        for team in ("vision", "serving"):
            c.kubectl("delete", "jobs", "--all", "-n", team, "--wait=true", "--timeout=60s", check=False)


def test_drift_is_shown_exactly_by_a_refreshing_preview_and_undone_by_up(rig: Rig) -> None:
    c, stack = rig.cluster, rig.local
    plan = build_plan(load_platform(stack.configs["A"], "us-east-1"), "us-east-1")
    team = plan.teams[0]
    ns, other_ns = team.namespaces[0], plan.teams[1].namespaces[0]
    quota_path = "/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota"
    declared_quota = c.get("clusterqueue.kueue.x-k8s.io", team.cluster_queue)["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"]
    c.kubectl("patch", "clusterqueue.kueue.x-k8s.io", team.cluster_queue, "--type=json",
              "-p", json.dumps([{"op": "replace", "path": quota_path, "value": "99"}]))
    c.kubectl("delete", "networkpolicy", cv.NETWORK_POLICY_DEFAULT_DENY, "-n", ns)
    c.kubectl("label", "namespace", other_ns, f"{cv.TEAM}=someone-else", "--overwrite")
    started = time.perf_counter()
    preview = stack.pulumi("preview", "--refresh", "--json", *stack.stack_args)
    TIMINGS["faults: drift preview --refresh (local)"] = round(time.perf_counter() - started, 1)
    changes = {urn.rsplit("::", 1)[1]: op for urn, op in F.planned_changes(preview.stdout).items()}
    assert changes == {f"kueue-cq-{team.cluster_queue}": "update", f"tenant-{ns}-{cv.NETWORK_POLICY_DEFAULT_DENY}": "create",
                       f"tenant-{other_ns}": "update"}, changes
    stack.pulumi("up", "--refresh", "--yes", "--skip-preview", *stack.stack_args)
    cq = c.get("clusterqueue.kueue.x-k8s.io", team.cluster_queue)
    assert cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == declared_quota
    assert c.get("networkpolicy", cv.NETWORK_POLICY_DEFAULT_DENY, "-n", ns)["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert c.get("namespace", other_ns)["metadata"]["labels"][cv.TEAM] == plan.teams[1].name
    assert stack.no_changes(refresh=True), "drift left after `up --refresh`"
    _assert_converged(stack, "A", "after undoing the drift")


def test_destroy_of_the_local_stack_leaves_no_platform_object(rig: Rig) -> None:
    """And frees the cluster for the checkpointed stack (they share the platform's cluster-scoped objects)."""
    stack = rig.local
    stack.pulumi("destroy", "--yes", "--skip-preview", *stack.stack_args)
    kinds = R.kinds_of(set().union(*stack.declared.values()))
    left = set(R.cluster_objects(stack.kubectl, kinds)) - stack.baseline
    assert left == set(), sorted(left)[:10]


def test_killed_up_of_a_checkpointed_stack_converges(rig: Rig) -> None:
    """Checkpoints: the state records every step; an operation in flight at the kill is a pending operation,
    which the documented recovery clears (`pulumi refresh --clear-pending-creates`)."""
    trials = _kill_trials(rig.ckpt, "checkpointed")
    assert all(t.final.pending == 0 for t in trials)


def test_two_ups_at_once_one_proceeds_the_other_is_refused_with_the_lock_named(rig: Rig) -> None:
    stack = rig.ckpt
    r = F.concurrent_ups(stack, "A")
    assert r.first_rc == 0
    assert r.second_rc != 0
    assert "the stack is currently locked by 1 lock(s)" in r.second_message, r.second_message
    assert r.lock_named, "the refusal does not name the running update's lock (its pid)"
    TIMINGS["faults: second concurrent up refused after"] = r.second_s
    exported = stack.export()
    assert R.pending_operations(exported) == []
    _assert_converged(stack, "A", "after two concurrent ups")


def test_api_server_stopped_mid_up_fails_fast_naming_the_cluster_and_the_next_up_converges(rig: Rig) -> None:
    c = rig.cluster
    server = yaml.safe_load(c.kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
    o = F.apiserver_outage(rig.ckpt, "B", c.driver, timeout=OUTAGE_BOUND_S + 60)
    TIMINGS["faults: API server stopped -> up fails"] = o.detect_s
    TIMINGS["faults: cluster back + converging up"] = round(o.restart_s + o.converge_s, 1)
    assert o.running_at_stop, f"the `up` ended before the API server stopped: {o.message}"
    assert o.rc != 0
    assert o.detect_s <= OUTAGE_BOUND_S, f"the CLI took {o.detect_s}s to fail"
    assert o.names_cluster, f"no error names {server}: {o.message}"
    assert o.final.converged, str(o.final)
    assert o.no_changes


def test_secrets_never_appear_in_plaintext(rig: Rig) -> None:
    """The worker kubeconfig (a secret config value) in the state, the render output, every CLI output of
    this module (kills included), the preview the pull-request comment shows and the plan comment."""
    stack = rig.ckpt
    if not stack.current:   # run alone (-k secrets): deploy it first
        stack.up("A")
    # The token, and the kubeconfig as the Secret's data holds it: base64 of the value `config set` stored
    # (read from stdin, without its final newline).
    needles = [rig.token, base64.b64encode(rig.kubeconfig.rstrip("\n").encode()).decode()]
    # Positive controls: the value did flow through, into the cluster's Secret and the (encrypted) state.
    secret = rig.cluster.get("secret", cv.multikueue_secret_name("worker-1"), "-n", cv.KUEUE_NAMESPACE)
    assert secret["data"][cv.MULTIKUEUE_KUBECONFIG_KEY] == needles[1]
    shown = stack.pulumi("stack", "export", "--show-secrets", "--stack", stack.stack)
    assert any(s in shown.stdout for s in needles), "the state does not hold the value at all"
    stack.outputs.pop()   # that one shows secrets on purpose
    out = rig.tmp / "render"
    env = {k: v for k, v in stack.env.items() if not k.startswith("PULUMI_")}
    render = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-m", "platform_cli", "render", "--stack",
                             str(stack.config_file), "--out", str(out)], cwd=ROOT, env=env, capture_output=True, text=True)
    assert render.returncode == 0, render.stderr[-2000:]
    plan_md = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-m", "platform_cli", "plan", "--stack",
                              str(stack.config_file), "--format", "markdown"], cwd=ROOT, env=env, capture_output=True,
                             text=True, check=True).stdout
    preview = stack.pulumi("preview", "--diff", *stack.stack_args)
    places = {
        "the state (stack export)": json.dumps(stack.export()),
        "the stack config file": stack.config_file.read_text(),
        "the render output": "\n".join(p.read_text() for p in out.rglob("*") if p.is_file()) + render.stdout + render.stderr,
        "the plan comment": plan_md,
        "the preview comment (preview --diff)": preview.stdout + preview.stderr,
        "the CLI's output (up, kills, refresh, previews)": "\n".join(stack.outputs),
    }
    assert any(p.is_file() for p in out.rglob("*.yaml")), "render wrote no manifests"
    assert "secure:" in places["the stack config file"]
    for where, text in places.items():
        for s in needles:
            assert s not in text, f"the worker kubeconfig's token appears in {where}"
