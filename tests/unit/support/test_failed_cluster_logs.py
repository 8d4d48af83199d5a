"""A failed cluster test keeps its clusters' logs (tests/conftest.py keep_cluster_logs): CI's next failure then
explains itself from the kube-apiserver, Kueue and KWOK logs of the run that failed."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import keep_cluster_logs


def test_every_clusters_logs_are_copied_with_the_failed_tests_named(tmp_path: Path) -> None:
    base = tmp_path / "pytest-7"
    (base / "live0" / "cluster" / "logs").mkdir(parents=True)
    (base / "live0" / "cluster" / "logs" / "kueue.log").write_text("evicted: PodsReadyTimeout\n")
    (base / "worker1" / "logs").mkdir(parents=True)
    (base / "worker1" / "logs" / "kwok.log").write_text("node heartbeat\n")
    kept = keep_cluster_logs(base, tmp_path / "kept", ["tests/live/test_a.py::test_b"])
    assert kept is not None and kept.parent == tmp_path / "kept"
    assert (kept / "live0" / "cluster" / "logs" / "kueue.log").read_text() == "evicted: PodsReadyTimeout\n"
    assert (kept / "worker1" / "logs" / "kwok.log").read_text() == "node heartbeat\n"
    assert (kept / "FAILED").read_text() == "tests/live/test_a.py::test_b\n"


def test_a_session_without_cluster_logs_keeps_nothing(tmp_path: Path) -> None:
    (tmp_path / "base" / "render").mkdir(parents=True)
    assert keep_cluster_logs(tmp_path / "base", tmp_path / "kept", ["t"]) is None
    assert not (tmp_path / "kept").exists()
