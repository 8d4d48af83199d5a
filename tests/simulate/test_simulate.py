"""The simulator against answers known by construction, on the live local cluster (real Kueue).

One trace, three pools of tests/simulate/stack.yaml replayed at once:
- fill: 4 identical 4-GPU jobs for `solo`, who holds the whole 16-GPU pool: one long wave that exactly fills it;
- share: `left` and `right` (equal weights, 8 each) both submit 8 2-GPU jobs at the same moment: equal shares;
- lend: `borrower` (8, may borrow 8) submits 8 2-GPU jobs while `owner` is idle.
Then the same trace against the variant where owner lends nothing (lendingLimit 0): the borrower must
wait for its own quota, and the pool sits half idle. The cluster is shared (same nodes and Kueue
Configuration): drained and redeployed between the two.

The no-lend variant replays only the lend scenario, the only one asserted on it (its horizon ends
NO_LEND_HORIZON after the borrower's second wave could have finished, instead of waiting out the fill wave):
the same jobs at the same times, so the borrower's waits compare one for one.

Tolerance: Kueue batches its queue updates by a second (pkg/constants UpdatesBatchPeriod) and admits about
one workload per 0.1-0.4 s on 2 cores, so a burst of jobs takes seconds to admit, and more the more else the 2 cores
run: a CI run with two other cluster lanes took 23 s to admit the 16 1-GPU jobs this trace's lend scenario had,
longer than the jobs themselves; so the scenarios submit 2-GPU jobs, half as many (28 at the start). A wait
known by construction is asserted to within what the run itself measured of Kueue (lateness_bounds_s: its
longest admission of a burst, and one reaction per hand-over), times the speed, in trace time; a fixed
allowance would be either loose on a quiet machine or refused on a busy one. Each hand-over of capacity
costs about a second, so the 99% utilization case is one wave long enough (FILL) for the start-up second to
stay under 1%.

Fidelity: the simulator's own time per job (admission to pods Running, pods' end to quota
released: seconds of wall time on 2 loaded cores) must not be multiplied by the speed into trace time. One
trace of short waves (fidelity.csv: identical jobs filling a pool, 60 s jobs, mixed sizes and run times) is
replayed at two speeds (FIDELITY_SPEEDS) on the same cluster, and each run must give every team the
GPU-hours the trace holds (plus what a real cluster adds per run, which the report states) within 2%, quota
back on the trace's time but for the part of the chain the replay estimates, and waits within one measured
reaction per wave (lateness_bounds_s).
"""

from __future__ import annotations

import pytest
import yaml

from gpu_platform.stack_files import load_plan
from simulator.cli import simulate_all
from simulator.stackfile import write_kubernetes_layer
from simulator.trace import TraceJob, load
from tests.conftest import ROOT
from tests.realtools import CLUSTER_TOOLS, ENGINE_TOOLS, TIMINGS, require

STACK = ROOT / "tests" / "simulate" / "stack.yaml"
SPEED = 120.0
WAVE = 40.0 * SPEED       # trace seconds: 40 s of wall time per wave, long against Kueue's reaction
SHORT = 20.0 * SPEED
FILL = 80.0 * SPEED
HORIZON = 2 * WAVE + 25 * SPEED
LEND_AT = 8 * SPEED
# Two waves of SHORT after LEND_AT, and as much margin as the base horizon leaves after the share waves.
NO_LEND_HORIZON = LEND_AT + 2 * SHORT + 20 * SPEED


def lend_jobs(first_id: int) -> list[TraceJob]:
    return [TraceJob(first_id + i, LEND_AT, "borrower", "lend", 2, 1, SHORT) for i in range(8)]


def trace() -> list[TraceJob]:
    jobs: list[TraceJob] = []
    for i in range(4):
        jobs.append(TraceJob(len(jobs) + 1, 0.0, "solo", "fill", 4, 1, FILL))
    # The other two scenarios a few seconds later, so the fill waves are not admitted behind them.
    for i in range(8):
        for team in ("left", "right"):
            jobs.append(TraceJob(len(jobs) + 1, 4 * SPEED, team, "share", 2, 1, WAVE))
    jobs += lend_jobs(len(jobs) + 1)
    return jobs


