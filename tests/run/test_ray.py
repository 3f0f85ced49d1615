"""``--ray`` against a real local Ray instance (one per module): same answers, exactly once, resumable."""

from __future__ import annotations

import importlib.util
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("ray") is None:  # found, not imported: collection stays light in every worker
    pytest.skip("ray is not installed", allow_module_level=True)

from counterbench.models.base import GenerationConfig
from counterbench.prompts import prompts
from counterbench.run import run_prompts
from counterbench.run.ray_exec import RayOptions
from counterbench.run.results import load_results
from counterbench.table_files import write_table
from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread
from tests.run.conftest import FAST_RETRY, PER_ANSWER, cli, fake_model, make_prompts, subprocess_env
from tests.run.test_replicas import (
    N_PROMPTS,
    assert_all_answered_once,
    assert_balanced,
    run_with_a_replica_killed,
)

pytestmark = pytest.mark.slow  # scheduled first (tests/conftest.py)

COMPARED = ["prompt_id", "model", "status", "value", "unit", "response", "finish_reason", "parse_reason",
            "input_tokens", "output_tokens", "cached"]


@pytest.fixture(scope="module")
def ray_address() -> Iterator[str]:
    import ray

    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
    try:
        yield str(ray.get_runtime_context().gcs_address)
    finally:
        ray.shutdown()


def _same_answers(a: Path, b: Path) -> None:
    left = load_results(a)[COMPARED].sort_values(["model", "prompt_id"]).reset_index(drop=True)
    right = load_results(b)[COMPARED].sort_values(["model", "prompt_id"]).reset_index(drop=True)
    assert len(left) == len(right) > 0
    assert left.equals(right)


def _rows(store: Path) -> tuple[int, int, dict[str, int]]:
    with sqlite3.connect(store) as conn:
        total, distinct = conn.execute("SELECT count(*), count(DISTINCT prompt_id) FROM responses").fetchone()
        statuses = dict(conn.execute("SELECT status, count(*) FROM responses GROUP BY status").fetchall())
    return int(total), int(distinct), statuses


def _stored(store: Path) -> int:
    if not store.exists():
        return 0
    try:
        with sqlite3.connect(store, timeout=5) as conn:
            return int(conn.execute("SELECT count(*) FROM responses").fetchone()[0])
    except sqlite3.Error:
        return 0


