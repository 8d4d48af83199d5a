"""The acceptance workload's pure parts (workloads/acceptance/train.py), without torch or boto3: the bus bandwidth
arithmetic, its event lines as the command reads them back, the checkpoint it resumes from, its configuration."""

from __future__ import annotations

import importlib.util
import io
import sys
from types import ModuleType

import pytest

from gpu_platform import acceptance as acc
from tests.conftest import ROOT

TRAIN = ROOT / "workloads" / "acceptance" / "train.py"


def load_train() -> ModuleType:
    """train.py as the pod runs it: a file, not a package module of the platform."""
    spec = importlib.util.spec_from_file_location("acceptance_train", TRAIN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve the module's annotations through sys.modules
    spec.loader.exec_module(module)
    return module


train = load_train()


def test_loading_it_imports_neither_torch_nor_boto3() -> None:
    """Its pure parts run where torch is not installed (this virtualenv, the command's own machine)."""
    code = (f"import importlib.util, sys; s = importlib.util.spec_from_file_location('t', {str(TRAIN)!r}); "
            "m = importlib.util.module_from_spec(s); sys.modules['t'] = m; s.loader.exec_module(m); "
            "print(sorted(n for n in ('torch', 'boto3', 'botocore') if n in sys.modules))")
    import subprocess
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_bus_bandwidth_is_nccl_tests_all_reduce_formula() -> None:
    # AWS's 2 x p5.48xlarge row (16 ranks): 2147483648 B in 9074.5 us is algbw 236.65, busbw 443.72 GB/s
    # (aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests/README.md).
    assert round(train.algbw_gb_per_s(2147483648, 9074.5e-6), 2) == 236.65
    assert round(train.busbw_gb_per_s(2147483648, 9074.5e-6, 16), 2) == 443.72
    # 1 GB in a second: 2(n-1)/n of it on the bus; one rank moves nothing.
    assert train.busbw_gb_per_s(10**9, 1.0, 2) == 1.0
    assert train.busbw_gb_per_s(10**9, 1.0, 8) == 1.75
    assert train.busbw_gb_per_s(10**9, 1.0, 1) == 0.0


def test_event_lines_are_what_the_command_reads_back() -> None:
    out = io.StringIO()
    line = train.emit("allreduce", out, rank=1, busbw_gb_per_s=0.93, correct=True)
    assert line == '{"busbw_gb_per_s": 0.93, "correct": true, "event": "allreduce", "rank": 1}'
    train.emit("done", out, rank=1, steps=40, tokens=40960)
    log = "a library's warning\n" + out.getvalue()
    assert acc.events_from_log(log) == [
        {"event": "allreduce", "rank": 1, "busbw_gb_per_s": 0.93, "correct": True},
        {"event": "done", "rank": 1, "steps": 40, "tokens": 40960}]
    with pytest.raises(ValueError, match="event 'finished' is not one of start, data, allreduce"):
        train.emit("finished", out)


def test_its_event_names_are_the_platforms() -> None:
    assert train.EVENTS == acc.EVENTS


def test_training_resumes_from_the_highest_step_of_its_own_run() -> None:
    prefix = "checkpoints/acceptance-abc123/"
    keys = [
        f"{prefix}step-00000020.pt", f"{prefix}step-00000100.pt", f"{prefix}step-00000040.pt",
        "checkpoints/acceptance-abc1234/step-00000900.pt",  # another run whose name starts the same
        f"{prefix}old/step-00000500.pt",                      # not directly under the prefix
        f"{prefix}step-100.pt", f"{prefix}notes.txt",         # not a checkpoint's name
    ]
    assert train.latest_checkpoint(keys, prefix) == (f"{prefix}step-00000100.pt", 100)
    assert train.latest_checkpoint([], prefix) is None
    assert train.latest_checkpoint(keys[3:], prefix) is None
    assert train.checkpoint_key(prefix, 7) == f"{prefix}step-00000007.pt"
    assert train.latest_checkpoint([train.checkpoint_key(prefix, 7)], prefix) == (f"{prefix}step-00000007.pt", 7)


ENV = {"GPU_PLATFORM_NODES": "2", "GPU_PLATFORM_RANK": "1", "GPU_PLATFORM_COORDINATOR": "job-workers-0-0.job",
       "GPU_PLATFORM_ACCEPTANCE_S3_BUCKET": "acme-ml-prod-llm-pretrain",
       "GPU_PLATFORM_ACCEPTANCE_CHECKPOINT_PREFIX": "checkpoints/acceptance-abc123/",
       "GPU_PLATFORM_ACCEPTANCE_WINDOW_SECONDS": "600"}


def test_its_configuration_comes_from_the_environment() -> None:
    c = train.Config.from_env(ENV)
    assert (c.rank, c.world, c.coordinator, c.port, c.bucket, c.endpoint, c.window_s, c.checkpoint_seconds) == (
        1, 2, "job-workers-0-0.job", 29500, "acme-ml-prod-llm-pretrain", None, 600.0, 30)
    assert (c.dataset_key, c.weights_key) == ("datasets/acceptance/sample.txt", "models/acceptance/base.safetensors")
    assert (c.rendezvous, c.attempt, c.rendezvous_timeout_s, c.threads) == ("dns", 0, 300, 1)
    seeding = train.Config.from_env({"GPU_PLATFORM_ACCEPTANCE_S3_BUCKET": "b"}, seeding=True)
    assert (seeding.world, seeding.rank, seeding.coordinator) == (1, 0, "localhost")


@pytest.mark.parametrize("change,named", [
    ({"GPU_PLATFORM_ACCEPTANCE_S3_BUCKET": ""}, "GPU_PLATFORM_ACCEPTANCE_S3_BUCKET is not set"),
    ({"GPU_PLATFORM_RANK": "2"}, "GPU_PLATFORM_RANK=2 is not a rank of GPU_PLATFORM_NODES=2 pods (0..1)"),
    ({"GPU_PLATFORM_NODES": "two"}, "GPU_PLATFORM_NODES='two' is not an integer"),
    ({"GPU_PLATFORM_ACCEPTANCE_CHECKPOINT_PREFIX": "checkpoints/x"}, "must end with '/'"),
    ({"GPU_PLATFORM_ACCEPTANCE_WINDOW_SECONDS": "0"}, "GPU_PLATFORM_ACCEPTANCE_WINDOW_SECONDS='0' is below 1"),
    ({"GPU_PLATFORM_ACCEPTANCE_RENDEZVOUS": "etcd"}, "GPU_PLATFORM_ACCEPTANCE_RENDEZVOUS='etcd' is not one of dns, s3"),
    ({"GPU_PLATFORM_ACCEPTANCE_RENDEZVOUS": "s3"}, "GPU_PLATFORM_ACCEPTANCE_POD_IP is not set"),
])
def test_a_bad_environment_is_refused_naming_the_variable(change: dict[str, str], named: str) -> None:
    with pytest.raises(train.ConfigError) as refused:
        train.Config.from_env({**ENV, **change})
    assert named in str(refused.value)


def test_a_bad_environment_ends_the_pod_with_an_error_event(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setattr(train.os, "environ", {k: v for k, v in ENV.items() if "BUCKET" not in k})
    assert train.main(["train.py", "run"]) == 2
    (event,) = acc.events_from_log(capsys.readouterr().out)
    assert (event["event"], event["phase"]) == ("error", "config")
    assert "GPU_PLATFORM_ACCEPTANCE_S3_BUCKET is not set" in str(event["message"])


def test_the_seeded_sample_is_the_same_bytes_every_time() -> None:
    a, b = train.sample_text(4096), train.sample_text(4096)
    assert a == b and len(a) == 4096
    assert a.decode("ascii").count(".\n") > 10  # plain text sentences, so a reader can look at it


def test_the_base_weights_are_a_safetensors_file_of_the_models_tensors() -> None:
    """huggingface/safetensors README.md "Format": u64 little-endian header length, JSON header, raw data."""
    blob = train.base_weights()
    assert blob == train.base_weights()  # the same model every run
    header_len = int.from_bytes(blob[:8], "little")
    assert header_len % 8 == 0 and blob[8:9] == b"{"
    tensors = train.read_safetensors(blob)
    assert {n: (d, s, len(raw)) for n, (d, s, raw) in tensors.items()} == {
        "0.weight": ("F32", (256, 64), 65536), "1.weight": ("F32", (256, 64), 65536), "1.bias": ("F32", (256,), 1024)}
    assert len(blob) == 8 + header_len + 33_024 * 4
    with pytest.raises(ValueError, match="the safetensors header says"):
        train.read_safetensors(blob[:8] + b"{}")


def test_without_dns_the_pods_meet_at_one_object_per_restart_attempt() -> None:
    c = train.Config.from_env({**ENV, "GPU_PLATFORM_ACCEPTANCE_RENDEZVOUS": "s3",
                               "GPU_PLATFORM_ACCEPTANCE_POD_IP": "10.244.0.7", "GPU_PLATFORM_ACCEPTANCE_ATTEMPT": "1"})
    assert (c.rendezvous, c.pod_ip, c.attempt) == ("s3", "10.244.0.7", 1)
    assert train.rendezvous_key(c.checkpoint_prefix, c.attempt) == "scratch/acceptance-abc123/rendezvous/attempt-1"
