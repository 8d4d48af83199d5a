"""`python -m platform_cli report --check` against the live local cluster: it passes when every input of the report is
there, and names the input when one is taken away (the rules, the Kueue target, the node pool label, the profiling
field), exiting 1.

World: the live local cluster (real Kueue, kube-scheduler and API server; KWOK GPU nodes; the GPU telemetry process
standing in for dcgm-exporter and kube-state-metrics; the cluster's Prometheus, whose scrape jobs are EKS's:
gpu_platform/plan/scrape_jobs.py). Each removal runs a second Prometheus (the tool cache's, as the cluster's) on the
cluster's own configuration, read from its API, minus that one input, so the session's Prometheus, which the other
live tests read, stays whole. How each input goes missing is how it goes missing on EKS: no rule file loaded, no
scrape job for Kueue, kube-state-metrics without the pool label in its allowlist (the label dropped after the
scrape), dcgm-exporter without profiling (the field dropped after the scrape).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import yaml

from components import alerts
from gpu_platform import conventions as cv
from gpu_platform.jobs import JobRequest, job
from platform_cli import report_check
from tests.conftest import ROOT, require_tools
from tests.live.conftest import STACK_FILE, Live, wait_for

# What --check prints per input (platform_cli/report_check.py): "  <STATUS>  <input>: <detail>".
INPUTS = ("rules loaded", "Kueue scraped", "kube-state-metrics scraped", "dcgm-exporter up", "node pool labels",
          "Workload states", "prices known")
# The second Prometheus scrapes and evaluates every 2 s, so a removal shows within seconds.
FAST = "2s"
SETTLE_S = 90


def report_check_cli(url: str) -> tuple[int, str]:
    """`report --check` as a user runs it, against the Prometheus at `url`."""
    out = subprocess.run([sys.executable, "-m", "platform_cli", "report", "--stack", str(STACK_FILE), "--check",
                          "--prometheus", url], cwd=ROOT, capture_output=True, text=True, timeout=120)
    return out.returncode, out.stdout + out.stderr


def statuses(output: str) -> dict[str, str]:
    """{input: status} from --check's lines."""
    found: dict[str, str] = {}
    for line in output.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and parts[0] in (report_check.OK, report_check.MISSING, report_check.UNKNOWN):
            name = parts[1].split(":", 1)[0]
            found[name] = parts[0]
    return found


def missing(output: str) -> set[str]:
    return {name for name, status in statuses(output).items() if status == report_check.MISSING}