def _worker_pids() -> list[int]:
    """Processes of live ModelWorker actors (Ray names them ``ray::ModelWorker...``)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if cmdline.startswith(b"ray::ModelWorker"):
                pids.append(int(entry.name))
    return pids


def _wait_for(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_quick_preset_on_sim_biased_is_identical_with_ray(ray_address: str, tmp_path: Path) -> None:
    table = prompts("rupeebias", preset="quick")
    plain = run_prompts(table, ["sim:biased"], store=tmp_path / "plain.db", handle_signals=False)
    on_ray = run_prompts(table, ["sim:biased"], store=tmp_path / "ray.db", handle_signals=False,
                         ray=RayOptions(actors=2))
    assert plain.complete and on_ray.complete
    assert on_ray.totals["done"] == len(table) == 540
    _same_answers(tmp_path / "plain.db", tmp_path / "ray.db")
    total, distinct, _ = _rows(tmp_path / "ray.db")
    assert total == distinct == 540
    again = run_prompts(table, ["sim:biased"], store=tmp_path / "ray.db", handle_signals=False, ray=True)
    assert again.models["sim:biased"]["already_done"] == 540 and again.totals["sent"] == 0


def test_quick_preset_on_the_fake_server_through_the_cli(ray_address: str, fake_server: Any, tmp_path: Path) -> None:
    model = fake_model(fake_server)
    common = ["run", "rupeebias", "--preset", "quick", "--model", model, "--no-progress", "--concurrency", "8"]
    plain = cli(*common, "--store", str(tmp_path / "plain.db"), cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    before = fake_server.counters.requests
    on_ray = cli(*common, "--store", str(tmp_path / "ray.db"), "--ray", ray_address, "--ray-actors", "2",
                 cwd=tmp_path)
    assert on_ray.returncode == 0, on_ray.stderr
    assert fake_server.counters.requests - before == 540  # every prompt sent once, through the actors
    _same_answers(tmp_path / "plain.db", tmp_path / "ray.db")


def test_a_killed_worker_is_restarted_and_every_prompt_stored_once(ray_address: str, tmp_path: Path) -> None:
    sim = tmp_path / "slow.yaml"
    sim.write_text("extends: biased\nlatency_ms: 15\n")
    n = 600
    store = tmp_path / "kill.db"
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["summary"] = run_prompts(make_prompts(n), [f"sim:{sim}"], store=store, handle_signals=False,
                                             concurrency=4, ray=RayOptions(actors=2, batch=8))
        except BaseException as err:  # surfaced below
            outcome["error"] = err

    thread = threading.Thread(target=run)
    thread.start()
    _wait_for(lambda: _stored(store) >= 40 and len(_worker_pids()) == 2, 60, "the workers to answer")
    victim = _worker_pids()[0]
    os.kill(victim, signal.SIGKILL)
    assert _stored(store) < n and thread.is_alive(), "the kill should land mid-run"
    _wait_for(lambda: victim not in _worker_pids() and len(_worker_pids()) == 2, 60, "Ray to restart the worker")
    thread.join(timeout=120)
    assert not thread.is_alive()
    assert "error" not in outcome, outcome.get("error")
    assert outcome["summary"].complete
    total, distinct, statuses = _rows(store)
    assert total == distinct == n
    assert "error" not in statuses


def _slow_run_args(tmp_path: Path, ray_address: str, n: int) -> tuple[list[str], Path]:
    sim = tmp_path / "slow.yaml"
    sim.write_text("extends: biased\nlatency_ms: 10\n")
    table = write_table(make_prompts(n), tmp_path / "p.parquet")
    store = tmp_path / "driver.db"
    args = ["run", "--prompts", str(table), "--model", f"sim:{sim}", "--store", str(store), "--concurrency", "2",
            "--no-progress", "--ray", ray_address, "--ray-actors", "2"]
    return args, store


def _start(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "counterbench.cli", *args], cwd=cwd, env=subprocess_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_ctrl_c_stops_cleanly_a_killed_driver_resumes(ray_address: str, tmp_path: Path) -> None:
    """Ctrl-C: exit 130, the workers gone; then kill -9 the driver of a second run; a third run finishes."""
    n = 500
    args, store = _slow_run_args(tmp_path, ray_address, n)
    proc = _start(args, tmp_path)
    try:
        _wait_for(lambda: _stored(store) >= 40 or proc.poll() is not None, 90, "answers in the store")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Interrupted" in out and "Traceback" not in err
    _wait_for(lambda: not _worker_pids(), 30, "the workers to be gone")
    interrupted = _stored(store)
    assert 0 < interrupted < n

    proc = _start(args, tmp_path)
    try:
        _wait_for(lambda: _stored(store) >= interrupted + 40 or proc.poll() is not None, 90, "more answers")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    kept = _stored(store)
    assert interrupted < kept < n
    _wait_for(lambda: not _worker_pids(), 30, "Ray to end the dead driver's workers")

    done = cli(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"{kept:,} already stored" in done.stdout
    total, distinct, statuses = _rows(store)
    assert total == distinct == n and "error" not in statuses
    with sqlite3.connect(store) as conn:
        runs = dict(conn.execute("SELECT status, count(*) FROM runs GROUP BY status").fetchall())
    assert runs == {"interrupted": 1, "killed": 1, "completed": 1}


def test_fake_server_errors_are_retried_inside_the_actors(ray_address: str, fake_server: Any,
                                                          tmp_path: Path) -> None:
    fake_server.config.fault_rate = 0.3
    fake_server.config.fault_kinds = ("429", "500", "reset", "malformed")
    summary = run_prompts(make_prompts(120), [fake_model(fake_server)], store=tmp_path / "f.db",
                          handle_signals=False, retry=FAST_RETRY, ray=RayOptions(actors=2))
    assert summary.complete and summary.totals["retries"] > 0
    total, distinct, statuses = _rows(tmp_path / "f.db")
    assert total == distinct == 120 and statuses == {"ok": 120}


class _TimedServer(FakeOpenAIServer):
    """The fake server, also noting when each request arrived (the provider's view of a rate limit)."""

    def __init__(self) -> None:
        super().__init__(FaultConfig())
        self.arrivals: list[float] = []

    async def chat(self, request: Any) -> Any:
        self.arrivals.append(time.monotonic())
        return await super().chat(request)


def test_rpm_holds_across_actors_at_the_server(ray_address: str, tmp_path: Path) -> None:
    """--rpm 600 over 2 actors; the guarantee checked over 3-second windows (30 requests = 600 × 3/60).

    ``rate_window_s=3`` makes the limiter guarantee the same rate over 3 s windows instead of 60 s:
    a stricter condition (a 60 s window is twenty disjoint 3 s ones, each holding at most 30) that
    takes seconds instead of minutes to check. The limiter at the real 60 s scale is tested on a
    simulated clock (test_ray_limiter.py) and in real time by benchmarks/ray_rpm.py.
    """
    window, limit = 3.0, 30
    with run_in_thread(_TimedServer()) as server:
        summary = run_prompts(make_prompts(60), [fake_model(server)], store=tmp_path / "rpm.db",
                              handle_signals=False, concurrency=16, rpm=600,
                              ray=RayOptions(actors=2, rate_window_s=window))
        arrivals = sorted(server.server.arrivals)  # type: ignore[attr-defined]
    assert summary.complete and len(arrivals) == 60
    counts = [sum(1 for t in arrivals[i:] if t < start + window) for i, start in enumerate(arrivals)]
    assert max(counts) <= limit, max(counts)
    assert max(counts) >= 0.7 * limit  # the limit binds: two unlimited actors would send all 60 at once


def test_replicas_through_ray_one_killed_mid_run(ray_address: str, tmp_path: Path) -> None:
    at_kill, summary, store = run_with_a_replica_killed(tmp_path, ray=RayOptions(actors=2))
    assert sum(at_kill) < N_PROMPTS, "the replica should die mid-run"
    assert_balanced(at_kill)
    assert summary.complete
    assert_all_answered_once(store)


def test_max_cost_holds_with_ray(ray_address: str, fake_server: Any, tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text('prices:\n  "openai-compatible:*": {input: 1000, output: 1000}\n')
    summary = run_prompts(make_prompts(30), [fake_model(fake_server)], store=tmp_path / "c.db", prices=prices,
                          max_cost=0.5, concurrency=4, handle_signals=False, ray=RayOptions(actors=2))
    assert summary.status == "max_cost"
    assert 0 < summary.totals["cost_usd"] <= 0.5
    total, distinct, _ = _rows(tmp_path / "c.db")
    assert 0 < total == distinct < 30


def test_max_cost_holds_with_ray_through_retries_and_billed_re_asks(ray_address: str, tmp_path: Path) -> None:
    """Each actor holds its batch to the batch's share of the budget, retries and paid empty replies included."""
    prices = tmp_path / "prices.yaml"
    prices.write_text('prices:\n  "openai-compatible:*": {input: 0, output: 1000}\n')
    budget = 20 * PER_ANSWER
    config = FaultConfig(latency_ms=10, fault_rate=0.5, fault_kinds=("429", "empty"), retry_after="0", seed=7)
    with run_in_thread(FakeOpenAIServer(config)) as server:
        summary = run_prompts(make_prompts(80), [fake_model(server)], store=tmp_path / "c.db", prices=prices,
                              max_cost=budget, concurrency=4, config=GenerationConfig(max_tokens=6),
                              retry=FAST_RETRY, handle_signals=False, ray=RayOptions(actors=2))
        billed = server.counters.outcomes["ok"] + server.counters.outcomes["empty"]
    assert summary.status == "max_cost" and int(summary.totals["retries"]) > 0
    assert billed * PER_ANSWER <= budget + 1e-12, f"the server billed {billed} answers, the budget is 20"
    assert summary.totals["cost_usd"] == pytest.approx(billed * PER_ANSWER)
    assert load_results(tmp_path / "c.db")["cost_usd"].sum() == pytest.approx(billed * PER_ANSWER)
