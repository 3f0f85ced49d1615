"""``--batch``: prompts through the providers' batch APIs, against the fake batch servers on 127.0.0.1.

The same answers as one at a time, at the batch price; failed, expired and whole failed jobs retried; a
run killed with SIGKILL while it polls resumes without losing or resubmitting anything.
"""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from counterbench.options import RetryPolicy
from counterbench.run.runner import run_prompts
from counterbench.run.summary import format_summary
from counterbench.table_files import write_table
from counterbench.testing._fakecore import run_in_thread
from counterbench.testing.fake_batch import BatchConfig, FakeAnthropicBatchServer, FakeOpenAIBatchServer
from tests.run.conftest import cli, cli_here, make_prompts, one_error_line, subprocess_env

pytestmark = pytest.mark.slow  # scheduled first (tests/conftest.py)

FAST = RetryPolicy(max_attempts=4, base_delay=0.01, max_delay=0.05)
COLUMNS = "prompt_id, status, response, finish_reason, value, unit, input_tokens, output_tokens"


def _rows(store: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(store) as conn:
        return conn.execute(f"SELECT {COLUMNS} FROM responses ORDER BY prompt_id").fetchall()


def _cost(store: Path) -> float:
    with sqlite3.connect(store) as conn:
        return float(conn.execute("SELECT total(cost_usd) FROM responses").fetchone()[0])


def _openai_env(server: object) -> dict[str, str]:
    return {"OPENAI_API_KEY": "sk-test-batch-key", "OPENAI_BASE_URL": server.base_url}  # type: ignore[attr-defined]


def _anthropic_env(server: object) -> dict[str, str]:
    return {"ANTHROPIC_API_KEY": "sk-ant-test-key", "ANTHROPIC_BASE_URL": server.base_url}  # type: ignore[attr-defined]


@pytest.mark.parametrize(("server_class", "model", "env_of"), [
    (FakeOpenAIBatchServer, "openai:gpt-4o-mini", _openai_env),
    (FakeAnthropicBatchServer, "anthropic:claude-haiku-4.5", _anthropic_env),
])
def test_batch_answers_are_the_one_at_a_time_answers_at_half_the_price(
    tmp_path: Path, server_class: type, model: str, env_of: object
) -> None:
    prompts = make_prompts(12)
    with run_in_thread(server_class(batch=BatchConfig(processing_s=0.3))) as server:
        env = env_of(server)  # type: ignore[operator]
        plain = run_prompts(prompts, [model], store=tmp_path / "plain.db", env=env, retry=FAST)
        batch = run_prompts(prompts, [model], store=tmp_path / "batch.db", env=env, retry=FAST, batch=True,
                            batch_size=5, batch_poll=0.2)
        counters = server.server.batch
    assert plain.complete and batch.complete
    assert _rows(tmp_path / "batch.db") == _rows(tmp_path / "plain.db")
    assert len(_rows(tmp_path / "batch.db")) == 12
    assert counters.jobs == 3 and counters.items == 12 and counters.submitted_twice == 0  # 5 + 5 + 2
    assert _cost(tmp_path / "batch.db") == pytest.approx(_cost(tmp_path / "plain.db") / 2)
    assert batch.totals["cost_usd"] == pytest.approx(plain.totals["cost_usd"] / 2, abs=2e-6)  # rounded to 1e-6
    assert batch.models[model]["batch"] is True
    assert "at batch price" in format_summary(batch) and "at batch price" not in format_summary(plain)
    with sqlite3.connect(tmp_path / "batch.db") as conn:
        states = conn.execute("SELECT state, count(*), sum(n_requests) FROM batch_jobs GROUP BY state").fetchall()
    assert states == [("collected", 3, 12)]
    again = run_prompts(prompts, [model], store=tmp_path / "batch.db", env=env, batch=True, batch_poll=0.2)
    assert again.totals["sent"] == 0 and counters.jobs == 3  # all done: nothing submitted


def _faulty_prompts() -> pd.DataFrame:
    prompts = make_prompts(8)
    marks = {0: "[[fault:expired:1]]", 1: "[[fault:500:2]]", 2: "[[fault:400]]", 3: "[[fault:empty:1]]"}
    prompts["user"] = [u + marks.get(i, "") for i, u in enumerate(prompts["user"])]
    return prompts


@pytest.mark.parametrize(("server_class", "model", "env_of"), [
    (FakeOpenAIBatchServer, "openai:gpt-4o-mini", _openai_env),
    (FakeAnthropicBatchServer, "anthropic:claude-haiku-4.5", _anthropic_env),
])
def test_failed_and_expired_items_and_jobs_are_retried_or_stored_as_errors(
    tmp_path: Path, server_class: type, model: str, env_of: object
) -> None:
    config = BatchConfig(processing_s=0.05, fail_jobs=1, expire_jobs=1, status_faults=8)  # 8 polls refused too
    with run_in_thread(server_class(batch=config)) as server:
        summary = run_prompts(_faulty_prompts(), [model], store=tmp_path / "s.db", env=env_of(server),  # type: ignore[operator]
                              retry=RetryPolicy(max_attempts=5, base_delay=0.01, max_delay=0.05), batch=True,
                              batch_poll=0.05)
        counters = server.server.batch
    rows = {r[0]: r for r in _rows(tmp_path / "s.db")}
    assert len(rows) == 8
    assert rows["p_00002"][1] == "error"  # an invalid request is not retried
    assert all(rows[f"p_{i:05d}"][1] == "ok" for i in range(8) if i != 2)
    # the whole failed job, then the expired one, then the retried items: every prompt submitted 2-4 times
    assert counters.jobs >= 3
    assert summary.totals["retries"] >= 8
    with sqlite3.connect(tmp_path / "s.db") as conn:
        error, attempts = conn.execute("SELECT error, attempts FROM responses WHERE prompt_id = 'p_00002'").fetchone()
    assert "invalid_request" in error or "400" in error
    assert attempts >= 1
    assert counters.status_polls > 8


def test_batch_on_a_family_without_a_batch_api_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    write_table(make_prompts(2), tmp_path / "prompts.csv")
    proc = cli_here("run", "--prompts", "prompts.csv", "--model", "sim:biased", "--batch", "--store", "s.db",
                    cwd=tmp_path)
    line = one_error_line(proc)
    assert "--batch" in line and "sim:biased" in line
    assert not (tmp_path / "s.db").exists()


def _jobs(store: Path) -> list[tuple[str, str | None]]:
    if not store.exists():
        return []
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as conn:
            return conn.execute("SELECT state, job_id FROM batch_jobs").fetchall()
    except sqlite3.Error:
        return []


def _start_and_kill(tmp_path: Path, model: str, env: dict[str, str], ready: Callable[[], bool]) -> None:
    """Start ``counterbench run --batch`` in a subprocess and kill it with SIGKILL once ``ready()``."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "counterbench.cli", "run", "--prompts", "prompts.csv", "--model", model, "--batch",
         "--batch-size", "4", "--batch-poll", "0.2", "--store", "s.db"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None and not ready():
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGKILL)
    proc.communicate()


def test_kill_minus_nine_while_polling_then_resume_loses_nothing_and_submits_nothing_twice(tmp_path: Path) -> None:
    write_table(make_prompts(10), tmp_path / "prompts.csv")
    store = tmp_path / "s.db"
    config = BatchConfig(processing_s=600.0)  # the jobs stay in progress until the test lets them end
    with run_in_thread(FakeOpenAIBatchServer(batch=config)) as server:
        env = subprocess_env(**_openai_env(server))
        counters = server.server.batch
        _start_and_kill(tmp_path, "openai:gpt-4o-mini", env, lambda: len(_jobs(store)) == 3 and all(
            state == "submitted" for state, _ in _jobs(store)) and counters.status_polls > 0)
        assert counters.jobs == 3 and counters.items == 10
        config.processing_s = 0.0  # the provider finishes the jobs while nobody is polling
        # a run with only the first job's prompts collects that job and leaves the others open
        part = run_prompts(make_prompts(10).iloc[:4], ["openai:gpt-4o-mini"], store=store,
                           env=_openai_env(server), batch=True, batch_poll=0.05)
        assert len(_rows(store)) == 4 and part.models["openai:gpt-4o-mini"]["batch_jobs_open"] == 2
        assert "2 batch job(s) still open" in format_summary(part)
        resumed = cli("run", "--prompts", "prompts.csv", "--model", "openai:gpt-4o-mini", "--batch",
                      "--batch-poll", "0.2", "--store", str(store), cwd=tmp_path, env=env, timeout=120)
        assert resumed.returncode == 0, resumed.stderr
    assert counters.jobs == 3 and counters.items == 10 and counters.submitted_twice == 0
    rows = _rows(store)
    assert len(rows) == 10 and all(r[1] == "ok" for r in rows)
    assert sorted(state for state, _ in _jobs(store)) == ["collected"] * 3
    assert "at batch price" in resumed.stdout + resumed.stderr


@pytest.mark.parametrize(("server_class", "model", "env_of"), [
    (FakeOpenAIBatchServer, "openai:gpt-4o-mini", _openai_env),
    (FakeAnthropicBatchServer, "anthropic:claude-haiku-4.5", _anthropic_env),
])
def test_kill_minus_nine_before_the_job_id_is_stored_finds_the_job_instead_of_submitting_it_again(
    tmp_path: Path, server_class: type, model: str, env_of: object
) -> None:
    write_table(make_prompts(10), tmp_path / "prompts.csv")
    store = tmp_path / "s.db"
    config = BatchConfig(processing_s=0.0, accept_delay_s=60.0)  # the provider has the job, the client no id
    with run_in_thread(server_class(batch=config)) as server:
        env = subprocess_env(**env_of(server))  # type: ignore[operator]
        counters = server.server.batch
        _start_and_kill(tmp_path, model, env, lambda: counters.jobs == 1)
        assert _jobs(store) == [("submitting", None)]
        config.accept_delay_s = 0.0
        resumed = cli("run", "--prompts", "prompts.csv", "--model", model, "--batch", "--batch-size", "4",
                      "--batch-poll", "0.2", "--store", str(store), cwd=tmp_path, env=env, timeout=120)
        assert resumed.returncode == 0, resumed.stderr
    assert counters.jobs == 3 and counters.items == 10 and counters.submitted_twice == 0
    assert len(_rows(store)) == 10
    assert sorted(state for state, _ in _jobs(store)) == ["collected"] * 3


def test_max_cost_submits_jobs_only_while_their_worst_case_fits_at_the_batch_price(tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text('batch:\n  "openai:*": 0.5\nprices:\n  "openai:*": {input: 0, output: 1000}\n')
    worst = 6 * 500 / 1e6  # 6 output tokens at the batch price (500 USD per 1M): what the fake bills, too
    with run_in_thread(FakeOpenAIBatchServer(batch=BatchConfig(processing_s=0.05))) as server:
        summary = run_prompts(make_prompts(10), ["openai:gpt-4o-mini"], store=tmp_path / "s.db",
                              env=_openai_env(server), prices=prices, max_tokens=6, max_cost=5.5 * worst,
                              batch=True, batch_size=4, batch_poll=0.05)
        counters = server.server.batch
    assert summary.status == "max_cost"
    assert counters.items == 5 and counters.jobs == 2  # 4, then the 1 that still fits
    assert len(_rows(tmp_path / "s.db")) == 5
    assert summary.totals["cost_usd"] == pytest.approx(5 * worst) and _cost(tmp_path / "s.db") <= 5.5 * worst


def test_ctrl_c_while_polling_leaves_the_jobs_open_and_says_how_to_collect_them(tmp_path: Path) -> None:
    write_table(make_prompts(6), tmp_path / "prompts.csv")
    store = tmp_path / "s.db"
    config = BatchConfig(processing_s=600.0)
    with run_in_thread(FakeOpenAIBatchServer(batch=config)) as server:
        counters = server.server.batch
        proc = subprocess.Popen(
            [sys.executable, "-m", "counterbench.cli", "run", "--prompts", "prompts.csv", "--model",
             "openai:gpt-4o-mini", "--batch", "--batch-poll", "0.2", "--store", "s.db"],
            cwd=tmp_path, env=subprocess_env(**_openai_env(server)), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None and counters.status_polls == 0:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, (out, err)
        assert "1 batch job(s) still open at the provider: rerun to collect them" in out + err
        assert _jobs(store) == [("submitted", "batch_000001")]
        config.processing_s = 0.0
        resumed = run_prompts(make_prompts(6), ["openai:gpt-4o-mini"], store=store, env=_openai_env(server),
                              batch=True, batch_poll=0.05)
    assert resumed.complete and len(_rows(store)) == 6
    assert counters.jobs == 1 and counters.submitted_twice == 0


def test_a_job_the_provider_no_longer_has_is_submitted_again(tmp_path: Path) -> None:
    from counterbench.run.batch_jobs import BatchJobs, new_key
    from counterbench.run.store import open_store

    store = tmp_path / "s.db"
    with run_in_thread(FakeOpenAIBatchServer(batch=BatchConfig(processing_s=0.05))) as server:
        env = _openai_env(server)
        first = run_prompts(make_prompts(5).iloc[:2], ["openai:gpt-4o-mini"], store=store, env=env, batch=True,
                            batch_poll=0.05)
        with open_store(store) as opened:  # a job of the other three prompts, deleted at the provider since
            jobs = BatchJobs(opened, "openai", "openai:gpt-4o-mini", first.config_fp, server.base_url, first.run_id)
            key = new_key()
            job = jobs.begin(key, {f"{key}-{i}": ([f"p_{i:05d}"], 1) for i in range(2, 5)})
            jobs.submitted(job, "batch_deleted")
        again = run_prompts(make_prompts(5), ["openai:gpt-4o-mini"], store=store, env=env, batch=True,
                            batch_poll=0.05)
        counters = server.server.batch
    assert again.complete and len(_rows(store)) == 5
    assert counters.jobs == 2 and counters.items == 5 and counters.submitted_twice == 0
    with sqlite3.connect(store) as conn:
        states = dict(conn.execute("SELECT job_id, state FROM batch_jobs").fetchall())
    assert states["batch_deleted"] == "gone"


def test_open_jobs_submitted_to_another_endpoint_are_not_polled_here_unless_the_user_says_it_moved(
    tmp_path: Path,
) -> None:
    from counterbench.errors import UserError
    from counterbench.run.batch_jobs import BatchJobs, new_key
    from counterbench.run.store import open_store

    store = tmp_path / "s.db"
    with run_in_thread(FakeOpenAIBatchServer(batch=BatchConfig(processing_s=0.05))) as server:
        env = _openai_env(server)
        first = run_prompts(make_prompts(3).iloc[:1], ["openai:gpt-4o-mini"], store=store, env=env, batch=True,
                            batch_poll=0.05)
        with open_store(store) as opened:
            jobs = BatchJobs(opened, "openai", "openai:gpt-4o-mini", first.config_fp, "https://elsewhere.example/v1",
                             first.run_id)
            key = new_key()
            jobs.submitted(jobs.begin(key, {f"{key}-0": (["p_00001"], 1)}), "batch_elsewhere")
        with pytest.raises(UserError, match=r"1 open batch job\(s\) of openai:gpt-4o-mini submitted to "
                                            r"https://elsewhere.example/v1.*--endpoint-moved"):
            run_prompts(make_prompts(3), ["openai:gpt-4o-mini"], store=store, env=env, batch=True, batch_poll=0.05)
        assert server.server.batch.jobs == 1
        moved = run_prompts(make_prompts(3), ["openai:gpt-4o-mini"], store=store, env=env, batch=True,
                            batch_poll=0.05, endpoint_moved=True)
    assert moved.complete and len(_rows(store)) == 3  # polled here: gone (404), so submitted again


def test_progress_lines_give_the_requests_processed_and_the_time_left() -> None:
    import io

    from counterbench.run.batch_jobs import StoredJob
    from counterbench.run.batch_lane import LaneBatch, show_progress
    from counterbench.run.progress import RunDisplay

    stream = io.StringIO()
    display = RunDisplay({}, mode="plain", stream=stream)
    job = StoredJob("k", "batch_1", "submitted", 0.0, 0.0, {f"k-{i}": ([f"p{i}"], 1) for i in range(1000)})
    state = LaneBatch(api=None, jobs=None, planned={}, open=[job])  # type: ignore[arg-type]
    show_progress(display, "m", state)  # the first look: no rate yet
    job.processed = 250
    state.first_seen = (state.first_seen[0] - 60.0, 0)  # type: ignore[index]  # 250 requests in the last minute
    state.last_line -= 11.0
    show_progress(display, "m", state)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "m: 1 batch job(s) at the provider, 0/1,000 requests processed"
    assert lines[1] == "m: 1 batch job(s) at the provider, 250/1,000 requests processed, about 3 min left"


def test_the_fake_batch_server_runs_as_its_own_process(tmp_path: Path) -> None:
    from counterbench.testing.server_process import ServerProcess

    with ServerProcess("fake_batch", "--provider", "anthropic", "--processing-s", "0.05") as proc:
        summary = run_prompts(make_prompts(3), ["anthropic:claude-haiku-4.5"], store=tmp_path / "s.db",
                              env={"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": proc.base_url}, batch=True,
                              batch_poll=0.05)
        printed = proc.stop()
    assert summary.complete and len(_rows(tmp_path / "s.db")) == 3
    assert "STOPPED" in printed


@pytest.mark.parametrize(("keywords", "message"), [
    ({"batch_size": 0}, "--batch-size must be a whole number of at least 1"),
    ({"batch_poll": 0}, "--batch-poll must be a number of seconds greater than 0"),
    ({"ray": True}, "--batch and --ray do not go together"),
])
def test_batch_settings_no_run_can_use_are_refused_before_anything_is_sent(
    tmp_path: Path, keywords: dict[str, object], message: str
) -> None:
    from counterbench.errors import UserError

    with pytest.raises(UserError, match=message):
        run_prompts(make_prompts(2), ["openai:gpt-4o-mini"], store=tmp_path / "s.db", batch=True,
                    env={"OPENAI_API_KEY": "k"}, **keywords)
    assert not (tmp_path / "s.db").exists()
