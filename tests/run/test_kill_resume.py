"""kill -9 at random moments, then rerun: every prompt answered exactly once, nothing lost."""

from __future__ import annotations

import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from counterbench.prompts import write_table
from tests.run.conftest import cli, make_prompts, subprocess_env

N_PROMPTS = 1500
TRIALS = 10


def _snapshot(store: Path) -> dict[str, tuple[object, ...]]:
    if not store.exists():
        return {}
    with sqlite3.connect(store) as conn:
        rows = conn.execute(
            "SELECT prompt_id, response, status, finished_at, attempts, run_id FROM responses"
        ).fetchall()
        total, distinct = conn.execute("SELECT count(*), count(DISTINCT prompt_id) FROM responses").fetchone()
    assert total == distinct == len(rows), "duplicate rows"
    return {r[0]: tuple(r[1:]) for r in rows}


@pytest.mark.slow
def test_kill_minus_nine_at_random_moments_then_resume(tmp_path: Path) -> None:
    sim = tmp_path / "slow.yaml"
    sim.write_text("extends: biased\nlatency_ms: 20\n")
    prompts = write_table(make_prompts(N_PROMPTS), tmp_path / "p.parquet")
    store = tmp_path / "cb.db"
    args = ["run", "--prompts", str(prompts), "--model", f"sim:{sim}", "--store", str(store), "--concurrency", "2",
            "--no-progress"]
    rng = random.Random(20240603)
    seen: dict[str, tuple[object, ...]] = {}
    kills_with_progress = 0
    for _trial in range(TRIALS):
        proc = subprocess.Popen([sys.executable, "-m", "counterbench.cli", *args], cwd=tmp_path,
                                env=subprocess_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.3, 3.5))
        finished_early = proc.poll() is not None
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        now = _snapshot(store)
        lost = [pid for pid, row in seen.items() if now.get(pid) != row]
        assert not lost, f"answers lost or changed after kill: {lost[:5]}"
        kills_with_progress += len(now) > len(seen)
        seen = now
        if finished_early or len(seen) == N_PROMPTS:
            break
    assert kills_with_progress >= 3, "the kills should land while answers are being written"
    assert len(seen) < N_PROMPTS, "the run should not have finished before the last kill"
    done = cli(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    final = _snapshot(store)
    assert len(final) == N_PROMPTS
    assert all(final[pid] == row for pid, row in seen.items()), "a stored answer changed on resume"
    assert f"{len(seen):,} already stored" in done.stdout
    with sqlite3.connect(store) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        statuses = dict(conn.execute("SELECT status, count(*) FROM runs GROUP BY status").fetchall())
    assert statuses.get("completed") == 1 and statuses.get("killed", 0) >= 1
