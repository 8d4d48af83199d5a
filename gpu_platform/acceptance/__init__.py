"""The design guide's acceptance test as data: its seven steps (what each proves, the figures it reports, when it
passes), a step's result, the verdict over all seven, what the all-reduce of step 3 should reach on the pool's
instance type, and step 7's comparison of the run's useful work against a baseline given on the command line.

The guide: a GPU cluster is not production until, before any long-term reservation or large cost commitment, one
job has gone through the whole path (queued as the team, real data, a communication benchmark, a training window,
a checkpoint survived a lost pod, the labels the cost and usage reports read, and useful work priced against
renting or buying the output elsewhere). `python -m platform_cli acceptance` (platform_cli/acceptance.py) runs
the steps on the stack's cluster and hands what it saw here; the program its pods run
(workloads/acceptance/train.py) prints one JSON line per event, which `events_from_log` reads back from the
pods' logs. Pure: no I/O, no clock, so every verdict is tested with literal figures.

Why a verdict is exit code 0 only when all seven steps pass: a skipped step proved nothing, and the point of the
test is that nothing is assumed. A failure says the step, what was expected and what was seen.

One module per part: the steps as data (steps), a step's result and the verdict (results), the workload's events
(events), step 3's bus bandwidth expectation and evaluation (allreduce), steps 2 and 4 and where the workload
stopped (workload), step 5's checkpoint, lost pod and restore (recovery), step 6's series and their attribution
(labels), step 7's baseline and comparison (baseline). This package re-exports every name of every module, so a caller writes
`from gpu_platform import acceptance as acc` and `acc.STEPS` or `acc.verdict(...)` without knowing which module
defines it; each name is defined in exactly one module, which imports what it builds on from its siblings,
never from here.
"""

from .steps import ADMISSION_TIMEOUT_S, FigureSpec, MIN_WINDOW_S, STEPS, STEP_BY_KEY, Step
from .results import (
    EXIT_NOT_PASSED, EXIT_PASSED, FAILED, Figure, PASSED, SKIPPED, STATUSES, StepResult, Verdict, verdict,
)
from .events import EVENTS, events_from_log
from .allreduce import (
    BUSBW_PASS_FRACTION, BusbwExpectation, PUBLISHED_ALLREDUCE_BUSBW, PUBLISHED_ALLREDUCE_SOURCE, busbw_expectation,
    evaluate_allreduce,
)
from .workload import (
    Event, PHASES, PHASE_STEP, error_text, evaluate_allreduce_run, evaluate_data_pull, evaluate_training, failed_here,
    first_error, of_kind, stopped_before,
)
from .recovery import Recovery, evaluate_recovery, resumed_steps
from .labels import (
    FAMILIES, IDENTIFYING, Dimension, Family, Join, Series, attribution, evaluate_labels, expectation, family_problems,
    misattributed, not_exercised, series_text,
)
from .baseline import (
    API, BASELINE_FORMS, Baseline, Comparison, GPU_HOUR, Run, WORK_UNITS, Work, compare, evaluate_useful_work,
    job_cost, parse_baseline,
)
