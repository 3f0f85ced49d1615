"""The first request does not wait for the prompt table: prompt rows are committed while requests are in
flight, every stored answer has its prompt row, and a stopped run leaves every prompt row stored."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from aiohttp import web

from counterbench.run.plan import prompt_items
from counterbench.run.store import RESPONSE_COLUMNS, open_store
from counterbench.run.writer import BatchWriter
from counterbench.table_files import write_table
from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread
from tests.run.conftest import answers_without_prompt, make_prompts, subprocess_env


def _count(store: Path, sql: str) -> int:
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as conn:
        return int(conn.execute(sql).fetchone()[0])


class _PromptCountingServer(FakeOpenAIServer):
    """Reads the client's store when the first request arrives: how many prompt rows were committed then."""

    def __init__(self, store: Path, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.store = store
        self.prompts_at_first_request: int | None = None

    async def chat(self, request: web.Request) -> web.StreamResponse:
        if self.prompts_at_first_request is None:
            self.prompts_at_first_request = _count(self.store, "SELECT count(*) FROM prompts")
        return await super().chat(request)


def test_first_request_goes_out_before_the_prompt_table_is_stored_and_a_stop_keeps_every_prompt(
    tmp_path: Path,
) -> None:
    n = 20_000
    store = tmp_path / "cb.db"
    prompts = write_table(make_prompts(n), tmp_path / "prompts.parquet")
    with run_in_thread(_PromptCountingServer(store, FaultConfig(latency_ms=5))) as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "counterbench.cli", "run", "--prompts", str(prompts), "--model",
             f"openai-compatible:{server.base_url}:fake-model", "--store", str(store), "--concurrency", "8",
             "--no-progress"], cwd=tmp_path, env=subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        seen = server.server  # type: ignore[attr-defined]
        deadline = time.monotonic() + 120
        while seen.prompts_at_first_request is None:
            assert proc.poll() is None and time.monotonic() < deadline, "no request reached the server"
            time.sleep(0.005)
        time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    at_first = seen.prompts_at_first_request
    assert at_first < n, f"all {n:,} prompt rows were committed before the first request"
    assert _count(store, "SELECT count(*) FROM prompts") == n  # the stop committed the rest
    assert 0 < _count(store, "SELECT count(*) FROM responses") < n
    assert answers_without_prompt(store) == 0


def test_an_answer_commits_its_own_prompt_row_when_its_chunk_has_not_come_yet(tmp_path: Path) -> None:
    _, records = prompt_items(make_prompts(2_000))
    store = open_store(tmp_path / "cb.db")
    try:
        writer = BatchWriter(store)
        writer.save_prompts(records)
        assert _count(store.path, "SELECT count(*) FROM prompts") == 0  # queued until the loop runs

        async def answer_the_last_prompt_first() -> int:
            writer.attach(asyncio.get_running_loop())
            last = records[-1]
            row: dict[str, object] = dict.fromkeys(RESPONSE_COLUMNS)
            row.update(prompt_id=last[0], prompt_hash=last[1], model="m", config_fp="fp", request_fp="req",
                       simulated=0, status="ok", response="### 1 INR", attempts=1, cached=0)
            writer.add(tuple(row[c] for c in RESPONSE_COLUMNS))
            writer.flush()
            stored_then = _count(store.path, "SELECT count(*) FROM prompts")
            writer.attach(None)
            return stored_then

        stored_then = asyncio.run(answer_the_last_prompt_first())
        assert stored_then < len(records)  # the chunks had not reached the last prompt ...
        assert answers_without_prompt(store.path) == 0  # ... but its answer brought it along
        writer.close()
        assert _count(store.path, "SELECT count(*) FROM prompts") == len(records)
        assert writer.failure is None
    finally:
        store.close()
