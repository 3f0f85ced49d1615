"""Replicas of one model: balanced while all are up; one killed mid-run, the run finishes on the others."""

from __future__ import annotations

import sqlite3
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from counterbench.run import run_prompts
from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread
from tests.run.conftest import FAST_RETRY, make_prompts

N_PROMPTS = 900
KILL_AFTER = 300


def run_with_a_replica_killed(tmp_path: Path, **options: Any) -> tuple[list[int], Any, Path]:
    """Three fake servers behind one model; the third is stopped once ``KILL_AFTER`` requests were made.

    Returns the requests each server had received when the third was stopped, the run summary and the store.
    """
    store = tmp_path / "replicas.db"
    with ExitStack() as stack:
        servers = [stack.enter_context(run_in_thread(FakeOpenAIServer(FaultConfig(latency_ms=10, hang_s=2.0))))
                   for _ in range(3)]
        model = "openai-compatible:" + ",".join(s.base_url for s in servers) + ":fake-model"
        outcome: dict[str, Any] = {}

        def run() -> None:
            try:
                outcome["summary"] = run_prompts(make_prompts(N_PROMPTS), [model], store=store, concurrency=6,
                                                 handle_signals=False, retry=FAST_RETRY, **options)
            except BaseException as err:  # surfaced below
                outcome["error"] = err

        thread = threading.Thread(target=run)
        thread.start()
        deadline = time.monotonic() + 120
        while sum(s.counters.requests for s in servers) < KILL_AFTER and thread.is_alive():
            assert time.monotonic() < deadline, "the run did not start"
            time.sleep(0.005)
        at_kill = [s.counters.requests for s in servers]
        servers[2].stop()
        thread.join(timeout=180)
        assert not thread.is_alive()
    assert "error" not in outcome, outcome.get("error")
    return at_kill, outcome["summary"], store


def assert_balanced(counts: list[int]) -> None:
    mean = sum(counts) / len(counts)
    assert all(abs(c - mean) <= 0.2 * mean for c in counts), counts


def assert_all_answered_once(store: Path) -> None:
    with sqlite3.connect(store) as conn:
        total, distinct = conn.execute("SELECT count(*), count(DISTINCT prompt_id) FROM responses").fetchone()
        statuses = dict(conn.execute("SELECT status, count(*) FROM responses GROUP BY status").fetchall())
    assert total == distinct == N_PROMPTS
    assert statuses == {"ok": N_PROMPTS}


def test_one_replica_killed_mid_run(tmp_path: Path) -> None:
    at_kill, summary, store = run_with_a_replica_killed(tmp_path)
    assert sum(at_kill) < N_PROMPTS, "the replica should die mid-run"
    assert_balanced(at_kill)
    assert summary.complete
    assert_all_answered_once(store)
