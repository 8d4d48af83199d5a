#!/usr/bin/env python3
"""The acceptance test's workload: what each pod of the acceptance JobSet runs (docs/acceptance.md).

Not part of the platform and imported by none of it: `python -m platform_cli acceptance` ships this file into the
team's namespace as a ConfigMap and runs it with the image given (`--image`: Python 3 with torch and boto3; Debian
packages python3-torch and python3-boto3, or the production image). It runs the guide's steps 2 to 5 inside the
job and prints one JSON object per line for each event, which the command reads back with `kubectl logs`
(gpu_platform/acceptance/events.py events_from_log):

    {"event": "data", "rank": 0, "bytes": 1048576, "seconds": 0.21, ...}
    {"event": "allreduce", "rank": 0, "busbw_gb_per_s": 0.93, "algbw_gb_per_s": 0.93, "bytes": 16777216, ...}

1. data: reads a dataset sample and the base weights from the team's bucket (boto3; an S3-compatible endpoint
   when GPU_PLATFORM_ACCEPTANCE_S3_ENDPOINT is set, else AWS S3 with the pod's own credentials: on EKS the team's
   Pod Identity role through the template's `team-data` service account), timed.
2. allreduce: an all-reduce across the job's pods with torch.distributed (nccl on CUDA, gloo over TCP otherwise),
   rendezvous at the JobSet's first pod (GPU_PLATFORM_COORDINATOR, GPU_PLATFORM_RANK, GPU_PLATFORM_NODES: the
   platform's JobSet template sets them), its bus bandwidth as nccl-tests defines it. On a cluster without DNS
   (the local one) the first pod publishes its address in the bucket's scratch/ instead (RENDEZVOUS=s3).
3. restore: the latest checkpoint under the run's prefix, if any: training resumes from its step, not from zero.
4. train: a tiny next-byte model over the dataset sample, data-parallel across the pods, for the window (training
   time, counted across restarts: a resumed run trains what the checkpoint had not).
5. checkpoint: every CHECKPOINT_SECONDS rank 0 writes the model and optimizer to the bucket (one S3 PUT: an object
   appears whole or not at all, so the latest listed checkpoint is always complete). A checkpoint that cannot be
   written is reported (`ok` false) and training goes on, so the run shows which step failed.

The base weights are a safetensors file (huggingface/safetensors README.md, "Format": an 8-byte little-endian
header length, a JSON header of dtype, shape and data_offsets per tensor, then the raw little-endian data), so the
platform's side can write them without torch. `seed` mode writes the dataset sample and the base weights the test
reads (run it once per bucket). The pure parts (configuration, bandwidth arithmetic, event lines, checkpoint
choice, the weights file) import neither torch nor boto3, so they are tested where torch is not installed
(tests/unit/workloads).
"""

from __future__ import annotations

import io
import json
import os
import random
import re
import struct
import sys
import time
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, TextIO

# The event names, the same as gpu_platform/acceptance/events.py EVENTS (tests/unit/workloads holds them equal: this
# file runs in a pod where the platform is not installed, so it cannot import them).
EVENTS = ("start", "data", "allreduce", "restore", "train", "checkpoint", "done", "error")
ENV_PREFIX = "GPU_PLATFORM_ACCEPTANCE_"
DEFAULT_DATASET_KEY = "datasets/acceptance/sample.txt"
DEFAULT_WEIGHTS_KEY = "models/acceptance/base.safetensors"
SCRATCH_PREFIX = "scratch/"
# The byte vocabulary of the tiny model: next-byte prediction over the raw sample.
VOCAB = 256
EMBEDDING = 64
CHECKPOINT_NAME = re.compile(r"^step-(\d{8})\.pt$")
# How the pods find the first pod's address: its DNS name (the JobSet's headless Service), or an object the
# first pod writes in the bucket (a cluster without DNS, such as the local one).
RENDEZVOUS = ("dns", "s3")
# A `train` event at most this often per rank (progress, not every step).
PROGRESS_SECONDS = 5.0