def running_config(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{url}/api/v1/status/config", timeout=30) as resp:
        return yaml.safe_load(json.load(resp)["data"]["yaml"])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def job_named(cfg: dict[str, Any], name: str) -> dict[str, Any]:
    return next(j for j in cfg["scrape_configs"] if j["job_name"] == name)


def without_rules(cfg: dict[str, Any]) -> None:
    cfg.pop("rule_files", None)


def without_kueue(cfg: dict[str, Any]) -> None:
    cfg["scrape_configs"] = [j for j in cfg["scrape_configs"] if j["job_name"] != cv.KUEUE_JOB]


def without_pool_label(cfg: dict[str, Any]) -> None:
    job_named(cfg, cv.KSM_JOB).setdefault("metric_relabel_configs", []).append(
        {"action": "labeldrop", "regex": alerts.POOL_NODE_LABEL})


def without_profiling(cfg: dict[str, Any]) -> None:
    job_named(cfg, cv.DCGM_JOB).setdefault("metric_relabel_configs", []).append(
        {"action": "drop", "source_labels": ["__name__"], "regex": cv.BUSY_FIELD})


@pytest.fixture(scope="module")
def prometheus_bin() -> Path:
    (path,) = require_tools("prometheus")
    return path


@pytest.fixture
def with_work(platform: Live) -> Iterator[Live]:
    """A run holding a train GPU, so there is a GPU node in use and a Workload whose states are exported."""
    objs = job(platform.plan, JobRequest(team="beta", pool="train", gpus=1, name="check-inputs", duration="600s",
                                         gpu_busy=0.5))
    platform.create(objs, as_team="beta")
    yield platform


def second_prometheus(binary: Path, base: dict[str, Any], change: Callable[[dict[str, Any]], None],
                      tmp: Path) -> tuple[subprocess.Popen, str]:
    """A Prometheus on the cluster's configuration changed by `change`, scraping and evaluating every 2 s."""
    cfg = json.loads(json.dumps(base))
    # a scrape may not outlast its interval (Prometheus refuses a timeout above it)
    cfg["global"].update(scrape_interval=FAST, scrape_timeout=FAST, evaluation_interval=FAST)
    for j in cfg["scrape_configs"]:
        j.update(scrape_interval=FAST, scrape_timeout=FAST)
        for sd in j.get("http_sd_configs", []):
            sd["refresh_interval"] = FAST
    change(cfg)
    (tmp / "data").mkdir(parents=True, exist_ok=True)
    (tmp / "prometheus.yml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    port = free_port()
    log = (tmp / "prometheus.log").open("w")
    proc = subprocess.Popen([str(binary), f"--config.file={tmp / 'prometheus.yml'}", f"--storage.tsdb.path={tmp / 'data'}",
                             f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"the second Prometheus exited {proc.returncode}: {(tmp / 'prometheus.log').read_text()}")
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=5) as resp:
                return resp.status == 200
        except OSError:
            return False

    wait_for(ready, 60, "the second Prometheus ready", interval=0.5)
    return proc, url


def settled(url: str, expected_missing: set[str]) -> tuple[int, str]:
    """--check's exit code and output once exactly `expected_missing` is missing (scrapes and evaluations take a
    few rounds)."""
    last: list[tuple[int, str]] = [(-1, "")]

    def check() -> bool:
        last[0] = report_check_cli(url)
        return missing(last[0][1]) == expected_missing

    try:
        wait_for(check, SETTLE_S, f"report --check to name exactly {sorted(expected_missing)}", interval=2)
    except AssertionError as err:
        raise AssertionError(f"{err}\nlast output:\n{last[0][1]}") from None
    return last[0]


def test_report_check_passes_on_the_live_cluster(with_work: Live) -> None:
    """World: the live local cluster and its own Prometheus. Every input is there: exit 0, every line ok."""
    rc, output = settled(with_work.prometheus_url, set())
    assert rc == 0, output
    assert statuses(output) == {name: report_check.OK for name in INPUTS}, output
    assert output.rstrip().endswith(f"every input the report reads is there ({len(INPUTS)} checked)"), output


@pytest.mark.parametrize("removed, change, named, why", [
    pytest.param("rules", without_rules, "rules loaded", alerts.CLUSTER_QUEUE_TEAM, id="rules"),
    pytest.param("Kueue target", without_kueue, "Kueue scraped", cv.KUEUE_PENDING_WORKLOADS, id="kueue-target"),
    pytest.param("node pool label", without_pool_label, "node pool labels", alerts.POOL_NODE_LABEL,
                 id="node-pool-label"),
    pytest.param("profiling field", without_profiling, "dcgm-exporter profiling field", cv.BUSY_FIELD,
                 id="profiling-field"),
])
def test_report_check_names_the_input_that_is_taken_away(with_work: Live, prometheus_bin: Path, tmp_path: Path,
                                                          removed: str, change: Callable[[dict[str, Any]], None],
                                                          named: str, why: str) -> None:
    """World: the live local cluster, scraped by a second Prometheus whose configuration is the cluster's minus one
    input. --check exits 1, marks that input (and only it) MISSING and says which series is absent."""
    base = running_config(with_work.prometheus_url)
    # the cluster's own Prometheus first passes, so what goes missing below is the removal's doing
    settled(with_work.prometheus_url, set())
    proc, url = second_prometheus(prometheus_bin, base, change, tmp_path)
    try:
        rc, output = settled(url, {named})
        assert rc == 1, output
        line = next(ln for ln in output.splitlines() if ln.split(None, 1)[-1].startswith(f"{named}:"))
        assert line.split()[0] == report_check.MISSING and why in line, f"{removed}: {line}"
        assert output.rstrip().splitlines()[-1].startswith(f"1 of {len(INPUTS)} inputs missing: {named};"), output
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
