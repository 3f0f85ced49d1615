"""Retries that respect the server and the user: Retry-After per request, overload, Ctrl-C in a cooldown."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from counterbench.models.base import GenerationConfig
from counterbench.options import RetryPolicy
from counterbench.run import run_prompts
from counterbench.run.results import load_results
from counterbench.table_files import write_table
from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread
from tests.run.conftest import PER_ANSWER, fake_model, make_prompts, subprocess_env

MIXED = ("429", "503", "529", "500", "reset", "malformed")


def _timed_run(tmp_path: Path, name: str, config: FaultConfig, n: int) -> tuple[float, dict[str, object]]:
    with run_in_thread(FakeOpenAIServer(config)) as server:
        started = time.monotonic()
        summary = run_prompts(make_prompts(n), [fake_model(server)], store=tmp_path / f"{name}.db", concurrency=16,
                              retry=RetryPolicy(max_attempts=12))
        elapsed = time.monotonic() - started
    results = load_results(tmp_path / f"{name}.db")
    assert len(results) == n and (results["status"] == "ok").all(), results["status"].value_counts()
    return elapsed, summary.totals


@pytest.mark.alone  # a ratio of two timed runs: another test beside one of them only would skew it
def test_thirty_percent_mixed_faults_cost_at_most_three_times_the_fault_free_time(tmp_path: Path) -> None:
    n = 1200
    clean, _ = _timed_run(tmp_path, "clean", FaultConfig(latency_ms=20), n)
    faulty, totals = _timed_run(
        tmp_path, "faulty", FaultConfig(latency_ms=20, fault_rate=0.3, fault_kinds=MIXED, retry_after="0.05", seed=3), n
    )
    assert int(totals["retries"]) > 0.3 * n  # the faults happened, and were retried
    assert faulty <= 3 * clean, f"fault-free {clean:.2f} s, with 30% faults {faulty:.2f} s"


def test_a_refused_request_waits_alone_for_its_retry_after(tmp_path: Path) -> None:
    """One prompt refused with Retry-After: 1.5 must not hold back the others."""
    prompts = make_prompts(40)
    prompts.loc[0, "user"] += " [[fault:429:1]]"
    with run_in_thread(FakeOpenAIServer(FaultConfig(latency_ms=5, retry_after="1.5"))) as server:
        started = time.monotonic()
        run_prompts(prompts, [fake_model(server)], store=tmp_path / "s.db", concurrency=4,
                    retry=RetryPolicy(max_attempts=3))
        elapsed = time.monotonic() - started
    results = load_results(tmp_path / "s.db").sort_values("finished_at")
    assert (results["status"] == "ok").all()
    assert results.iloc[-1]["prompt_id"] == "p_00000"  # the refused one finished last, after its cooldown
    waited = (results.iloc[-1]["finished_at"] - results.iloc[-2]["finished_at"]).total_seconds()
    assert waited > 0.5 and elapsed >= 1.5  # the others were done well before its Retry-After ran out


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_a_long_retry_after_stops_at_once_with_everything_committed(
    tmp_path: Path, sig: signal.Signals
) -> None:
    prompts = make_prompts(24)
    prompts.loc[prompts.index % 3 == 0, "user"] += " [[fault:429]]"  # refused with Retry-After: 100, always
    table = write_table(prompts, tmp_path / "p.parquet")
    store = tmp_path / "cb.db"
    with run_in_thread(FakeOpenAIServer(FaultConfig(latency_ms=2, retry_after="100"))) as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "counterbench.cli", "run", "--prompts", str(table), "--model", fake_model(server),
             "--store", str(store), "--concurrency", "4", "--no-progress"],
            cwd=tmp_path, env=subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        deadline = time.monotonic() + 60
        while server.counters.outcomes["ok"] < 16 or server.counters.outcomes["429"] < 8:
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.02)
        time.sleep(0.3)  # every refused prompt is now in its 100 s cooldown
        sent = time.monotonic()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    assert took < 2.0, f"exit took {took:.2f} s"
    assert proc.returncode == 130, (out, err)
    assert "Resume with:" in out and "counterbench run --prompts" in out
    with sqlite3.connect(store) as conn:
        stored = conn.execute("SELECT count(*) FROM responses WHERE status = 'ok'").fetchone()[0]
        run_status = conn.execute("SELECT status FROM runs").fetchone()[0]
    assert stored == 16 and run_status == "interrupted"


@pytest.mark.parametrize("kinds", [("429", "503", "500"), ("empty",), ("429", "500", "empty", "hang")])
def test_max_cost_holds_with_retries_in_flight_and_billed_retries(tmp_path: Path, kinds: tuple[str, ...]) -> None:
    """The server's own bill never exceeds --max-cost: a request waiting for its retry keeps its share of the
    budget, and an attempt that was billed (an empty reply asked again) is paid before the next one is sent."""
    prices = tmp_path / "prices.yaml"
    prices.write_text('prices:\n  "openai-compatible:*": {input: 0, output: 1000}\n')
    budget = 20 * PER_ANSWER
    config = FaultConfig(latency_ms=20, fault_rate=0.5, fault_kinds=kinds, retry_after="0", seed=7, hang_s=2.0)
    with run_in_thread(FakeOpenAIServer(config)) as server:
        summary = run_prompts(make_prompts(80), [fake_model(server)], store=tmp_path / "s.db", prices=prices,
                              max_cost=budget, concurrency=8, timeout=1.0, config=GenerationConfig(max_tokens=6),
                              retry=RetryPolicy(max_attempts=6, base_delay=0.001, max_delay=0.002))
        outcomes = server.counters.outcomes
        billed = outcomes["ok"] + outcomes["empty"]  # every 200 reply carries usage: the provider's bill
    assert summary.status == "max_cost"
    assert int(summary.totals["retries"]) > 0
    assert billed * PER_ANSWER <= budget + 1e-12, f"the server billed {billed} answers, the budget is 20"
    stored = load_results(tmp_path / "s.db")
    # every billed attempt is accounted for: in the summary and in the stored rows' costs
    assert summary.totals["cost_usd"] == pytest.approx(billed * PER_ANSWER)
    assert stored["cost_usd"].sum() == pytest.approx(billed * PER_ANSWER)
    assert 0 < (stored["status"] == "ok").sum() <= 20
    # a hang (a timeout here) may have been billed: it counts at its worst case, and the two stay within budget
    assert (summary.cost_unsure_usd > 0) == ("hang" in kinds)
    assert summary.totals["cost_usd"] + summary.cost_unsure_usd <= budget + 1e-9