class ConfigError(ValueError):
    """A variable missing or malformed: the message names it and what is valid."""


@dataclass(frozen=True)
class Config:
    rank: int
    world: int
    coordinator: str
    port: int
    bucket: str
    endpoint: str | None
    dataset_key: str
    weights_key: str
    checkpoint_prefix: str
    window_s: float
    checkpoint_seconds: int
    message_bytes: int
    batch: int
    seq_len: int
    rendezvous: str = "dns"
    pod_ip: str | None = None
    attempt: int = 0
    rendezvous_timeout_s: int = 300
    threads: int = 1

    @classmethod
    def from_env(cls, env: Mapping[str, str], seeding: bool = False) -> Config:
        """The run's settings from the environment the command gives the pod; `seeding` (seed mode) needs only the
        bucket and the keys."""
        def text(name: str, default: str | None = None) -> str:
            value = env.get(name, default)
            if value is None or not value.strip():
                raise ConfigError(f"{name} is not set (the acceptance command sets it; docs/acceptance.md)")
            return value.strip()

        def integer(name: str, default: str | None, low: int) -> int:
            raw = text(name, default)
            try:
                value = int(raw)
            except ValueError:
                raise ConfigError(f"{name}={raw!r} is not an integer (at least {low})") from None
            if value < low:
                raise ConfigError(f"{name}={raw!r} is below {low}")
            return value

        world = integer("GPU_PLATFORM_NODES", "1", 1)
        rank = integer("GPU_PLATFORM_RANK", "0", 0)
        if rank >= world:
            raise ConfigError(f"GPU_PLATFORM_RANK={rank} is not a rank of GPU_PLATFORM_NODES={world} pods (0..{world - 1})")
        prefix = text(ENV_PREFIX + "CHECKPOINT_PREFIX", "checkpoints/acceptance-seed/" if seeding else None)
        if not prefix.endswith("/"):
            raise ConfigError(f"{ENV_PREFIX}CHECKPOINT_PREFIX={prefix!r} must end with '/' (a key prefix such as "
                              "checkpoints/acceptance-abc123/)")
        rendezvous = text(ENV_PREFIX + "RENDEZVOUS", "dns")
        if rendezvous not in RENDEZVOUS:
            raise ConfigError(f"{ENV_PREFIX}RENDEZVOUS={rendezvous!r} is not one of {', '.join(RENDEZVOUS)}")
        pod_ip = env.get(ENV_PREFIX + "POD_IP") or None
        if rendezvous == "s3" and world > 1 and pod_ip is None:
            raise ConfigError(f"{ENV_PREFIX}POD_IP is not set (RENDEZVOUS=s3 publishes the first pod's address)")
        return cls(
            rank=rank, world=world,
            coordinator=text("GPU_PLATFORM_COORDINATOR", "localhost" if world == 1 else None),
            port=integer(ENV_PREFIX + "PORT", "29500", 1),
            bucket=text(ENV_PREFIX + "S3_BUCKET"),
            endpoint=env.get(ENV_PREFIX + "S3_ENDPOINT") or None,
            dataset_key=text(ENV_PREFIX + "DATASET_KEY", DEFAULT_DATASET_KEY),
            weights_key=text(ENV_PREFIX + "WEIGHTS_KEY", DEFAULT_WEIGHTS_KEY),
            checkpoint_prefix=prefix,
            window_s=float(integer(ENV_PREFIX + "WINDOW_SECONDS", "1" if seeding else None, 1)),
            checkpoint_seconds=integer(ENV_PREFIX + "CHECKPOINT_SECONDS", "30", 1),
            message_bytes=integer(ENV_PREFIX + "ALLREDUCE_BYTES", str(16 * 2**20), 4),
            batch=integer(ENV_PREFIX + "BATCH", "16", 1),
            seq_len=integer(ENV_PREFIX + "SEQ_LEN", "64", 1),
            rendezvous=rendezvous, pod_ip=pod_ip,
            # the JobSet's restart attempt (its pods' label, through the downward API): 0, then 1 after a restart
            attempt=integer(ENV_PREFIX + "ATTEMPT", "0", 0),
            rendezvous_timeout_s=integer(ENV_PREFIX + "RENDEZVOUS_TIMEOUT_SECONDS", "300", 1),
            threads=integer(ENV_PREFIX + "THREADS", "1", 1),
        )


