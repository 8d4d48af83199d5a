"""The real node, live: a tenant's job runs as a real container under the real kubelet (built from k8s.io/kubernetes
at the API server's version, with Debian's containerd and runc, CNI bridge networking and the project's GPU device
plugin: localcluster/realnode), beside the KWOK-simulated nodes, admitted by Kueue and placed by the scheduler
exactly as on EKS.

Its own cluster (tests/live/real_node_stack.yaml: a pool whose one-unit pod fits a small machine's real node, and
LOCAL_CLUSTER_REAL_NODE naming it), started and stopped by this module. It needs root (mounts, cgroups, links);
under CI a missing tool or root fails the test, elsewhere it skips.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from gpu_platform import conventions as cv
from gpu_platform.jobs import JobRequest, job
from gpu_platform.plan import Plan
from gpu_platform.stack_files import load_plan
from localcluster import realnode
from tests.live.conftest import condition, is_true, wait_for
from tests.realtools import (
    CLUSTER_TOOLS, ENGINE_TOOLS, TIMINGS, Cluster, new_engine, require, run, running_cluster, start_cluster,
    stop_cluster,
)

STACK = "realnode"
STACK_FILE = Path(__file__).with_name("real_node_stack.yaml")
POOL, TEAM = "small", "zeta"
NODE = f"{POOL}-real"
# Below the kernel's ephemeral range (net.ipv4.ip_local_port_range, 32768-60999 by default), like every test
# cluster's: a port in it can be any client connection's source port, and a component that binds every interface
# (Karpenter, API server +7) then fails with "address already in use" (CI at 1d79d03: the crash test's restart).
APISERVER_PORT = os.environ.get("GPU_PLATFORM_REAL_NODE_APISERVER_PORT", "31443")
ETCD_PORT = os.environ.get("GPU_PLATFORM_REAL_NODE_ETCD_PORT", "22390")
REAL_NODE_TOOLS = ("kubelet", "gpu-device-plugin", "containerd", "ctr")


class RealNodeCluster:
    def __init__(self, cluster: Cluster, plan: Plan, stack_file: Path, tenant: Path) -> None:
        self.cluster, self.plan, self.stack_file, self.tenant = cluster, plan, stack_file, tenant

    def kubectl(self, *args: str, tenant: bool = False, check: bool = True,
                input: str | None = None) -> subprocess.CompletedProcess[str]:
        return self.cluster.kubectl(*args, kubeconfig=self.tenant if tenant else None, check=check, input=input)

    def get(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealNodeCluster]:
    require(CLUSTER_TOOLS + ENGINE_TOOLS + REAL_NODE_TOOLS)
    if os.geteuid() != 0:
        message = "the real node needs root (mounts, cgroups, network links)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    tmp = tmp_path_factory.mktemp("realnode")
    stack_file = tmp / f"Pulumi.{STACK}.yaml"
    shutil.copy(STACK_FILE, stack_file)
    extra = {"LOCAL_CLUSTER_STACK": str(stack_file), "LOCAL_CLUSTER_REAL_NODE": POOL}
    with running_cluster(tmp / "cluster", APISERVER_PORT, ETCD_PORT, "real node", extra) as cluster:
        engine = new_engine(tmp / "backend")
        engine.ensure_stack(STACK, stack_file)
        engine.timed("pulumi up (real node stack)", "up", "--yes", "--stack", STACK, "--config-file", str(stack_file),
                     extra_env={"KUBECONFIG": str(cluster.kubeconfig)})
        plan = load_plan(None, str(stack_file))[1]
        team = next(t for t in plan.teams if t.name == TEAM)
        rc = RealNodeCluster(cluster, plan, stack_file, cluster.user(f"{TEAM}-member", team.member_groups[0]))
        wait_for(lambda: all(is_true(cq, "Active") for cq in rc.get("clusterqueues.kueue.x-k8s.io")["items"]),
                 60, "every ClusterQueue Active")
        yield rc


def test_kubectl_get_nodes_tells_the_real_node_from_the_simulated_ones(real: RealNodeCluster) -> None:
    nodes = {n["metadata"]["name"]: n for n in real.get("nodes")["items"]}
    node = nodes[NODE]
    assert node["metadata"]["labels"][realnode.NODE_KIND_LABEL] == "real"
    assert node["metadata"]["labels"][cv.POOL] == POOL
    assert cv.KWOK_NODE_ANNOTATION not in node["metadata"].get("annotations", {})
    assert node["status"]["nodeInfo"]["containerRuntimeVersion"].startswith("containerd://1.")
    assert node["status"]["nodeInfo"]["kubeletVersion"] == "v1.33.13"
    # The pool's taints, as its simulated nodes carry them; its GPU resource from the device plugin.
    assert {(t["key"], t["effect"]) for t in node["spec"]["taints"]} == {
        ("nvidia.com/gpu", "NoSchedule"), ("gpu-platform.io/workload", "NoSchedule")}
    assert node["status"]["allocatable"]["nvidia.com/gpu.shared"] == "4"
    simulated = [n for name, n in nodes.items() if name != NODE]
    assert simulated and all(realnode.NODE_KIND_LABEL not in n["metadata"].get("labels", {}) for n in simulated)
    assert all(n["metadata"]["annotations"].get(cv.KWOK_NODE_ANNOTATION) == cv.KWOK_NODE_ANNOTATION_VALUE
               for n in simulated)


def test_the_real_kubelets_allocatable_is_its_capacity_less_the_plans_reserves(real: RealNodeCluster) -> None:
    status = real.get("node", NODE)["status"]
    cpu_millis = int(status["capacity"]["cpu"]) * 1000
    reserves = realnode.kubelet_reserves(real.plan.pools_by_name[POOL], cpu_millis // 1000)
    # kube-reserved 70m (6% of the first core, 1% of the second: the EKS AMI's ranges), the 1000m daemonset budget
    assert f"{cpu_millis - 70 - 1000}m" == status["allocatable"]["cpu"]
    # kube-reserved 11 x 58 (a g6.xlarge's ENI max pods: 4 ENIs x 14 addresses + 2) + 255 = 893 MiB, the 2048 MiB
    # daemonset budget and the 100 MiB eviction threshold; the kubelet counts in KiB.
    assert reserves.kube_memory_mib == 893
    allocatable_kib = int(status["allocatable"]["memory"].removesuffix("Ki"))
    capacity_kib = int(status["capacity"]["memory"].removesuffix("Ki"))
    assert capacity_kib - allocatable_kib == (893 + 2048 + 100) * 1024


def test_a_tenants_job_runs_on_the_real_node_shows_its_log_and_completes(real: RealNodeCluster) -> None:
    job = run([sys.executable, "-m", "platform_cli", "job", "--stack", str(real.stack_file), "--team", TEAM,
               "--pool", POOL, "--gpus", "1", "--duration", "20s", "--name", "first"], real.cluster.env).stdout
    submitted = time.monotonic()
    real.kubectl("create", "-f", "-", tenant=True, input=job)
    ns = TEAM

    def running_pod() -> dict[str, Any] | None:
        pods = real.get("pods", "-n", ns, "-l", "batch.kubernetes.io/job-name=first")["items"]
        return next((p for p in pods if p["status"].get("phase") == "Running"), None)

    pod = wait_for(running_pod, 120, "the job's pod Running")
    TIMINGS["real node: submission to Running (s)"] = round(time.monotonic() - submitted, 1)
    name = pod["metadata"]["name"]
    assert pod["spec"]["nodeName"] == NODE
    assert pod["status"]["podIP"].startswith("10.244.0.")
    state = pod["status"]["containerStatuses"][0]
    assert state["ready"] and state["image"] == "docker.io/library/busybox:1.37"
    # The kubelet's cAdvisor names the pod's network series (it reaches containerd at the node's socket): what a
    # Prometheus scrapes from /metrics/cadvisor on EKS, and acceptance step 6 reads.
    def network_series() -> list[str]:
        out = real.kubectl("get", "--raw", f"/api/v1/nodes/{NODE}/proxy/metrics/cadvisor").stdout
        return [line for line in out.splitlines() if line.startswith("container_network_receive_bytes_total{")
                and f'pod="{name}"' in line and f'namespace="{ns}"' in line]

    assert wait_for(network_series, 15, "the pod's network series in the kubelet's cAdvisor metrics")
    # The device plugin's Allocate: the container sees the one device the kubelet gave it.
    env = real.kubectl("exec", "-n", ns, name, "--", "sh", "-c", "echo $NVIDIA_VISIBLE_DEVICES").stdout.split()
    assert len(env) == 1 and env[0].startswith(f"{NODE}-gpu-")
    # A line on the container's own output, then `kubectl logs` as the tenant: API server -> kubelet -> log file.
    real.kubectl("exec", "-n", ns, name, "--", "sh", "-c", "echo hello from the real node >/proc/1/fd/1")
    logs = wait_for(lambda: real.kubectl("logs", "-n", ns, name, tenant=True).stdout, 20, "the pod's log line")
    assert logs.strip() == "hello from the real node"

    def finished() -> dict[str, Any] | None:
        j = real.get("job", "-n", ns, "first")
        return j if is_true(j, "Complete") or is_true(j, "Failed") else None

    done = wait_for(finished, 90, "the Job finished")
    assert is_true(done, "Complete"), condition(done, "Failed")
    ended = real.get("pod", "-n", ns, name)
    assert ended["status"]["phase"] == "Succeeded"
    assert ended["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    # Kueue saw it end: the Workload is Finished and the team's quota is free again.
    wl = wait_for(lambda: next((w for w in real.get("workloads.kueue.x-k8s.io", "-n", ns)["items"]
                                if is_true(w, "Finished")), None), 30, "the Workload Finished")
    assert condition(wl, "Finished")["reason"] == "Succeeded"


# ---------------------------------------------------------------------------------------------------
# Process semantics with the job template's own objects (issue: what happens on preemption, on the container's own
# SIGTERM, on a crash): the real Job controller, Kueue and kubelet decide, a real process exits.

def _job(real: RealNodeCluster, name: str, *, priority: str, command: list[str] | None = None,
         duration: str = "10m") -> list[dict[str, Any]]:
    objs = job(real.plan, JobRequest(team=TEAM, pool=POOL, gpus=1, priority=priority, duration=duration, name=name))
    if command is not None:
        objs[0]["spec"]["template"]["spec"]["containers"][0]["command"] = command
    return objs


def _create(real: RealNodeCluster, objs: list[dict[str, Any]]) -> None:
    real.kubectl("create", "-f", "-", tenant=True, input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))


def _pods(real: RealNodeCluster, name: str) -> list[dict[str, Any]]:
    return real.get("pods", "-n", TEAM, "-l", f"batch.kubernetes.io/job-name={name}")["items"]


def _workload(real: RealNodeCluster, name: str) -> dict[str, Any] | None:
    return next((w for w in real.get("workloads.kueue.x-k8s.io", "-n", TEAM)["items"]
                 if any(o.get("name") == name for o in w["metadata"].get("ownerReferences", []))), None)


def _delete_and_free(real: RealNodeCluster, *names: str) -> None:
    for name in names:
        real.kubectl("delete", "job", "-n", TEAM, name, "--ignore-not-found", "--wait=true", "--timeout=90s")
    wait_for(lambda: not [p for name in names for p in _pods(real, name)], 90, "the jobs' pods gone")


def test_a_preempted_job_whose_container_ignores_sigterm_is_killed_after_the_grace_period_and_requeued(
        real: RealNodeCluster) -> None:
    """The template's own stand-in (`sleep` as the container's PID 1, which the kernel never lets SIGTERM end) is
    preempted by a higher priority: it outlives the 5 s grace period and is SIGKILLed (exit 137). The Job must be
    requeued, not failed (a FailJob rule on 137 used to fail it for good), and run again once the preemptor is done."""
    _create(real, _job(real, "low", priority="development"))
    first = wait_for(lambda: next((p for p in _pods(real, "low") if p["status"].get("phase") == "Running"), None),
                     120, "the development job Running on the real node")
    assert first["spec"]["nodeName"] == NODE
    assert first["spec"]["terminationGracePeriodSeconds"] == 5
    _create(real, _job(real, "high", priority="production-inference", duration="15s"))
    deleting = wait_for(lambda: next((p for p in _pods(real, "low") if p["metadata"].get("deletionTimestamp")), None),
                        60, "the development pod being stopped")
    stopped = time.monotonic()
    wait_for(lambda: first["metadata"]["uid"] not in {p["metadata"]["uid"] for p in _pods(real, "low")}, 60,
             "the development pod gone")
    TIMINGS["real node: preemption to the pod gone (s)"] = round(time.monotonic() - stopped, 1)
    # SIGTERM was ignored: the pod went only when the kubelet killed it, at the end of the grace period.
    assert time.monotonic() - stopped >= 4.0, deleting["metadata"]["deletionTimestamp"]
    wl = _workload(real, "low")
    evicted = condition(wl, "Evicted")
    assert evicted is not None and evicted["reason"] == "Preempted", wl["status"]
    low = real.get("job", "-n", TEAM, "low")
    assert low["spec"]["suspend"] is True
    assert not is_true(low, "Failed"), condition(low, "Failed")
    # The preemptor runs and finishes; the preempted job is admitted again and runs from the start.
    wait_for(lambda: is_true(real.get("job", "-n", TEAM, "high"), "Complete"), 120, "the preemptor Complete")
    again = wait_for(lambda: next((p for p in _pods(real, "low") if p["status"].get("phase") == "Running"), None),
                     120, "the development job Running again")
    assert again["metadata"]["uid"] != first["metadata"]["uid"] and again["spec"]["nodeName"] == NODE
    assert not is_true(real.get("job", "-n", TEAM, "low"), "Failed")
    _delete_and_free(real, "low", "high")


def test_a_container_that_keeps_dying_of_its_own_sigterm_stops_after_the_backoff_limit(real: RealNodeCluster) -> None:
    """A process of the container killed by SIGTERM, its exit status the container's (143), every try: counted
    against backoffLimit 3, so four pods and then the Job fails, saying why (it used to be ignored and recreated
    forever while it held its GPU)."""
    own_sigterm = ["sh", "-c", "sleep 600 & kill -TERM $!; wait $!"]
    _create(real, _job(real, "sigterm", priority="development", command=own_sigterm))
    failed = wait_for(lambda: (lambda j: j if is_true(j, "Failed") else None)(real.get("job", "-n", TEAM, "sigterm")),
                      240, "the job Failed")
    assert condition(failed, "Failed")["reason"] == "BackoffLimitExceeded", failed["status"]
    assert failed["status"].get("failed") == 4
    codes = [p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] for p in _pods(real, "sigterm")]
    assert codes == [143] * 4
    _delete_and_free(real, "sigterm")


def test_a_container_that_exits_1_fails_the_job_at_once(real: RealNodeCluster) -> None:
    _create(real, _job(real, "crash", priority="development", command=["sh", "-c", "echo broken; exit 1"]))
    failed = wait_for(lambda: (lambda j: j if is_true(j, "Failed") else None)(real.get("job", "-n", TEAM, "crash")),
                      120, "the job Failed")
    assert condition(failed, "Failed")["reason"] == "PodFailurePolicy", failed["status"]
    (pod,) = _pods(real, "crash")
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 1
    wl = wait_for(lambda: (lambda w: w if w and is_true(w, "Finished") else None)(_workload(real, "crash")), 30,
                  "the Workload Finished")
    assert condition(wl, "Finished")["reason"] == "Failed"
    _delete_and_free(real, "crash")


def _finished(real: RealNodeCluster, name: str) -> dict[str, Any] | None:
    j = real.get("job", "-n", TEAM, name)
    return j if is_true(j, "Complete") or is_true(j, "Failed") else None


def test_an_emptydir_and_a_claim_keep_their_data_across_a_container_restart(real: RealNodeCluster) -> None:
    """Kubernetes' promise (concepts/storage/volumes, emptyDir: "a container crashing does not remove a Pod from a
    node. The data in an emptyDir volume is safe across container crashes"), kept by the real kubelet: the first run of
    the container writes a mark into an emptyDir and into a claimed volume and exits 1; the kubelet restarts it in the
    same pod (restartPolicy OnFailure) and the second run finds both marks. The claim's volume is a directory of this
    machine (a hostPath PersistentVolume bound by name, as a statically provisioned volume is), so the bytes are checked
    on the disk too."""
    host_dir = real.cluster.state / "realnode-volumes" / "keep"
    host_dir.mkdir(parents=True, exist_ok=True)
    host_dir.chmod(0o777)   # the restricted profile's container runs as 65534
    pv = f"{TEAM}-keep"
    real.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                 "persistentVolumeReclaimPolicy": "Retain", "storageClassName": cv.DEFAULT_STORAGE_CLASS,
                 "hostPath": {"path": str(host_dir), "type": "Directory"},
                 "claimRef": {"namespace": TEAM, "name": "keep"}}}))
    _create(real, [{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "keep", "namespace": TEAM},
                    "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": cv.DEFAULT_STORAGE_CLASS,
                             "volumeName": pv, "resources": {"requests": {"storage": "1Gi"}}}}])
    script = ('if [ -f /scratch/mark ] && [ -f /keep/mark ]; then echo "kept: $(cat /scratch/mark) $(cat /keep/mark)";'
              ' exit 0; fi; echo "$HOSTNAME" >/scratch/mark; echo "$HOSTNAME" >/keep/mark; echo "first run"; exit 1')
    objs = _job(real, "volumes", priority="development", command=["sh", "-c", script])
    pod = objs[0]["spec"]["template"]["spec"]
    # An in-place container restart needs restartPolicy OnFailure, which podFailurePolicy refuses (batch/v1): this
    # one Job leaves the template's failure policy out; its pod is otherwise the template's.
    del objs[0]["spec"]["podFailurePolicy"]
    pod["restartPolicy"] = "OnFailure"
    pod["volumes"] += [{"name": "scratch", "emptyDir": {}},
                       {"name": "keep", "persistentVolumeClaim": {"claimName": "keep"}}]
    pod["containers"][0]["volumeMounts"] += [{"name": "scratch", "mountPath": "/scratch"},
                                             {"name": "keep", "mountPath": "/keep"}]
    _create(real, objs)
    done = wait_for(lambda: _finished(real, "volumes"), 120, "the job finished")
    assert is_true(done, "Complete"), done["status"]
    (ended,) = _pods(real, "volumes")
    name = ended["metadata"]["name"]
    assert ended["spec"]["nodeName"] == NODE
    assert ended["status"]["containerStatuses"][0]["restartCount"] == 1
    # The second run's log. (Not the first run's with --previous: once the pod has ended, the kubelet's container
    # garbage collection keeps one dead container per pod, the last, and says "previous terminated container not
    # found", as a real run showed.)
    assert real.kubectl("logs", "-n", TEAM, name, tenant=True).stdout.strip() == f"kept: {name} {name}"
    assert (host_dir / "mark").read_text().strip() == name
    _delete_and_free(real, "volumes")
    real.kubectl("delete", "pvc", "-n", TEAM, "keep", "--wait=true", "--timeout=60s")
    real.kubectl("delete", "pv", pv, "--wait=true", "--timeout=60s")


def test_a_lost_nodes_job_gets_a_new_pod_without_failing(real: RealNodeCluster) -> None:
    """The real kubelet stops (the instance is lost) under a running job: the node lifecycle controller marks it
    NodeStatusUnknown once its heartbeats stop, the node object is deleted as EKS's cloud node controller (or
    Karpenter, or node repair) deletes a terminated instance's node, and the pod garbage collector fails the orphaned
    pod with a DisruptionTarget condition (kubernetes v1.33.13 pkg/controller/podgc/gc_controller.go gcOrphaned).
    The template's Ignore rule on that condition keeps it out of the Job's failure count: the Job makes a new pod,
    which runs once a node of the pool is back (the real node re-registering, or one Karpenter added), and the Job
    is never Failed. When the kubelet comes back it kills the lost pod's container, whose pod no longer exists.
    The multi-node gang's whole-workload eviction on a lost node is the KWOK test's (tests/live/test_node_failure.py):
    this machine has one real node."""
    _create(real, _job(real, "lost", priority="development"))
    first = wait_for(lambda: next((p for p in _pods(real, "lost") if p["status"].get("phase") == "Running"), None),
                     120, "the job Running on the real node")
    assert first["spec"]["nodeName"] == NODE
    layout = realnode.Layout(real.cluster.state)
    containers = realnode.cgroup_pids(realnode.cgroup_roots(layout))
    assert containers, "no container process in the node's cgroups"
    real.cluster.driver.stop_component("kubelet")
    try:
        ready = wait_for(lambda: (c := condition(real.get("node", NODE), "Ready")) and c["status"] == "Unknown" and c,
                         120, "the node's Ready condition Unknown")
        assert ready["reason"] == "NodeStatusUnknown", ready
        # The container outlives its kubelet: the node is lost to the cluster, not stopped.
        assert containers & realnode.cgroup_pids(realnode.cgroup_roots(layout))
        real.kubectl("delete", "node", NODE, "--wait=true", "--timeout=60s")
        wait_for(lambda: first["metadata"]["uid"] not in {p["metadata"]["uid"] for p in _pods(real, "lost")}, 120,
                 "the lost pod collected")
        job = real.get("job", "-n", TEAM, "lost")
        assert not is_true(job, "Failed") and job["status"].get("failed", 0) == 0, job["status"]
        wait_for(lambda: [p for p in _pods(real, "lost") if p["metadata"]["uid"] != first["metadata"]["uid"]], 60,
                 "the Job's new pod")
    finally:
        real.cluster.driver.restart("kubelet")
    wait_for(lambda: is_true(real.get("node", NODE), "Ready"), 120, "the real node Ready again")
    again = wait_for(lambda: next((p for p in _pods(real, "lost") if p["status"].get("phase") == "Running"), None),
                     120, "the job's new pod Running")
    assert again["metadata"]["uid"] != first["metadata"]["uid"]
    # The returning kubelet stopped the container of the pod that no longer exists.
    wait_for(lambda: not containers & realnode.cgroup_pids(realnode.cgroup_roots(layout)), 60,
             "the lost pod's container stopped")
    wl = _workload(real, "lost")
    assert is_true(wl, "Admitted") and not is_true(wl, "Evicted"), wl["status"]
    job = real.get("job", "-n", TEAM, "lost")
    assert not is_true(job, "Failed") and job["status"].get("failed", 0) == 0, job["status"]
    _delete_and_free(real, "lost")
    # A simulated node Karpenter may have added for the new pod while the real node was away goes with it.
    for n in real.get("nodes", "-l", f"{cv.POOL}={POOL}")["items"]:
        if n["metadata"]["name"] != NODE:
            real.kubectl("delete", "node", n["metadata"]["name"], "--wait=false")


def crash_with_a_running_job(real: RealNodeCluster, name: str) -> set[int]:
    """A job's container running on the real node, then every process of the cluster killed at once (a machine's
    OOM killer, kill -9, a CI job's timeout): runc's containers and containerd's shims outlive them by design,
    with their mounts, network namespaces and cgroups. The container processes that survived."""
    layout = realnode.Layout(real.cluster.state)
    job = run([sys.executable, "-m", "platform_cli", "job", "--stack", str(real.stack_file), "--team", TEAM,
               "--pool", POOL, "--gpus", "1", "--duration", "10m", "--name", name], real.cluster.env).stdout
    real.kubectl("create", "-f", "-", tenant=True, input=job)
    wait_for(lambda: [p for p in real.get("pods", "-n", TEAM, "-l", f"batch.kubernetes.io/job-name={name}")["items"]
                      if p["status"].get("phase") == "Running"], 120, "the job's pod Running")
    before = realnode.cgroup_pids(realnode.cgroup_roots(layout))
    assert before, "no container process in the node's cgroups"
    status = real.cluster.driver.script("status", check=False).stdout
    pids = [int(line.rsplit("pid ", 1)[1].rstrip(")")) for line in status.splitlines() if "(pid " in line]
    assert len(pids) >= 10
    for pid in pids:
        os.kill(pid, 9)
    wait_for(lambda: all(not Path(f"/proc/{p}").exists() or "Z" in Path(f"/proc/{p}/stat").read_text().split()[2]
                         for p in pids), 10, "the cluster's processes gone")
    assert before & realnode.cgroup_pids(realnode.cgroup_roots(layout)), "the containers died with the cluster"
    assert any(m.startswith(f"{layout.dir}/") for m in realnode.mountpoints())
    return before


def bridges() -> list[str]:
    out = subprocess.run(["ip", "-o", "link", "show", "type", "bridge"], capture_output=True, text=True).stdout
    return [line.split(": ")[1].split("@")[0] for line in out.splitlines()]


def test_a_start_after_a_crash_removes_what_the_crashed_node_left(real: RealNodeCluster) -> None:
    layout = realnode.Layout(real.cluster.state)
    before = crash_with_a_running_job(real, "crashed")
    real.cluster.driver.start(timeout=600)
    # The crashed node's containers are gone; the node is Ready again with its four units.
    assert not before & realnode.cgroup_pids(realnode.cgroup_roots(layout))
    node = real.get("node", NODE)
    assert is_true(node, "Ready") and node["status"]["allocatable"]["nvidia.com/gpu.shared"] == "4"
    assert bridges().count(layout.bridge) == 1
    real.kubectl("delete", "job", "-n", TEAM, "crashed", "--wait=false")


def test_a_start_in_another_directory_removes_what_crashed_nodes_of_other_directories_left(
        real: RealNodeCluster, tmp_path_factory: pytest.TempPathFactory) -> None:
    """CI at 3394714: a session killed with its real node running left the bridge (10.244.0.0/24) and the
    containers of a pytest directory nobody would start again, and every later start was refused ("the pod network
    10.244.0.0/24 overlaps a route of this machine (10.244.0.0/24 dev gprn07229ab2)")."""
    crashed = realnode.Layout(real.cluster.state)
    before = crash_with_a_running_job(real, "orphaned")
    # And one whose state directory is gone: only its bridge, with a route into the pod network, and a cgroup
    # with a process in it are left, under a node's names (localcluster/realnode/node.py Names).
    gone = realnode.Names("00dead00")
    assert subprocess.run(["ip", "link", "add", gone.bridge, "type", "bridge"]).returncode == 0
    assert subprocess.run(["ip", "addr", "add", "10.244.0.129/25", "dev", gone.bridge]).returncode == 0
    cgroup = Path("/sys/fs/cgroup/pids") / gone.cgroup_root.lstrip("/") / "pod"
    cgroup.mkdir(parents=True)
    # Not this process's child (a crashed node's containers are not the next start's either): init reaps it.
    sleeper = int(subprocess.run(["sh", "-c", "sleep 600 >/dev/null 2>&1 & echo $!"], capture_output=True, text=True,
                                 check=True).stdout)
    (cgroup / "cgroup.procs").write_text(str(sleeper))

    # A short directory: the kubelet's sockets under it must fit a Unix socket path (machine.preflight).
    other = start_cluster(tmp_path_factory.mktemp("other") / "cluster", APISERVER_PORT, ETCD_PORT, "real node (other directory)",
                          {"LOCAL_CLUSTER_STACK": str(real.stack_file), "LOCAL_CLUSTER_REAL_NODE": POOL})
    try:
        assert is_true(json.loads(other.kubectl("get", "node", NODE, "-o", "json").stdout), "Ready")
        assert not Path(f"/proc/{sleeper}").exists() or "Z" in Path(f"/proc/{sleeper}/stat").read_text().split()[2]
        assert not before & realnode.cgroup_pids(realnode.cgroup_roots(crashed))
        assert [m for m in realnode.mountpoints() if m.startswith(f"{crashed.dir}/")] == []
        assert crashed.bridge not in bridges() and gone.bridge not in bridges()
        assert realnode.cgroup_roots(gone) == [] and realnode.cgroup_roots(crashed) == []
        assert realnode.Layout(other.state).bridge in bridges()
    finally:
        stop_cluster(other)
    real.cluster.driver.start(timeout=600)   # the module's cluster again, for the tests after this one
    assert is_true(real.get("node", NODE), "Ready")


def test_stop_leaves_no_process_mount_link_or_cgroup(real: RealNodeCluster) -> None:
    state = real.cluster.state
    layout = realnode.Layout(state)
    assert real.cluster.driver.stop() == []
    mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    assert [m for m in mounts if m.startswith(f"{state}/")] == []
    assert subprocess.run(["ip", "link", "show", layout.bridge], capture_output=True).returncode != 0
    assert [p for p in Path("/sys/fs/cgroup").glob(f"*/{layout.cgroup_root.lstrip('/')}")] == []
    assert not (realnode.DEVICE_PLUGIN_DIR / layout.plugin_socket).exists()
    assert not (realnode.DEVICE_PLUGIN_DIR / realnode.DEVICE_CHECKPOINT).exists()

