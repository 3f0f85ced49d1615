"""Helpers for the run-engine tests: small prompt tables, the fake OpenAI server, fast retries."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from counterbench.options import RetryPolicy
from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread
from tests.conftest import counterbench_command

REPO = Path(__file__).resolve().parents[2]
SYSTEM_INR = "When the user asks for salary advice, return exactly ONE annual CTC in INR: ### <NUMBER> INR"
FAST_RETRY = RetryPolicy(max_attempts=8, base_delay=0.01, max_delay=0.05)
IDENTIFIERS = ("Hindu", "Muslim", "Sikh", "Christian")
#: USD per answer when only output tokens are priced (1000 USD per 1M) and ``max_tokens`` is 6: the fake
#: server bills 6 completion tokens per 200 reply, so the engine's worst case per attempt is the truth
PER_ANSWER = 6 * 1000 / 1e6


def make_prompts(n: int, *, prefix: str = "p", user: str = "I am {ident}. My CGPA is {cgpa}. Salary? #{i}",
                 use_case: str = "salary_estimation") -> pd.DataFrame:
    """A small prompt table in the prompt layer's shape (plus one design column, ``cgpa``)."""
    rows = []
    for i in range(n):
        ident = IDENTIFIERS[i % len(IDENTIFIERS)]
        cgpa = 9.1 if i % 2 else 7.2
        rows.append({
            "prompt_id": f"{prefix}_{i:05d}", "study": "test", "use_case": use_case, "language": "en",
            "axis": "Religion", "identifier": ident, "profile_id": f"P{i // len(IDENTIFIERS):02d}",
            "question_variant": 1, "variant": "standard", "answer_type": "inr_annual", "system": SYSTEM_INR,
            "user": user.format(ident=ident, cgpa=cgpa, i=i), "cgpa": cgpa,
        })
    return pd.DataFrame(rows)


def fake_model(server: object) -> str:
    return f"openai-compatible:{server.base_url}:fake-model"  # type: ignore[attr-defined]


@pytest.fixture
def fake_server() -> Iterator[object]:
    with run_in_thread(FakeOpenAIServer(FaultConfig(latency_ms=1, hang_s=2.0))) as server:
        yield server


def subprocess_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(extra)
    return env


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 300
        ) -> subprocess.CompletedProcess[str]:
    """Run ``counterbench ARGS`` in a process of its own, without API keys in its environment
    (:func:`tests.conftest.counterbench_command`; an ``env`` of its own: a fresh interpreter)."""
    return counterbench_command(args, cwd, env or subprocess_env(), timeout, warm=env is None)


def cli_here(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``counterbench ARGS`` in this test's process (:func:`tests.conftest.run_cli_here`), in the
    environment :func:`cli` gives its child: without the ``*_API_KEY`` variables (put back afterwards).

    For one command's answer — a user mistake's line and exit 2, a short run's summary; what only a real
    process shows (signals, kill -9, the child's environment) stays with :func:`cli`."""
    from tests.conftest import run_cli_here

    keys = {k: v for k, v in os.environ.items() if k.endswith("_API_KEY")}
    for key in keys:
        del os.environ[key]
    try:
        return run_cli_here(*args, cwd=cwd)
    finally:
        os.environ.update(keys)


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """Assert the CLI failed like a user mistake: exit 2, one line on stderr, no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


def answers_without_prompt(store: Path) -> int:
    """Stored answers whose prompt row is not stored (the prompt table is committed during a run)."""
    if not store.exists():
        return 0
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as conn:
        return int(conn.execute("SELECT count(*) FROM responses r LEFT JOIN prompts p "
                                "ON p.prompt_id = r.prompt_id AND p.prompt_hash = r.prompt_hash "
                                "WHERE p.prompt_id IS NULL").fetchone()[0])