# ---------------------------------------------------------------------------------------------------
# Pure parts


def emit(event: str, out: TextIO | None = None, **fields: Any) -> str:
    """Print one event as a JSON line (flushed: `kubectl logs` must see it before the pod ends) and return it."""
    if event not in EVENTS:
        raise ValueError(f"event {event!r} is not one of {', '.join(EVENTS)}")
    line = json.dumps({"event": event, **fields}, sort_keys=True)
    print(line, file=out if out is not None else sys.stdout, flush=True)
    return line


def algbw_gb_per_s(message_bytes: int, seconds: float) -> float:
    """Algorithm bandwidth, GB/s (10^9 bytes per second): size / time (NVIDIA/nccl-tests doc/PERFORMANCE.md;
    src/all_reduce.cu AllReduceGetBw divides by 1.0E9)."""
    return message_bytes / 1e9 / seconds


def busbw_gb_per_s(message_bytes: int, seconds: float, ranks: int) -> float:
    """All-reduce bus bandwidth as nccl-tests reports it: algbw x 2(n-1)/n, the figure comparable with the hardware's
    peak whatever the number of ranks (NVIDIA/nccl-tests doc/PERFORMANCE.md, "AllReduce"). One rank moves nothing."""
    return algbw_gb_per_s(message_bytes, seconds) * 2 * (ranks - 1) / ranks


def checkpoint_key(prefix: str, step: int) -> str:
    return f"{prefix}step-{step:08d}.pt"


def latest_checkpoint(keys: Iterable[str], prefix: str) -> tuple[str, int] | None:
    """The checkpoint to resume from: the highest step among `<prefix>step-NNNNNNNN.pt` objects directly under the
    prefix (not another run's, not a file of another name); None when the run has none."""
    best: tuple[str, int] | None = None
    for key in keys:
        if not key.startswith(prefix):
            continue
        m = CHECKPOINT_NAME.match(key[len(prefix):])
        if m and (best is None or int(m.group(1)) > best[1]):
            best = (key, int(m.group(1)))
    return best


def rendezvous_key(checkpoint_prefix: str, attempt: int) -> str:
    """Where the first pod of a restart attempt publishes its address (RENDEZVOUS=s3): under the team's scratch/
    prefix (docs/data-path.md: intermediate files that expire), named after the run (its checkpoint prefix's last
    part), one per attempt, so a new gang never meets the address of the old one."""
    run = checkpoint_prefix.rstrip("/").rsplit("/", 1)[-1]
    return f"{SCRATCH_PREFIX}{run}/rendezvous/attempt-{attempt}"


# The tiny model's tensors in the order of its state dict (torch.nn.Sequential(Embedding, Linear)).
MODEL_TENSORS: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("0.weight", (VOCAB, EMBEDDING)), ("1.weight", (VOCAB, EMBEDDING)), ("1.bias", (VOCAB,)))


def base_weights(seed: int = 0) -> bytes:
    """The base weights as a safetensors file (F32, little-endian): deterministic, so every run reads the same
    model."""
    rng = random.Random(seed)
    header: dict[str, Any] = {"__metadata__": {"format": "pt", "model": "gpu-platform acceptance next-byte"}}
    data = bytearray()
    for name, shape in MODEL_TENSORS:
        count = 1
        for n in shape:
            count *= n
        begin = len(data)
        data += struct.pack(f"<{count}f", *(rng.uniform(-0.1, 0.1) for _ in range(count)))
        header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [begin, len(data)]}
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)  # the data starts 8-byte aligned
    return struct.pack("<Q", len(raw)) + raw + bytes(data)


