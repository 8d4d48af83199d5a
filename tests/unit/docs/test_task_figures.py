"""The figures the task pages quote, read from the code that decides them (world: the scripts, the spec, the
local stack's plan and the pages on disk).

A reader of a task page acts on its numbers: which ports must be free, how long to wait for a node, how much a
team may hold before its job waits. Each number below is read from its one source and the page's sentence
must carry it.
"""

from __future__ import annotations

import functools

from gpu_platform.kueue_config import WAIT_FOR_PODS_READY_TIMEOUT
from localcluster.autoscaler import DEFAULT_SCALE_DOWN_DELAY, DEFAULT_SCALE_UP_DELAY
from localcluster.ports import Ports
from tests.conftest import ROOT, plan_of, spec_of

TASKS = ROOT / "docs" / "tasks"


@functools.cache
def page(name: str) -> str:
    return " ".join((TASKS / name).read_text().split())


def script_defaults() -> dict[str, int]:
    """The local cluster's default ports, from the driver's ports (localcluster/ports.py)."""
    p = Ports()
    offsets = [getattr(p, name) - p.apiserver for name, attr in vars(Ports).items()
               if isinstance(attr, property) and isinstance(getattr(p, name), int) and getattr(p, name) > p.apiserver
               and getattr(p, name) - p.apiserver < 100]
    return {"APISERVER_PORT": p.apiserver, "ETCD_PORT": p.etcd, "LAST_OFFSET": max(offsets), "PEER": p.etcd_peer}


def test_try_locally_names_the_ports_the_script_takes() -> None:
    d = script_defaults()
    assert d == {"APISERVER_PORT": 16443, "ETCD_PORT": 23790, "LAST_OFFSET": 23, "PEER": 23800}
    assert (f"`127.0.0.1:{d['APISERVER_PORT']}` and the {d['LAST_OFFSET']} ports after it, and etcd "
            f"`127.0.0.1:{d['ETCD_PORT']}` (peers on {d['PEER']})") in page("try-locally.md")


def test_try_locally_says_when_the_notebooks_node_comes_and_goes() -> None:
    assert (DEFAULT_SCALE_UP_DELAY, DEFAULT_SCALE_DOWN_DELAY) == ("5s", "30s")
    text = page("try-locally.md")
    assert "(about 5 s after the pod waits); 30 s after the job ends the node is gone again" in text


def test_try_locally_says_how_each_local_pool_starts() -> None:
    pools = {p.name: p for p in spec_of("local").pools}
    assert (pools["train"].capacity.min, pools["train"].capacity.max) == (0, 2)
    assert (pools["infer"].capacity.min, pools["notebooks"].capacity.min) == (1, 0)
    text = page("try-locally.md")
    assert "(`capacity.max`, 2 nodes) although its `capacity.min` is 0" in text
    assert "`infer` starts at its `capacity.min` of 1 and `notebooks` at 0" in text


def test_why_wait_states_visions_quota_as_the_plan_has_it() -> None:
    (train,) = [q for t in plan_of("local").teams if t.name == "vision" for q in t.quotas if q.pool == "train"]
    (nlp,) = [q for t in plan_of("local").teams if t.name == "nlp" for q in t.quotas if q.pool == "train"]
    assert (train.nominal, train.borrowing, nlp.nominal, nlp.lending, train.reach.units) == (8, 8, 8, 4, 12)
    text = page("why-does-my-job-wait.md")
    assert ("holds 8 GPUs on pool `train` and may borrow 8 more in cohort `research`, where `nlp` lends at most 4 "
            "of its 8: vision can hold at most 12") in text
    assert "Three fit in the 12 GPUs vision can hold; the fourth waits" in text
    # four 4-GPU jobs: three fit, the fourth is 4 short
    assert 3 * 4 <= train.reach.units < 4 * 4


def test_why_wait_gives_kueues_pods_ready_timeout() -> None:
    assert WAIT_FOR_PODS_READY_TIMEOUT == "30m"
    assert "within `waitForPodsReady.timeout` (30 minutes)" in page("why-does-my-job-wait.md")


def test_why_wait_names_the_admission_checks_the_platform_creates() -> None:
    """The check a reader looks for in `status.admissionChecks[]` is named as the stack names it (the page once
    said `provisioningRequest`; the AdmissionCheck is `provisioning-request`)."""
    from gpu_platform import conventions as cv

    assert (cv.PROVISIONING_CHECK_NAME, cv.MULTIKUEUE_NAME) == ("provisioning-request", "multikueue")
    text = page("why-does-my-job-wait.md")
    assert f"`status.admissionChecks[]` with `{cv.PROVISIONING_CHECK_NAME}` in state `Pending`" in text
    assert f"`status.admissionChecks[]` with `{cv.MULTIKUEUE_NAME}` in state `Pending`" in text