# ---- fidelity: the simulator's own time per job taken out -----------------------------------------------
# 2x and 4x: at 12x a 120 s job is 10 s of wall time, about what the simulator's own chain takes on 2 cores
# shared with two other cluster lanes (6-10 s), and a CI run at 49de1b8 finished 2 of solo's 4 jobs within the
# horizon; at 6x, with three other lanes (load 16, CI at f82a268), Kueue admitted borrower's first wave 4-7 s of
# wall time late, 24-42 s of trace, and one job did not finish by the horizon. The report names that limit
# itself (jobs shorter than two chains are untrusted).
FIDELITY_SPEEDS = (2.0, 4.0)
# Trace seconds: the last wave ends at 240 s; 240 s for the hand-overs' lateness (the replay stops once every
# job has finished and left, so the slack costs nothing when it is not needed). At 330 s a CI run at 815f628
# (three lanes on 2 cores) admitted borrower's last job 98 s late at 4x and its run reached past the horizon.
FIDELITY_HORIZON = 480.0


FIDELITY_TRACE = ROOT / "tests" / "simulate" / "fidelity.csv"


def fidelity_trace() -> list[TraceJob]:
    """Identical jobs filling a pool, 60 s jobs, mixed sizes and run times: the file says how."""
    return load(FIDELITY_TRACE, load_plan(None, str(STACK))[1])


# Per team: each job's wave (0, 1, 2: how many hand-overs it waits behind) and its wait by construction.
FIDELITY_WAITS = {
    "solo": [(0, 0.0)] * 2 + [(1, 120.0)] * 2,
    "left": [(0, 0.0)] * 4 + [(1, 60.0)] * 4 + [(2, 120.0)] * 4,
    "borrower": [(0, 0.0)] * 8 + [(1, 60.0 - 24.0)] * 2 + [(2, 180.0 - 48.0)],
}


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    require(CLUSTER_TOOLS + ENGINE_TOOLS)
    tmp = tmp_path_factory.mktemp("simulate")
    base = write_kubernetes_layer(STACK, tmp / "base.stack.yaml")
    doc = yaml.safe_load(base.read_text())
    # Every pool whole (min = max): these answers are known for nodes that are there; an elastic pool's
    # scale-up would add to every wait (tests/simulate/test_elastic_kinds.py replays the elastic stack).
    for pool in doc["config"]["gpu-platform:platform"]["pools"]:
        pool["capacity"]["min"] = pool["capacity"]["max"]
    base.write_text(yaml.safe_dump(doc, sort_keys=False))
    owner = next(t for t in doc["config"]["gpu-platform:platform"]["teams"] if t["name"] == "owner")
    owner["quotas"]["lend"]["lendingLimit"] = 0
    no_lend = tmp / "no-lend.stack.yaml"
    no_lend.write_text(yaml.safe_dump(doc, sort_keys=False))
    fidelity = [f"fidelity-{s:g}x" for s in FIDELITY_SPEEDS]
    configs = [(name, f, load_plan(None, str(f))[1])
               for name, f in (("base", base), *((n, base) for n in fidelity), ("no-lend", no_lend))]
    full = trace()
    lend_only = [j for j in full if j.pool == "lend"]
    assert lend_only == lend_jobs(lend_only[0].line)
    out = simulate_all(configs, full, HORIZON, SPEED, tmp / "out", progress=lambda line: None,
                       traces={"no-lend": (lend_only, NO_LEND_HORIZON),
                               **{n: (fidelity_trace(), FIDELITY_HORIZON) for n in fidelity}},
                       speeds=dict(zip(fidelity, FIDELITY_SPEEDS)))
    for name, r in out.items():
        TIMINGS[f"simulate ({name}): wall"] = r["simulator"]["total_s"]
    return out


def full_but_for(busy_s: float, slack_s: float) -> float:
    """The least utilization of a saturated window of `busy_s` of work per slot when each slot's start waited
    at most `slack_s` for Kueue (the longest admission wait of the run): a pool exactly filled loses only the
    controller's measured reaction (about 1 s idle, 2-3 s on 2 loaded cores), never a fixed share. Every slot
    is idle at most slack_s of a window at least busy_s long; 0.005 for the metrics' rounding."""
    return 1 - slack_s / busy_s - 0.005


def test_identical_jobs_that_exactly_fill_a_pool_use_it_fully(reports) -> None:
    r = reports["base"]
    fill = r["pools"]["fill"]
    solo = r["teams"]["solo"]
    assert solo["finished"] == 4
    # One team alone, within its quota: nothing waits but for Kueue's admission ...
    assert solo["wait_max_h"] * 3600 <= lateness_bounds_s(r, 0)[1], (solo, r["simulator"])
    # ... and the wave fills the pool for all of its length but that (>= 99% when Kueue answers in 1 s).
    assert fill["utilization_saturated"] >= full_but_for(FILL, solo["wait_max_h"] * 3600), (fill, solo)
    assert solo["borrowed_gpu_hours"] == 0 and solo["preemptions"] == 0