def read_safetensors(blob: bytes) -> dict[str, tuple[str, tuple[int, ...], bytes]]:
    """name -> (dtype, shape, raw bytes) of a safetensors file; ValueError when it is not one."""
    if len(blob) < 8:
        raise ValueError(f"a safetensors file has an 8-byte header length; this one has {len(blob)} bytes")
    (n,) = struct.unpack("<Q", blob[:8])
    if 8 + n > len(blob):
        raise ValueError(f"the safetensors header says {n} bytes; the file has {len(blob) - 8} after its length")
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    out: dict[str, tuple[str, tuple[int, ...], bytes]] = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        begin, end = t["data_offsets"]
        if not 0 <= begin <= end <= len(data):
            raise ValueError(f"tensor {name!r}: data_offsets {begin}..{end} outside the {len(data)} data bytes")
        out[name] = (t["dtype"], tuple(t["shape"]), bytes(data[begin:end]))
    return out


def sample_text(size: int, seed: int = 0) -> bytes:
    """A deterministic dataset sample for `seed` mode: words of a small vocabulary, so the model has something to
    learn and every run reads the same bytes."""
    rng = random.Random(seed)
    words = ["queue", "quota", "pool", "node", "gpu", "team", "job", "pod", "train", "step", "checkpoint", "restore"]
    out = bytearray()
    while len(out) < size:
        out += (" ".join(rng.choice(words) for _ in range(12)) + ".\n").encode()
    return bytes(out[:size])


# ---------------------------------------------------------------------------------------------------
# The run (torch and boto3 from here on)


def _s3(config: Config) -> Any:
    import boto3
    from botocore.config import Config as BotoConfig

    # An S3-compatible server (the local cluster's) is addressed by path, not by virtual-host bucket names.
    boto = BotoConfig(s3={"addressing_style": "path"}) if config.endpoint else None
    return boto3.client("s3", endpoint_url=config.endpoint, config=boto)


def _model() -> Any:
    import torch

    return torch.nn.Sequential(torch.nn.Embedding(VOCAB, EMBEDDING), torch.nn.Linear(EMBEDDING, VOCAB))


def _get(s3: Any, bucket: str, key: str) -> tuple[bytes, float]:
    start = time.monotonic()
    body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    return body, time.monotonic() - start


def _list(s3: Any, bucket: str, prefix: str) -> list[str]:
    keys: list[str] = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys += [o["Key"] for o in page.get("Contents", [])]
    return keys


SAMPLE_BYTES = 2**20


def seed(config: Config, size: int = SAMPLE_BYTES) -> None:
    """Write the dataset sample and the base weights the test reads."""
    s3 = _s3(config)
    s3.put_object(Bucket=config.bucket, Key=config.dataset_key, Body=sample_text(size))
    s3.put_object(Bucket=config.bucket, Key=config.weights_key, Body=base_weights())
    emit("done", mode="seed", bucket=config.bucket, dataset_key=config.dataset_key, weights_key=config.weights_key)


def _load_weights(model: Any, blob: bytes) -> None:
    import torch

    tensors = read_safetensors(blob)
    state = {}
    for name, (dtype, shape, raw) in tensors.items():
        if dtype != "F32":
            raise ValueError(f"tensor {name!r} is {dtype}; the acceptance model's weights are F32")
        state[name] = torch.frombuffer(bytearray(raw), dtype=torch.float32).reshape(shape)
    model.load_state_dict(state)


def interface_of(address: str) -> str | None:
    """The network interface holding ADDRESS (SIOCGIFADDR on each: linux/sockios.h), for gloo, which otherwise
    picks the address its host name resolves to and falls back to loopback when it resolves to none."""
    import fcntl
    import socket

    for _, name in socket.if_nameindex():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            try:
                raw = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))
            except OSError:
                continue
        if socket.inet_ntoa(raw[20:24]) == address:
            return name
    return None


