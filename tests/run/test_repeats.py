"""``--repeats K``: every prompt asked K times, each repeat seeded, stored, cached and resumed on its own.

The run tests go through the real path: the CLI (its ``main`` in the test's process; a subprocess where it is
killed), a real HTTP server on 127.0.0.1 (the fake OpenAI server), the SQLite store; a kill -9 in the middle of
a run re-sends no finished repeat.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from aiohttp import web

from counterbench.errors import UserError
from counterbench.models.base import GenerationConfig
from counterbench.options import GenerationOptions
from counterbench.run.results import load_results
from counterbench.table_files import write_table
from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread
from tests.run.conftest import cli, cli_here, make_prompts, subprocess_env


class SeedLog(FakeOpenAIServer):
    """Every request's (user text, seed sent, arrival time)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.log: list[tuple[str, int | None, float]] = []

    async def chat(self, request: web.Request) -> web.StreamResponse:
        arrived = time.time()
        payload = json.loads(await request.read())
        self.log.append((str(payload["messages"][-1]["content"]), payload.get("seed"), arrived))
        return await super().chat(request)


def _args(tmp_path: Path, server: object, n: int, store: Path, *extra: str) -> list[str]:
    table = make_prompts(n)
    prompts = write_table(table, tmp_path / "prompts.parquet")
    model = f"openai-compatible:{server.base_url}:fake-model"  # type: ignore[attr-defined]
    return ["run", "--prompts", str(prompts), "--model", model, "--store", str(store), "--no-progress", *extra]


def _finished(store: Path) -> set[tuple[str, int]]:
    """(prompt id, repeat) of every finished answer in the store."""
    if not store.exists():
        return set()
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as conn:
            configs = {fp: json.loads(blob).get("repeat", 0) for fp, blob in conn.execute("SELECT * FROM configs")}
            rows = conn.execute("SELECT prompt_id, config_fp FROM responses WHERE status IN ('ok', 'refused', "
                                "'unparseable')").fetchall()
    except sqlite3.OperationalError:  # a store being created
        return set()
    return {(pid, int(configs[fp])) for pid, fp in rows}


def test_a_config_without_repeats_keeps_its_fingerprint() -> None:
    config = GenerationConfig(temperature=0.7, seed=5)
    assert "repeat" not in config.as_dict()
    assert config.for_repeat(0) is config and config.sent_seed == 5
    second = config.for_repeat(2)
    assert second.as_dict()["repeat"] == 2 and second.fingerprint() != config.fingerprint()
    assert second.sent_seed == 7 and GenerationConfig().for_repeat(3).sent_seed == 3
    with pytest.raises(UserError, match="--repeats must be a whole number of at least 1"):
        GenerationOptions(repeats=0).config(["sim:fair"])