def test_two_teams_with_equal_weights_and_demand_get_equal_shares(reports) -> None:
    r = reports["base"]
    left, right = r["teams"]["left"], r["teams"]["right"]
    one_job_h = 2 * WAVE / 3600
    assert abs(left["gpu_hours_used"] - right["gpu_hours_used"]) <= one_job_h + 0.01, (left, right)
    assert left["finished"] == right["finished"] == 8
    # Two waves back to back: the last job admitted waited one wave plus every admission delay before it (the
    # first wave's and the hand-over's), and the window ends one wave after it.
    slack = max(left["wait_max_h"], right["wait_max_h"]) * 3600 - WAVE
    assert slack <= lateness_bounds_s(r, 1)[1], (left, right, r["simulator"])
    assert r["pools"]["share"]["utilization_saturated"] >= full_but_for(2 * WAVE, slack), (r["pools"]["share"], left, right)


def test_borrowing_from_an_idle_sibling_finishes_sooner_and_raises_utilization(reports) -> None:
    base, no_lend = reports["base"], reports["no-lend"]
    b0, b1 = base["teams"]["borrower"], no_lend["teams"]["borrower"]
    assert b0["finished"] == b1["finished"] == 8
    # With the owner lending: all 8 jobs at once (8 GPUs borrowed). Without: 4 at a time, the rest one job later.
    # Each borrowed GPU is held SHORT but for the burst's admission, which Kueue spreads over its cycles (the
    # borrower's longest wait): runs count their trace duration, not the simulator's chain times the speed.
    # (the report rounds GPU-hours to 0.01)
    assert b0["borrowed_gpu_hours"] >= 8 * (SHORT - b0["wait_max_h"] * 3600) / 3600 - 0.005, b0
    assert base["teams"]["owner"]["lent_gpu_hours"] == pytest.approx(b0["borrowed_gpu_hours"], abs=0.01)
    # With lending nothing waits but for Kueue's admission of the burst; without, the second eight wait one
    # job (SHORT) and the hand-over, and never less: the owner's idle quota must not leak.
    assert b0["wait_p95_h"] * 3600 <= lateness_bounds_s(base, 0)[1], (b0, base["simulator"])
    early, late = lateness_bounds_s(no_lend, 1)
    assert early <= b1["wait_p95_h"] * 3600 - SHORT <= late, (b1, no_lend["simulator"])
    assert b0["wait_p95_h"] < b1["wait_p95_h"]
    # While the borrower's demand exceeds the pool, it is all used with lending and half without.
    assert base["pools"]["lend"]["utilization_saturated"] >= full_but_for(SHORT, b0["wait_max_h"] * 3600), b0
    assert no_lend["pools"]["lend"]["utilization_saturated"] <= 0.6


def test_a_lending_limit_of_zero_lends_nothing(reports) -> None:
    r = reports["no-lend"]
    assert r["teams"]["borrower"]["borrowed_gpu_hours"] == 0
    assert r["teams"]["owner"]["lent_gpu_hours"] == 0
    assert r["teams"]["borrower"]["preemptions"] == 0


def lateness_bounds_s(r: dict, wave: int) -> tuple[float, float]:
    """How early and how late (trace seconds) a job of `wave` may be admitted against the trace, from the
    run's own measurements, times the speed:
    - the first wave waits Kueue's admission of the burst submitted with it (its longest measured
      admission of a job that found room: a scheduling cycle takes one head per ClusterQueue,
      sigs.k8s.io/kueue pkg/scheduler/scheduler.go; or made room: in the share scenario one team may
      borrow the other's quota before the other's Workloads exist, and Kueue reclaims it by preemption);
    - each hand-over adds one measured reaction: Kueue's longest (capacity freed -> next admitted) plus how
      late the quota came back (the correction's residual, at most its longest);
    - a wave starts early only by as much as quota came back early (the residual, again).
    Without the correction every hand-over would also be late by the simulator's whole chain times the speed."""
    sim = r["simulator"]
    o = sim["overhead"]
    late = sim["kueue_admission_max_s"] + wave * (sim["kueue_reaction_max_s"] + o["residual_max_s"])
    # The report rounds waits to 0.001 h (half of that either way: 1.8 s of trace time) and its wall-clock figures
    # to 0.001 s (each term here off by up to 0.0005 s times the speed).
    rounding = 0.0005 * 3600 + (1 + 2 * wave) * 0.0005 * r["speed"]
    return -wave * o["residual_max_s"] * r["speed"] - rounding, late * r["speed"] + rounding


