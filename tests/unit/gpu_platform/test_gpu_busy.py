"""A pod's declared GPU busy fraction: the job template's --gpu-busy and a trace's `busy` column set the pod
annotation the live cluster's DCGM-shaped telemetry reads (localcluster/telemetry.py)."""

from __future__ import annotations

import json

import pytest

from gpu_platform.jobs import JobError, JobRequest, job
from gpu_platform.stack_files import load_plan
from platform_cli.cli import main
from simulator.submit import objects_for
from simulator.trace import TraceError, dump_csv, parse
from tests.conftest import ROOT, plan_of

SIM_STACK = ROOT / "tests" / "simulate" / "stack.yaml"
ANNOTATION = "sim.gpu-platform.io/gpu-busy"


def _annotations(objs):
    return objs[0]["spec"]["template"]["metadata"]["annotations"]


def test_the_template_declares_the_busy_fraction_only_when_asked() -> None:
    plan = plan_of("local")
    assert _annotations(job(plan, JobRequest(team="vision", pool="train", gpus=8, gpu_busy=0.25)))[ANNOTATION] == "0.25"
    assert ANNOTATION not in _annotations(job(plan, JobRequest(team="vision", pool="train", gpus=8)))


@pytest.mark.parametrize("busy", [-0.1, 1.5])
def test_a_busy_fraction_outside_0_1_is_refused_naming_the_option(busy: float) -> None:
    with pytest.raises(JobError, match=r"gpu-busy .* is not a fraction of the time in 0\.\.1"):
        job(plan_of("local"), JobRequest(team="vision", pool="train", gpus=8, gpu_busy=busy))


def test_the_job_command_takes_gpu_busy(capsys) -> None:
    assert main(["job", "--stack", "local", "--team", "vision", "--pool", "train", "--gpus", "4", "--gpu-busy", "0.6",
                 "--output", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["spec"]["template"]["metadata"]["annotations"][ANNOTATION] == "0.6"
    assert main(["job", "--stack", "local", "--team", "vision", "--pool", "train", "--gpus", "4",
                 "--gpu-busy", "2"]) == 2
    assert "gpu-busy 2.0 is not a fraction" in capsys.readouterr().err


def test_a_trace_column_declares_it_for_the_replayed_pods() -> None:
    plan = load_plan(None, str(SIM_STACK))[1]
    jobs = parse("submit,team,pool,units,duration,busy\n0,solo,fill,8,1h,0.3\n10,solo,fill,8,1h,\n", plan)
    assert [j.busy for j in jobs] == [0.3, None]
    assert _annotations(objects_for(plan, jobs[0], 1, speed=60))[ANNOTATION] == "0.3"
    assert ANNOTATION not in _annotations(objects_for(plan, jobs[1], 2, speed=60))
    assert dump_csv(jobs).splitlines()[1].endswith(",0.3,job")   # busy, then kind
    with pytest.raises(TraceError, match=r"line 2: gpu-busy 1\.2 is not a fraction"):
        parse("submit,team,pool,units,duration,busy\n0,solo,fill,8,1h,1.2\n", plan)
