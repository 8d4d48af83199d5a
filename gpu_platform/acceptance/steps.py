"""The seven steps as data, in the guide's order and words: what each proves, the figures it reports and when it
passes; the JSON report, the Markdown report and the runner all read them from here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

# How long step 1 waits for Kueue to admit the job before it fails (the team's quota may be busy: the step then
# says what the Workload waits for, from its QuotaReserved condition's message).
ADMISSION_TIMEOUT_S = 300
# The shortest training window: step 5 needs a checkpoint written, a pod deleted after it, and training resumed.
MIN_WINDOW_S = 60


@dataclass(frozen=True, slots=True)
class FigureSpec:
    """A figure a step reports: its key in the JSON report, its unit, what it measures."""

    name: str
    unit: str
    meaning: str


@dataclass(frozen=True, slots=True)
class Step:
    number: int
    key: str
    title: str
    proves: str
    figures: tuple[FigureSpec, ...]
    criteria: tuple[str, ...]


# The seven steps, in the guide's order and words (issue 39).
STEPS: tuple[Step, ...] = (
    Step(1, "queued-job", "Submit a queued training job with the production container",
         "the platform's JobSet template, submitted as the team, goes through Kueue (the team's LocalQueue and "
         "quota, the pool's flavor), the tenant admission policies and TAS like any job; the queue wait is "
         "measured as Kueue measures it",
         (FigureSpec("quota_reserved_wait", "s", "Workload created to QuotaReserved (Kueue's quota_reserved_wait_time)"),
          FigureSpec("admitted_wait", "s", "Workload created to Admitted (Kueue's admission_wait_time)"),
          FigureSpec("cluster_queue", "", "the ClusterQueue that admitted it"),
          FigureSpec("flavor", "", "the ResourceFlavor its GPUs were charged to"),
          FigureSpec("submitted_as", "", "the user and group the job was created as (impersonated)")),
         ("the JobSet and its ConfigMap are accepted when created as the team",
          "its Workload is queued in the team's LocalQueue",
          "quota is reserved in the team's ClusterQueue, the GPUs on the pool's flavor",
          f"Admitted within {ADMISSION_TIMEOUT_S} s")),
    Step(2, "data-pull", "Pull the real dataset sample and base model weights",
         "every pod reads a dataset sample and the base weights from the team's data path with its own credentials",
         (FigureSpec("bytes", "B", "bytes read, all pods"),
          FigureSpec("seconds", "s", "the slowest pod's read time"),
          FigureSpec("throughput", "MB/s", "the slowest pod's read rate (10^6 bytes per second)")),
         ("a data event from every pod, bytes above 0", "no pod reports a data-pull error")),
    Step(3, "all-reduce", "Run a multi-node communication benchmark",
         "the job's pods reach each other and all-reduce across them (NCCL over EFA on EKS GPU pools, gloo over "
         "TCP locally) at the bus bandwidth the instance type should reach",
         (FigureSpec("busbw", "GB/s", "bus bandwidth of the slowest rank, nccl-tests' definition (10^9 bytes/s)"),
          FigureSpec("algbw", "GB/s", "algorithm bandwidth of the slowest rank: message bytes / time"),
          FigureSpec("message", "B", "all-reduce message size"),
          FigureSpec("ranks", "", "processes in the all-reduce"),
          FigureSpec("expected_busbw", "GB/s", "the pass threshold, or none when the figure is reported only")),
         ("an all-reduce event from every pod, each with the right sum",
          "bus bandwidth at least BUSBW_PASS_FRACTION of the published figure for the instance type, where one "
          "exists (report only otherwise)",
          "a job of one pod skips it: nothing to reduce across")),
    Step(4, "train", "Train or fine-tune for a fixed window",
         "the production container trains across the pods for the window, with step time and throughput",
         (FigureSpec("steps", "", "optimizer steps in the window"),
          FigureSpec("step_time", "s", "mean wall time per step"),
          FigureSpec("throughput", "tokens/s", "tokens trained per second, all ranks"),
          FigureSpec("tokens", "", "tokens trained"),
          FigureSpec("samples", "", "sequences trained")),
         ("steps above 0 on every rank", "the window ran to its end")),
    Step(5, "checkpoint-restore", "Write a checkpoint, delete a pod, and restore from checkpoint",
         "a checkpoint reaches the data path, a pod lost mid-run brings the whole job back through the platform "
         "(requeued or restarted as its failure policy says), and training resumes from the checkpoint's step",
         (FigureSpec("checkpoint_write", "s", "time to write the last checkpoint before the deletion"),
          FigureSpec("checkpoint_step", "", "its step"),
          FigureSpec("recovery", "s", "pod deleted to every pod of the job running again"),
          FigureSpec("restore", "s", "time to read the checkpoint back"),
          FigureSpec("resumed_step", "", "the step training resumed from")),
         ("a checkpoint written before the deletion", "the job recovered without a person",
          "training resumed from the checkpoint's step, not from zero")),
    Step(6, "labels", "Export GPU, network, storage, queue, and cost labels",
         "the job's series in Prometheus (its pods' GPU, network and block I/O series, its ClusterQueue's usage) are "
         "attributed to its team, pool, queue and cost center, on the series or through the platform's rules, so "
         "the usage and cost reports and the dashboards count it where it belongs",
         (FigureSpec("gpu_series", "", "the job's pods' DCGM series found (dcgm-exporter)"),
          FigureSpec("network_series", "", "the job's pods' network series found (the kubelet's cAdvisor)"),
          FigureSpec("storage_series", "", "the job's pods' block I/O series found (the kubelet's cAdvisor)"),
          FigureSpec("queue_series", "", "the team's ClusterQueue usage series of the pool's flavor that counted the "
                                         "job (Kueue)"),
          FigureSpec("metrics", "", "the metric names those series have"),
          FigureSpec("not_exercised", "", "a family without series of the job whose source reports the job (storage: "
                                          "the pods read or wrote no block device, their network series are there)")),
         ("GPU, network, storage and queue series of the job (storage: or no block I/O by its pods, whose network "
          "series the same scrape gives)",
          "every one attributed to the job's team, pool, queue (its LocalQueue, or its ClusterQueue on Kueue's "
          "series) and cost center, with the job's values")),
    Step(7, "useful-work", "Compare useful work against the model/API or GPU rental baseline",
         "from the run's own figures (useful_work.py: the GPU time of finished and lost runs at the plan's prices), "
         "what a unit of work cost on the cluster against the baseline given on the command line",
         (FigureSpec("cluster_cost", "USD/unit", "the cluster's cost per unit of work"),
          FigureSpec("baseline_cost", "USD/unit", "the baseline's"),
          FigureSpec("total_usd", "USD", "the job's GPU time at the plan's price, finished and lost runs"),
          FigureSpec("useful_gpu_hours", "GPU-h", "GPU time of runs that finished")),
         ("useful work to price", "the cluster's cost per unit below the baseline's")),
)
STEP_BY_KEY: Mapping[str, Step] = {s.key: s for s in STEPS}