def _coordinator(config: Config, s3: Any) -> str:
    """The first pod's address: its DNS name, or (RENDEZVOUS=s3) the address it publishes in the bucket."""
    if config.rendezvous == "dns" or config.world == 1:
        return config.coordinator
    key = rendezvous_key(config.checkpoint_prefix, config.attempt)
    if config.rank == 0:
        s3.put_object(Bucket=config.bucket, Key=key, Body=str(config.pod_ip).encode())
        return str(config.pod_ip)
    deadline = time.monotonic() + config.rendezvous_timeout_s
    while True:
        try:
            return s3.get_object(Bucket=config.bucket, Key=key)["Body"].read().decode().strip()
        except s3.exceptions.NoSuchKey:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the first pod did not publish its address at {key} within "
                                   f"{config.rendezvous_timeout_s}s") from None
            time.sleep(0.5)


def run(config: Config) -> int:
    import datetime

    import torch
    import torch.distributed as dist

    rank = config.rank
    torch.set_num_threads(config.threads)
    cuda = torch.cuda.is_available()
    backend = "nccl" if cuda else "gloo"
    device = torch.device("cuda", 0) if cuda else torch.device("cpu")
    emit("start", rank=rank, world=config.world, backend=backend, torch=torch.__version__, attempt=config.attempt,
         pod_ip=config.pod_ip)
    phase = "data-pull"
    try:
        s3 = _s3(config)
        dataset, data_s = _get(s3, config.bucket, config.dataset_key)
        weights, weights_s = _get(s3, config.bucket, config.weights_key)
        emit("data", rank=rank, bytes=len(dataset) + len(weights), seconds=round(data_s + weights_s, 6),
             dataset_bytes=len(dataset), weights_bytes=len(weights), dataset_key=config.dataset_key,
             weights_key=config.weights_key)
        if len(dataset) <= config.seq_len + 1:
            raise ValueError(f"the dataset sample has {len(dataset)} bytes, fewer than a sequence of {config.seq_len + 1}")

        phase = "allreduce"
        if backend == "gloo" and config.pod_ip and not os.environ.get("GLOO_SOCKET_IFNAME"):
            interface = interface_of(config.pod_ip)
            if interface:
                os.environ["GLOO_SOCKET_IFNAME"] = interface
        coordinator = _coordinator(config, s3)
        dist.init_process_group(backend, init_method=f"tcp://{coordinator}:{config.port}", rank=rank,
                                world_size=config.world, timeout=datetime.timedelta(seconds=config.rendezvous_timeout_s))
        elements = config.message_bytes // 4
        tensor = torch.full((elements,), float(rank + 1), dtype=torch.float32, device=device)
        for _ in range(2):  # warm-up: connections, buffers
            dist.all_reduce(tensor)
        iterations, total = 5, 0.0
        for _ in range(iterations):  # each timed alone, the refill outside the clock
            tensor.fill_(float(rank + 1))
            if cuda:
                torch.cuda.synchronize()
            start = time.monotonic()
            dist.all_reduce(tensor)
            if cuda:
                torch.cuda.synchronize()
            total += time.monotonic() - start
        seconds = total / iterations
        expected = config.world * (config.world + 1) / 2
        correct = bool(torch.all(tensor == expected).item())
        emit("allreduce", rank=rank, ranks=config.world, backend=backend, bytes=elements * 4, seconds=round(seconds, 6),
             algbw_gb_per_s=round(algbw_gb_per_s(elements * 4, seconds), 6),
             busbw_gb_per_s=round(busbw_gb_per_s(elements * 4, seconds, config.world), 6), correct=correct)
        del tensor

        phase = "restore"
        model = _model()
        _load_weights(model, weights)
        model = model.to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        first, trained_before = 1, 0.0
        latest = latest_checkpoint(_list(s3, config.bucket, config.checkpoint_prefix), config.checkpoint_prefix)
        if latest is not None:
            blob, restore_s = _get(s3, config.bucket, latest[0])
            state = torch.load(io.BytesIO(blob), map_location=device)
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            first = int(state["step"]) + 1
            trained_before = float(state.get("trained_s", 0.0))
            emit("restore", rank=rank, step=int(state["step"]), key=latest[0], bytes=len(blob), seconds=round(restore_s, 6),
                 trained_s=round(trained_before, 3))
        else:
            emit("restore", rank=rank, step=0, key=None, bytes=0, seconds=0.0)

        phase = "train"
        ddp = torch.nn.parallel.DistributedDataParallel(model) if config.world > 1 else model
        data = torch.frombuffer(bytearray(dataset), dtype=torch.uint8).long()
        rng = random.Random(rank * 1_000_003 + first)
        loss_fn = torch.nn.CrossEntropyLoss()
        step, tokens, samples, started = first - 1, 0, 0, time.monotonic()
        last_progress = last_checkpoint = started
        while True:
            # Every rank stops at the same step (a rank that stopped alone would leave the others waiting in the
            # gradients' all-reduce): the window is over when it is over for any rank. The window counts the
            # training the checkpoint it resumed from had done.
            trained = trained_before + time.monotonic() - started
            over = torch.tensor([1.0 if trained >= config.window_s else 0.0], device=device)
            if config.world > 1:
                dist.all_reduce(over, op=dist.ReduceOp.MAX)
            if over.item() > 0:
                break
            step += 1
            offsets = [rng.randrange(0, len(data) - config.seq_len - 1) for _ in range(config.batch)]
            x = torch.stack([data[o:o + config.seq_len] for o in offsets]).to(device)
            y = torch.stack([data[o + 1:o + config.seq_len + 1] for o in offsets]).to(device)
            optimizer.zero_grad()
            loss = loss_fn(ddp(x).reshape(-1, VOCAB), y.reshape(-1))
            loss.backward()
            optimizer.step()
            tokens += config.batch * config.seq_len
            samples += config.batch
            now = time.monotonic()
            if now - last_progress >= PROGRESS_SECONDS:
                last_progress = now
                emit("train", rank=rank, step=step, loss=round(float(loss.item()), 6),
                     step_time_s=round((now - started) / (step - first + 1), 6),
                     tokens_per_s=round(tokens / (now - started), 3))
            if rank == 0 and now - last_checkpoint >= config.checkpoint_seconds:
                last_checkpoint = now
                buffer = io.BytesIO()
                torch.save({"step": step, "trained_s": trained_before + now - started, "model": model.state_dict(),
                            "optimizer": optimizer.state_dict()}, buffer)
                key = checkpoint_key(config.checkpoint_prefix, step)
                start = time.monotonic()
                try:
                    s3.put_object(Bucket=config.bucket, Key=key, Body=buffer.getvalue())
                except Exception as err:  # noqa: BLE001 - reported, and training goes on
                    emit("checkpoint", rank=rank, step=step, key=key, bytes=buffer.tell(), ok=False,
                         seconds=round(time.monotonic() - start, 6), message=f"{type(err).__name__}: {err}")
                else:
                    emit("checkpoint", rank=rank, step=step, key=key, bytes=buffer.tell(), ok=True,
                         seconds=round(time.monotonic() - start, 6))
        elapsed = time.monotonic() - started
        steps = step - first + 1
        emit("done", rank=rank, first_step=first, last_step=step, steps=steps, tokens=tokens, samples=samples,
             seconds=round(elapsed, 6), trained_s=round(trained_before + elapsed, 3), step_time_s=round(elapsed / steps, 6) if steps else None,
             tokens_per_s=round(tokens / elapsed, 3) if elapsed > 0 else None)
        if config.world > 1:
            dist.destroy_process_group()
        return 0
    except Exception as err:  # noqa: BLE001 - every failure is reported as an event, then fails the pod
        emit("error", rank=rank, phase=phase, message=f"{type(err).__name__}: {err}")
        return 1


def main(argv: list[str]) -> int:
    mode = argv[1] if len(argv) > 1 else "run"
    if mode not in ("run", "seed"):
        print(f"usage: {argv[0]} [run|seed] (got {mode!r})", file=sys.stderr)
        return 2
    try:
        config = Config.from_env(os.environ, seeding=mode == "seed")
    except ConfigError as err:
        emit("error", rank=None, phase="config", message=str(err))
        return 2
    if mode == "seed":
        seed(config)
        return 0
    return run(config)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
