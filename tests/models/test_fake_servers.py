"""The fake servers as their own processes (how benchmarks use them) and their self-bounding."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from counterbench.models import ChatRequest, create_backend
from counterbench.testing import FaultConfig, ServerProcess, run_in_thread
from counterbench.testing.fake_openai import FakeOpenAIServer
from tests.models.conftest import SYSTEM_INR, run

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _src_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))


def test_server_process_serves_and_stops_on_sigterm() -> None:
    proc = ServerProcess("fake_openai", "--latency-ms", "5", "--fault-rate", "0.5", "--faults", "500", "--seed", "3")
    with proc:
        assert proc.base_url.startswith("http://127.0.0.1:") and proc.base_url.endswith("/v1")
        backend = create_backend(f"openai-compatible:{proc.base_url}:m", env={})

        async def go() -> tuple[int, int]:
            ok = failed = 0
            try:
                for i in range(20):
                    try:
                        await backend.complete(ChatRequest(f"p{i}", SYSTEM_INR, f"q{i}"))
                        ok += 1
                    except Exception:
                        failed += 1
            finally:
                await backend.aclose()
            return ok, failed

        ok, failed = run(go())
        assert ok + failed == 20 and ok > 0 and failed > 0
        running = proc.proc
        assert running is not None
        out = proc.stop()
    assert running.poll() is not None
    assert "STOPPED {'requests': 20" in out and "'500': " + str(failed) in out


def test_server_process_stops_by_itself() -> None:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "counterbench.testing.fake_anthropic", "--max-seconds", "0.5"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0 and "READY http://127.0.0.1:" in done.stdout and "STOPPED" in done.stdout
    assert time.monotonic() - started < 20


def test_unknown_fault_kind_is_refused() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "counterbench.testing.fake_openai", "--faults", "429,explode"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode != 0 and "unknown fault kinds: explode" in done.stderr


def test_in_thread_server_stops_with_hanging_requests_in_flight() -> None:
    """Stopping a server while a request hangs returns promptly (hanging handlers are released)."""
    with run_in_thread(FakeOpenAIServer(FaultConfig(force="hang", hang_s=60))) as server:
        backend = create_backend(f"openai-compatible:{server.base_url}:m", env={}, timeout_s=0.2)

        async def go() -> None:
            try:
                await backend.complete(ChatRequest("p", "s", "u"))
            except Exception:
                pass
            finally:
                await backend.aclose()

        run(go())
        started = time.monotonic()
    assert time.monotonic() - started < 5
