"""The per-request timeout counts from when the backend starts a request, never from its place in a queue.

A backend that works on one request at a time (the embedded model) with many requests handed to it
at once used to time the queued ones out: their deadline ran while they waited behind the others.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

import counterbench.run.engine as engine_module
from counterbench.models.base import ChatRequest, ChatResult, waiting_turn
from counterbench.options import RetryPolicy
from counterbench.run import run_prompts
from counterbench.run.results import load_results
from tests.run.conftest import make_prompts

WORK_S = 0.1
TIMEOUT_S = 0.3  # shorter than the queue (10 requests x 0.1 s), longer than one request


class _OneAtATime:
    """Works on one request at a time behind a FIFO lock, like a single model thread; records what it saw."""

    simulated = False

    def __init__(self, name: str, *, report_wait: bool = True, hang_on: str | None = None) -> None:
        self.name = name
        self.report_wait = report_wait
        self.hang_on = hang_on
        self.waiting = 0
        self.most_waiting = 0
        self._lock: asyncio.Lock | None = None

    async def complete(self, request: ChatRequest) -> ChatResult:
        if self._lock is None:
            self._lock = asyncio.Lock()
        self.waiting += 1
        self.most_waiting = max(self.most_waiting, self.waiting)
        try:
            if self.report_wait:
                with waiting_turn():
                    await self._lock.acquire()
            else:
                await self._lock.acquire()
        finally:
            self.waiting -= 1
        try:
            await asyncio.sleep(60.0 if self.hang_on and self.hang_on in request.user else WORK_S)
        finally:
            self._lock.release()
        return ChatResult(text="### 1200000 INR", finish_reason="stop", input_tokens=10, output_tokens=4)

    async def aclose(self) -> None:
        self._lock = None


class _Capped:
    """Declares it can work on ``max_concurrency`` requests at once (and does not queue): counts its peak."""

    simulated = False

    def __init__(self, name: str, cap: int) -> None:
        self.name = name
        self.max_concurrency = cap
        self.in_flight = 0
        self.peak = 0

    async def complete(self, request: ChatRequest) -> ChatResult:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(0.02)
        finally:
            self.in_flight -= 1
        return ChatResult(text="### 1200000 INR", finish_reason="stop", input_tokens=10, output_tokens=4)

    async def aclose(self) -> None:
        return None


@pytest.fixture
def no_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    """Drop the engine's 2 s grace so a short timeout bites quickly."""
    monkeypatch.setattr(engine_module, "_TIMEOUT_GRACE_S", 0.0)


ONE_TRY = RetryPolicy(max_attempts=1, base_delay=0.01, max_delay=0.01)


@pytest.mark.usefixtures("no_grace")
def test_requests_queued_in_a_one_at_a_time_backend_never_time_out(tmp_path: Path) -> None:
    backend = _OneAtATime("serial")
    store = tmp_path / "s.db"
    summary = run_prompts(make_prompts(10), [backend], store=store, concurrency=16, timeout=TIMEOUT_S, retry=ONE_TRY)
    rows = load_results(store)
    assert backend.most_waiting >= 9  # the queue was real: 1 s of work behind a 0.3 s timeout
    assert summary.status == "completed"
    assert (rows["status"] == "ok").all(), rows[["prompt_id", "status", "error"]]
    assert (rows["attempts"] == 1).all()


@pytest.mark.usefixtures("no_grace")
def test_without_the_start_signal_the_same_queue_times_out(tmp_path: Path) -> None:
    """The control: the test above passes because of ``waiting_turn``, not because the timeout is loose."""
    backend = _OneAtATime("serial-silent", report_wait=False)
    store = tmp_path / "s.db"
    run_prompts(make_prompts(10), [backend], store=store, concurrency=16, timeout=TIMEOUT_S, retry=ONE_TRY)
    rows = load_results(store)
    assert (rows["status"] == "ok").sum() >= 2
    timed_out = rows[rows["status"] == "error"]
    assert len(timed_out) >= 5
    assert timed_out["error"].str.contains(f"no answer within {TIMEOUT_S:g} s").all()


@pytest.mark.usefixtures("no_grace")
def test_a_request_that_hangs_once_started_still_times_out(tmp_path: Path) -> None:
    backend = _OneAtATime("serial-hang", hang_on="#9")
    store = tmp_path / "s.db"
    started = time.monotonic()
    run_prompts(make_prompts(10), [backend], store=store, concurrency=16, timeout=TIMEOUT_S,
                retry=RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.01))
    elapsed = time.monotonic() - started
    rows = load_results(store).set_index("prompt_id")
    assert (rows.drop(index="p_00009")["status"] == "ok").all()
    assert rows.loc["p_00009", "status"] == "error" and rows.loc["p_00009", "attempts"] == 2
    assert f"no answer within {TIMEOUT_S:g} s" in rows.loc["p_00009", "error"]
    assert elapsed < 10.0  # two 0.3 s deadlines, not the 60 s hang


@pytest.mark.parametrize("cap", [1, 3])
def test_the_engine_sends_no_more_requests_than_the_backend_can_work_on(tmp_path: Path, cap: int) -> None:
    backend = _Capped(f"capped-{cap}", cap)
    run_prompts(make_prompts(12), [backend], store=tmp_path / "s.db", concurrency=16, retry=ONE_TRY)
    assert backend.peak == cap
    assert (load_results(tmp_path / "s.db")["status"] == "ok").all()