@pytest.mark.parametrize("speed", FIDELITY_SPEEDS)
def test_gpu_hours_used_are_the_traces_own_at_any_speed(reports, speed: float) -> None:
    r = reports[f"fidelity-{speed:g}x"]
    o = r["simulator"]["overhead"]
    added = o["added_per_run_s"]
    for team in FIDELITY_WAITS:
        mine = [j for j in fidelity_trace() if j.team == team]
        own = sum(j.total_units * j.duration for j in mine) / 3600
        real_cluster = sum(j.total_units * added for j in mine) / 3600   # the idle chain, stated in the report
        t = r["teams"][team]
        assert t["finished"] == len(mine), (team, t)
        # The report counts GPU-hours inside the horizon. A run admitted so late (a hand-over the waits test
        # below still accepts on a loaded machine) that its trace duration and chain reach past the horizon is
        # counted up to it: CI at 815f628 missed by 0.047 GPU-h when borrower's 2-node job, due to wait 132 s,
        # waited 230 s at 4x (3 lanes on 2 cores) and its 64.5 s ran 12.5 s past the 330 s horizon. Each
        # job's admission is the trace's submission plus its measured wait (waits_h: the team's jobs in trace order).
        admitted = [j.submit + w * 3600 for j, w in zip(mine, r["waits_h"][team])]
        assert len(admitted) == len(mine), (team, r["waits_h"][team])
        cut = sum(j.total_units * max(0.0, a + j.duration + added - FIDELITY_HORIZON)
                  for j, a in zip(mine, admitted)) / 3600
        # Before the correction: 60 s jobs held their GPUs the whole chain (~2-6 s) x speed longer.
        # Every figure that explains a miss, whole (pytest cuts a long dict's repr): CI at 225e70c missed by an
        # amount its message did not show.
        why = {k: t.get(k) for k in ("gpu_hours_used", "gpu_hours_waiting_for_nodes", "preemptions",
                                     "pods_ready_timeouts", "gpu_hours_lost", "wait_max_h", "borrowed_gpu_hours")}
        # The quota a job held while its pods waited for a node is the cluster's, not the trace's: Kueue admits
        # on quota, and when borrower's 8-GPU jobs are admitted as the first 2-GPU jobs end, those still running
        # may sit on both nodes (the scheduler spreads them); how long they overlap grows with the load. The
        # likeliest cause of CI's miss at 225e70c (borrower at 6x, waits within bounds), not proven: that run's
        # events were not kept (now they are: tests/conftest.py keep_cluster_logs).
        used = t["gpu_hours_used"] - t["gpu_hours_waiting_for_nodes"]
        assert abs(used - own - real_cluster + cut) <= 0.02 * own, (
            f"{team}: own {own:.4f} + chain {real_cluster:.4f} - past the horizon {cut:.4f} GPU-h, {why}, "
            f"overhead {o}")
    # The quota came back on the trace's time but for what the replay has to estimate, the end of the chain
    # (pods' end -> quota released, about half of it): the start (admission -> pods Running) is inside the
    # run. Before the correction the quota came back the whole chain late, every time.
    assert o["residual_p50_s"] < o["per_job_p50_s"] / 2, o


@pytest.mark.parametrize("speed", FIDELITY_SPEEDS)
def test_a_replay_on_whole_pools_ends_once_every_job_has_finished_and_left(reports, speed: float) -> None:
    r = reports[f"fidelity-{speed:g}x"]
    sim = r["simulator"]
    assert r["jobs_finished"] == r["jobs_submitted"] == len(fidelity_trace()), r
    # The last job's run ends near 240 s of trace (its wave is due at 180 s; plus the hand-overs' lateness); the
    # replay stopped after it, not at the 480 s horizon, and took that much less wall time.
    assert sim["stopped_idle_at_h"] is not None and 180 / 3600 < sim["stopped_idle_at_h"] < FIDELITY_HORIZON / 3600, sim
    assert sim["wall_s"] < FIDELITY_HORIZON / speed, sim


@pytest.mark.parametrize("speed", FIDELITY_SPEEDS)
def test_waits_are_the_traces_own_within_one_measured_reaction_per_wave(reports, speed: float) -> None:
    r = reports[f"fidelity-{speed:g}x"]
    for team, expected in FIDELITY_WAITS.items():
        waits = sorted(w * 3600 for w in r["waits_h"][team])
        assert len(waits) == len(expected), (team, waits)
        for w, (wave, want) in zip(waits, sorted(expected, key=lambda x: x[1])):
            early, late = lateness_bounds_s(r, wave)
            assert early <= w - want <= late, (team, wave, waits, r["simulator"])
