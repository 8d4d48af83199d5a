"""The local cluster's data path: a real S3-compatible object store (SeaweedFS's `weed server` with its S3 gateway,
scripts/tools/seaweedfs.sh) where EKS has a team bucket reached through Pod Identity (docs/data-path.md).

It listens on the real node's bridge address, the one address the node's pods reach (localcluster/realnode.py: no
route off the machine), so it starts after the real node. Each team of the stack gets a bucket named as on EKS
(`<LOCAL_DATA_BUCKET_PREFIX>-<team>`) and two identities of its own: read-write on its bucket only (what the
team's pods get, in the Secret LOCAL_DATA_SECRET of its namespace) and read-only but for its scratch/ prefix (for
a test that breaks checkpoint writes on purpose: the gang still meets through scratch/). A key of one team reading another team's bucket gets S3's AccessDenied from the
server itself, as the team role's policy gives on EKS. The platform's admin identity makes the buckets and seeds
each with the acceptance workload's dataset sample and base weights (workloads/acceptance/train.py `seed`).

What a client needs is written to <state>/object-store/store.json (endpoint, buckets, keys; mode 0600), which
`python -m platform_cli acceptance` reads (`load`).

    python -m localcluster.objectstore start --stack STACK --state DIR [--port PORT]
    python -m localcluster.objectstore stop --state DIR
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Sequence

from gpu_platform import conventions as cv
from gpu_platform.errors import InputError
from gpu_platform.stack_files import load_plan

from .realnode import Layout
from .toolcache import BIN

DIR_NAME = "object-store"
STORE_FILE = "store.json"
# The server's ports: master, volume, filer, S3 at BASE..BASE+3, their gRPC ports 10000 above (weed's default
# offset), all below the kernel's ephemeral range (32768) so no client connection holds one.
DEFAULT_PORT = 18330
READY_TIMEOUT_S = 90
ADMIN = "platform-admin"
WORKLOAD = Path(__file__).resolve().parents[1] / "workloads" / "acceptance" / "train.py"


class ObjectStoreError(InputError):
    """The object store cannot start or be reached, with the reason."""


@dataclass(frozen=True)
class Keys:
    access_key: str
    secret_key: str


@dataclass(frozen=True)
class Store:
    """What a client of the local data path needs (store.json)."""

    endpoint: str
    buckets: dict[str, str]            # team -> bucket
    team_keys: dict[str, Keys]         # team -> read-write on its bucket
    read_only_keys: dict[str, Keys]    # team -> read-only on its bucket, but for scratch/
    admin: Keys

    def to_json(self) -> dict[str, Any]:
        keys = lambda d: {t: vars(k) for t, k in d.items()}  # noqa: E731
        return {"endpoint": self.endpoint, "buckets": self.buckets, "team_keys": keys(self.team_keys),
                "read_only_keys": keys(self.read_only_keys), "admin": vars(self.admin)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Store:
        keys = lambda d: {t: Keys(**k) for t, k in d.items()}  # noqa: E731
        return cls(data["endpoint"], dict(data["buckets"]), keys(data["team_keys"]), keys(data["read_only_keys"]),
                   Keys(**data["admin"]))


def store_dir(state: Path) -> Path:
    return state / DIR_NAME


def load(state: Path) -> Store | None:
    """The running store of the cluster whose state directory is STATE, or None when it has none."""
    path = store_dir(state) / STORE_FILE
    if not path.is_file():
        return None
    return Store.from_json(json.loads(path.read_text()))


def identities(buckets: dict[str, str], team_keys: dict[str, Keys], read_only_keys: dict[str, Keys],
               admin: Keys) -> dict[str, Any]:
    """SeaweedFS's static S3 identities (`-s3.config`): the admin, and per team read-write, and read-only but for
    writes under scratch/, on its own bucket only (actions scoped `Action:bucket` or `Action:bucket/prefix/*`:
    seaweedfs weed/s3api/auth_credentials.go Identity.CanDo)."""
    out: list[dict[str, Any]] = [{"name": ADMIN, "credentials": [{"accessKey": admin.access_key,
                                                                   "secretKey": admin.secret_key}],
                                  "actions": ["Admin", "Read", "List", "Tagging", "Write"]}]
    for team, bucket in buckets.items():
        for suffix, keys, actions in (("", team_keys[team], ("Read", "List", "Tagging", "Write")),
                                      ("-read-only", read_only_keys[team], ("Read", "List"))):
            scratch = [f"Write:{bucket}/{cv.SCRATCH_PREFIX}*"] if suffix else []
            out.append({"name": f"team-{team}{suffix}",
                        "credentials": [{"accessKey": keys.access_key, "secretKey": keys.secret_key}],
                        "actions": [f"{a}:{bucket}" for a in actions] + scratch})
    return {"identities": out}


def _keys() -> Keys:
    return Keys(secrets.token_hex(10).upper(), secrets.token_urlsafe(30))


def server_args(data: Path, address: str, port: int, config: Path) -> list[str]:
    """`weed server` with a master, a volume server, a filer and the S3 gateway in one process, on ADDRESS only,
    the optional listeners off (Iceberg and Lance catalogs), no telemetry, small volumes."""
    return ["server", f"-dir={data}", f"-ip={address}", f"-ip.bind={address}",
            f"-master.port={port}", f"-volume.port={port + 1}", "-filer", f"-filer.port={port + 2}",
            "-s3", f"-s3.port={port + 3}", f"-s3.config={config}", "-s3.port.iceberg=0", "-s3.port.lance=0",
            f"-filer.localSocket={data.parent / 'filer.sock'}", f"-s3.localSocket={data.parent / 's3.sock'}",
            "-master.telemetry=false", "-master.volumeSizeLimitMB=64", "-volume.max=16"]


def _train() -> ModuleType:
    spec = importlib.util.spec_from_file_location("acceptance_train", WORKLOAD)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def s3_client(endpoint: str, keys: Keys) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=keys.access_key,
                        aws_secret_access_key=keys.secret_key, region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 2}))


def _wait_ready(endpoint: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ObjectStoreError(f"weed exited {proc.returncode} before its S3 gateway answered; its log "
                                   f"{log} ends:\n{_tail(log)}")
        try:
            urllib.request.urlopen(endpoint, timeout=2)
            return
        except urllib.error.HTTPError:
            return  # an S3 error document: the gateway answers
        except OSError:
            time.sleep(0.5)
    raise ObjectStoreError(f"weed's S3 gateway did not answer at {endpoint} within {READY_TIMEOUT_S}s; its log "
                           f"{log} ends:\n{_tail(log)}")


def _tail(log: Path, lines: int = 15) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() else "(no log)"


def start(stack: str, state: Path, port: int = DEFAULT_PORT) -> Store:
    """Start the store for the stack's teams (stopping one left running), make and seed the buckets, write
    store.json; the store."""
    stop(state)
    weed = str(BIN / "weed") if (BIN / "weed").exists() else shutil.which("weed") or str(BIN / "weed")
    if not Path(weed).exists():
        raise ObjectStoreError("weed is not built: run scripts/tools/seaweedfs.sh")
    layout = Layout(state)
    address = layout.node_ip
    if subprocess.run(["ip", "-o", "-4", "addr", "show", "dev", layout.bridge], capture_output=True,
                      text=True).stdout.find(f" {address}/") < 0:
        raise ObjectStoreError(f"the real node's bridge {layout.bridge} with {address} is not up: the object store "
                               "serves the real node's pods, so it starts after the real node (LOCAL_CLUSTER_REAL_NODE)")
    plan = load_plan(stack, None)[1]
    buckets = {t.name: cv.team_bucket_name(cv.LOCAL_DATA_BUCKET_PREFIX, t.name) for t in plan.teams}
    team_keys = {t: _keys() for t in buckets}
    read_only = {t: _keys() for t in buckets}
    admin = _keys()
    d = store_dir(state)
    (d / "data").mkdir(parents=True, exist_ok=True)
    config = d / "s3.json"
    config.write_text(json.dumps(identities(buckets, team_keys, read_only, admin), indent=1))
    config.chmod(0o600)
    log = d / "weed.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([weed, *server_args(d / "data", address, port, config)], stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    (d / "weed.pid").write_text(f"{proc.pid}\n")
    endpoint = f"http://{address}:{port + 3}"
    _wait_ready(endpoint, proc, log)
    store = Store(endpoint, buckets, team_keys, read_only, admin)
    seed(store)
    path = d / STORE_FILE
    path.write_text(json.dumps(store.to_json(), indent=1))
    path.chmod(0o600)
    return store


def seed(store: Store) -> None:
    """Each team's bucket, with the workload's dataset sample and base weights (as its `seed` mode writes them).
    The filer may take a moment to take the first bucket after the gateway answers: a few tries."""
    train = _train()
    s3 = s3_client(store.endpoint, store.admin)
    for bucket in store.buckets.values():
        for attempt in range(20):
            try:
                s3.create_bucket(Bucket=bucket)
                break
            except s3.exceptions.BucketAlreadyOwnedByYou:
                break
            except Exception:  # noqa: BLE001 - retried, then raised
                if attempt == 19:
                    raise
                time.sleep(0.5)
        s3.put_object(Bucket=bucket, Key=train.DEFAULT_DATASET_KEY, Body=train.sample_text(train.SAMPLE_BYTES))
        s3.put_object(Bucket=bucket, Key=train.DEFAULT_WEIGHTS_KEY, Body=train.base_weights())


def stop(state: Path) -> None:
    """Stop the store's process (SIGTERM, then SIGKILL after 10 s) and remove its data."""
    d = store_dir(state)
    pid_file = d / "weed.pid"
    if pid_file.exists():
        pid = int(pid_file.read_text().strip() or 0)
        if pid and _is_weed(pid):
            os.killpg(pid, signal.SIGTERM)
            deadline = time.monotonic() + 10
            while _is_weed(pid) and time.monotonic() < deadline:
                time.sleep(0.2)
            if _is_weed(pid):
                os.killpg(pid, signal.SIGKILL)
    shutil.rmtree(d, ignore_errors=True)


def _is_weed(pid: int) -> bool:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return bool(argv) and Path(argv[0].decode()).name == "weed" and stat[0] != "Z"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m localcluster.objectstore", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("start", help="start the store on the real node's bridge, make and seed the team buckets")
    s.add_argument("--stack", required=True, help="a stack name or the path of a stack file (its teams)")
    s.add_argument("--state", required=True, type=Path, help="the cluster's state directory (LOCAL_CLUSTER_DIR)")
    s.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"first of four ports (default {DEFAULT_PORT}); "
                                                                  "S3 is the fourth")
    t = sub.add_parser("stop", help="stop the store and remove its data")
    t.add_argument("--state", required=True, type=Path)
    args = p.parse_args(argv)
    try:
        if args.command == "start":
            store = start(args.stack, args.state.resolve(), args.port)
            print(f"object store: S3 at {store.endpoint}, buckets {', '.join(store.buckets.values())}",
                  file=sys.stderr)
        else:
            stop(args.state.resolve())
        return 0
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
