"""A server-wide ``Retry-After`` (refusals outnumbering the answers) pauses the whole lane, not only the
refused requests; Ctrl-C during that pause still exits at once with everything stored."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

from counterbench.options import RetryPolicy
from counterbench.run import run_prompts
from counterbench.run.limits import AdaptiveLimit
from counterbench.run.results import load_results
from counterbench.table_files import write_table
from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread
from tests.run.conftest import fake_model, make_prompts, subprocess_env


def _wait_for(condition: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.002)


def test_the_limit_pauses_on_a_burst_of_refusals_only() -> None:
    async def scenario() -> None:
        limit = AdaptiveLimit(8, burst=3, window=2.0)
        for _ in range(20):
            limit.on_success()
        limit.on_overload(0.3)  # one prompt refused among answers: nothing pauses
        for _ in range(5):
            limit.on_success()
        limit.on_overload(0.3)
        assert not limit.paused() and limit.pauses == 0
        await asyncio.wait_for(limit.acquire(), 0.01)
        limit.release()

        burst = AdaptiveLimit(8, burst=3, window=2.0)
        burst.on_overload(0.3)
        burst.on_overload(0.3)
        assert not burst.paused()
        burst.on_overload(None)  # a refusal without Retry-After shrinks the limit but does not pause
        assert not burst.paused()
        burst.on_overload(0.3)
        assert burst.paused() and burst.pauses == 1
        started = time.monotonic()
        waiters = [asyncio.ensure_future(burst.acquire()) for _ in range(3)]
        await asyncio.sleep(0.15)
        assert not any(w.done() for w in waiters)
        await asyncio.wait_for(asyncio.gather(*waiters), 1.0)
        assert 0.25 <= time.monotonic() - started < 0.6 and burst.in_flight == 3

        stopped = AdaptiveLimit(8, burst=3)
        for _ in range(3):
            stopped.on_overload(100.0)
        waiter = asyncio.ensure_future(stopped.acquire())
        await asyncio.sleep(0.01)
        assert not waiter.done()
        stopped.close()  # a stopping run does not sit out the pause
        await asyncio.wait_for(waiter, 0.05)

    asyncio.run(scenario())


def test_a_server_wide_retry_after_stops_the_lane_until_it_is_over(tmp_path: Path) -> None:
    n = 3000
    with run_in_thread(FakeOpenAIServer(FaultConfig(latency_ms=3, retry_after="1.5"))) as server:
        counters, config = server.counters, server.config
        seen: dict[str, float] = {}

        def overload_then_recover() -> None:
            _wait_for(lambda: counters.outcomes["ok"] >= 100)
            config.force = "429"  # every request refused with Retry-After: 1.5
            _wait_for(lambda: counters.outcomes["429"] >= 3)
            seen["burst"] = time.monotonic()
            time.sleep(0.1)  # the requests in flight at the burst come back refused
            config.force = None  # the server takes requests again; the client was told to wait 1.5 s
            seen["after_burst"] = counters.requests
            time.sleep(1.1)
            seen["during_wait"] = counters.requests

        watcher = threading.Thread(target=overload_then_recover, daemon=True)
        watcher.start()
        run_prompts(make_prompts(n), [fake_model(server)], store=tmp_path / "s.db", concurrency=8,
                    retry=RetryPolicy(max_attempts=4))
        finished = time.monotonic()
        watcher.join(5)
        refused = counters.outcomes["429"]
    sent_in_wait = seen["during_wait"] - seen["after_burst"]
    assert sent_in_wait <= 8, f"{sent_in_wait} requests sent during the server's Retry-After"
    assert refused <= 16, f"{refused} requests refused: the lane kept sending"
    assert finished - seen["burst"] >= 1.4  # the run went on only after the wait
    results = load_results(tmp_path / "s.db")
    assert len(results) == n and (results["status"] == "ok").all()


def test_ctrl_c_during_a_server_wide_retry_after_exits_at_once(tmp_path: Path) -> None:
    table = write_table(make_prompts(3000), tmp_path / "p.parquet")
    store = tmp_path / "cb.db"
    with run_in_thread(FakeOpenAIServer(FaultConfig(latency_ms=3, retry_after="100"))) as server:
        counters = server.counters
        proc = subprocess.Popen(
            [sys.executable, "-m", "counterbench.cli", "run", "--prompts", str(table), "--model", fake_model(server),
             "--store", str(store), "--concurrency", "8", "--no-progress"],
            cwd=tmp_path, env=subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        _wait_for(lambda: counters.outcomes["ok"] >= 50 or proc.poll() is not None)
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        server.config.force = "429"
        _wait_for(lambda: counters.outcomes["429"] >= 3)
        time.sleep(0.3)
        before = counters.requests
        time.sleep(0.5)
        assert counters.requests - before <= 8  # the lane sits out the 100 s
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
        answered = counters.outcomes["ok"]
    assert took < 2.0, f"exit took {took:.2f} s"
    assert proc.returncode == 130, (out, err)
    assert "Resume with:" in out
    with sqlite3.connect(store) as conn:
        stored = conn.execute("SELECT count(*) FROM responses WHERE status = 'ok'").fetchone()[0]
    assert stored == answered  # every answer the server gave is stored; the refused ones are still pending


def test_a_pause_begun_outside_an_event_loop_still_ends() -> None:
    limit = AdaptiveLimit(4, burst=3)
    for _ in range(3):
        limit.on_overload(0.2)
    assert limit.paused()

    async def wait() -> float:
        started = time.monotonic()
        await asyncio.wait_for(limit.acquire(), 2.0)
        return time.monotonic() - started

    assert 0.1 < asyncio.run(wait()) < 1.0