def test_repeats_are_seeded_stored_and_cached_per_repeat(tmp_path: Path) -> None:
    store = tmp_path / "cb.db"
    with run_in_thread(SeedLog(FaultConfig())) as server:
        log = server.server  # type: ignore[attr-defined]
        args = _args(tmp_path, server, 6, store, "--temperature", "0.7", "--generation-seed", "100")
        done = cli_here(*args, "--repeats", "3", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        seeds = sorted(seed for _, seed, _ in log.log)
        assert seeds == [100] * 6 + [101] * 6 + [102] * 6  # repeat k is sent seed + k
        assert _finished(store) == {(f"p_{i:05d}", k) for i in range(6) for k in range(3)}
        again = cli_here(*args, "--repeats", "3", cwd=tmp_path)  # resumed: nothing left
        assert again.returncode == 0 and len(log.log) == 18
        more = cli_here(*args, "--repeats", "4", cwd=tmp_path)  # one more repeat: only it is sent
        assert more.returncode == 0 and len(log.log) == 24
        assert sorted(seed for _, seed, _ in log.log[18:]) == [103] * 6
        one = cli_here(*args, cwd=tmp_path)  # without --repeats: repeat 0, already stored
        assert one.returncode == 0 and len(log.log) == 24
    results = load_results(store)
    assert sorted(results.groupby("repeat").size().tolist()) == [6, 6, 6, 6]
    assert results.groupby("prompt_id")["repeat"].nunique().eq(4).all()


def test_a_store_without_repeats_reads_as_repeat_zero(tmp_path: Path) -> None:
    store = tmp_path / "cb.db"
    with run_in_thread(SeedLog(FaultConfig())) as server:
        done = cli_here(*_args(tmp_path, server, 4, store), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert [seed for _, seed, _ in server.server.log] == [None] * 4  # type: ignore[attr-defined]
    with sqlite3.connect(store) as conn:
        (blob,) = conn.execute("SELECT config FROM configs").fetchone()
    assert "repeat" not in json.loads(blob)
    assert "repeat" not in load_results(store).columns  # as before: no repeats, no column


def test_repeats_refuse_batch_and_ray(tmp_path: Path) -> None:
    from counterbench.run.runner import run_prompts

    with pytest.raises(UserError, match="--repeats goes with the engine on this machine only"):
        run_prompts(make_prompts(2), ["sim:fair"], store=tmp_path / "cb.db", repeats=2, ray=True)


@pytest.mark.slow
def test_kill_minus_nine_with_repeats_resends_no_finished_repeat(tmp_path: Path) -> None:
    """A run of 300 prompts × 3 repeats is killed (kill -9) three times mid-run; each rerun sends no (prompt,
    repeat) the store held at the kill, and the last one completes every repeat of every prompt."""
    n, k = 300, 3
    store = tmp_path / "cb.db"
    with run_in_thread(SeedLog(FaultConfig(latency_ms=15))) as server:
        log = server.server  # type: ignore[attr-defined]
        args = _args(tmp_path, server, n, store, "--temperature", "0.7", "--repeats", str(k), "--concurrency", "4")
        user_to_id = dict(zip(make_prompts(n)["user"], make_prompts(n)["prompt_id"], strict=True))
        for _ in range(3):
            stored_before = len(_finished(store))
            proc = subprocess.Popen([sys.executable, "-m", "counterbench.cli", *args], cwd=tmp_path,
                                    env=subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            deadline = time.monotonic() + 60
            while len(_finished(store)) < stored_before + 60 and proc.poll() is None:
                assert time.monotonic() < deadline, "timed out waiting for answers"
                time.sleep(0.02)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            assert proc.returncode == -signal.SIGKILL, "the run finished before the kill: use more prompts"
            time.sleep(0.1)
            finished = _finished(store)
            assert 0 < len(finished) < n * k
            at_kill = time.time()
            sent_at_kill = len(log.log)
            rest = subprocess.Popen([sys.executable, "-m", "counterbench.cli", *args], cwd=tmp_path,
                                    env=subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            deadline = time.monotonic() + 60  # the resumed run's first requests (its start is slow on a busy machine)
            while len(log.log) < sent_at_kill + 20 and rest.poll() is None:
                assert time.monotonic() < deadline, "the resumed run sent nothing"
                time.sleep(0.02)
            rest.send_signal(signal.SIGKILL)
            rest.wait(timeout=30)
            after = [(user_to_id[user], seed or 0) for user, seed, at in log.log[sent_at_kill:] if at >= at_kill]
            assert after, "the resumed run sent nothing"
            again = [key for key in after if key in finished]
            assert not again, f"finished repeats sent again after the kill: {again[:5]}"
        done = cli(*args, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert _finished(store) == {(f"p_{i:05d}", r) for i in range(n) for r in range(k)}
        resent = len(log.log) - n * k
    with sqlite3.connect(store) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    print(f"\n{n} prompts × {k} repeats, 6 kills: {resent} requests sent again (in flight at a kill)")
