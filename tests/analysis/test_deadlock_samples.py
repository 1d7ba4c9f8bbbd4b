"""The sample traces, read by the trace reader and released by the model manager's causal stream."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpvis.analysis.deadlock_monitor import DeadlockMonitor
from mpvis.model.manager import ModelManager
from mpvis.tracefile.reader import load_trace, read_header

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"


def monitor(name: str) -> DeadlockMonitor:
    header = read_header(SAMPLES / name)
    model = ModelManager(header)
    mon = DeadlockMonitor(header["nprocs"])
    model.analyzers.append(mon)
    load_trace(SAMPLES / name, model=model)
    return mon


@pytest.mark.parametrize(
    ("name", "kind", "check", "ranks"),
    [
        ("deadlock_recv_recv.jsonl", "p2p", "wait-for", [0, 1]),
        ("deadlock_three_cycle.jsonl", "p2p", "wait-for", [0, 1, 2]),
        ("deadlock_coll_order.jsonl", "collective", "collective-order", [0, 1, 2]),
        ("deadlock_root_mismatch.jsonl", "collective", "collective-args", [0, 1, 2, 3]),
        ("deadlock_finished_barrier.jsonl", "collective", "collective-finished", [0, 1, 2]),
        ("deadlock_lock_cycle.jsonl", "lock", "wait-for", [0, 1]),
        ("deadlock_lock_chain.jsonl", "lock", "wait-for", [0, 1, 2]),
    ],
)
def test_each_deadlock_sample_reports_its_deadlock(
    name: str, kind: str, check: str, ranks: list[int]
) -> None:
    [d] = monitor(name).deadlocks
    assert (d.kind, d.check, d.ranks) == (kind, check, ranks)
    assert ".py:" in d.reason


@pytest.mark.parametrize("name", ["ring.jsonl", "master_worker.jsonl"])
def test_correct_samples_report_nothing(name: str) -> None:
    if not (SAMPLES / name).exists():
        pytest.skip(f"{name} not present")
    assert monitor(name).deadlocks == []
