"""``--batch`` killed with SIGKILL at random moments, then resumed, until done; print JSON.

The fake batch server (OpenAI's protocol, in this process on its own thread) takes ``--processing-s`` to
finish a job and ``--accept-delay-s`` to answer a submission after creating the job, so kills land while
jobs are submitted (before their id is stored), polled and collected. ``counterbench run --batch`` runs in
a subprocess and is killed a random time (``--min-s`` to ``--max-s``) after its run has taken the store,
``--kills`` times or until a
run finishes on its own; a last run then completes. Reported: the kills, where they landed (jobs
submitting / submitted / collected in the store at the kill), answers stored, prompts submitted more than
once (must be 0), jobs and items the server received, and answers lost (prompts without an ``ok`` row at
the end: must be 0).

Usage: ``python benchmarks/batch_kills.py [--prompts 200] [--batch-size 20] [--kills 20] [--seed 0]``.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_json import finish, load_average

from counterbench.table_files import write_table
from counterbench.testing._fakecore import run_in_thread
from counterbench.testing.fake_batch import BatchConfig, FakeOpenAIBatchServer

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.run.conftest import make_prompts  # noqa: E402


def _states(store: Path) -> dict[str, int]:
    if not store.exists():
        return {}
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as conn:
            return dict(conn.execute("SELECT state, count(*) FROM batch_jobs GROUP BY state").fetchall())
    except sqlite3.Error:
        return {}


def _running(store: Path, pid: int) -> bool:
    """Whether the run of process ``pid`` has taken the store (its run row is committed)."""
    if not store.exists():
        return False
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as conn:
            return bool(conn.execute("SELECT count(*) FROM runs WHERE pid = ? AND status = 'running'",
                                     (pid,)).fetchone()[0])
    except sqlite3.Error:
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--prompts", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=20)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--min-s", type=float, default=0.0)
    parser.add_argument("--max-s", type=float, default=2.0)
    parser.add_argument("--processing-s", type=float, default=1.0)
    parser.add_argument("--accept-delay-s", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    before = load_average()
    rng = random.Random(args.seed)
    folder = Path(tempfile.mkdtemp(prefix="cb-batch-kills-"))
    write_table(make_prompts(args.prompts), folder / "prompts.csv")
    store = folder / "s.db"
    config = BatchConfig(processing_s=args.processing_s, accept_delay_s=args.accept_delay_s)
    kills: list[dict[str, Any]] = []
    with run_in_thread(FakeOpenAIBatchServer(batch=config)) as server:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(OPENAI_API_KEY="bench-key", OPENAI_BASE_URL=server.base_url,
                   PYTHONPATH=str(REPO / "src") + os.pathsep + env.get("PYTHONPATH", ""))
        command = [sys.executable, "-m", "counterbench.cli", "run", "--prompts", "prompts.csv", "--model",
                   "openai:gpt-4o-mini", "--batch", "--batch-size", str(args.batch_size), "--batch-poll", "0.1",
                   "--store", str(store)]
        finished = False
        started = time.perf_counter()
        while len(kills) < args.kills and not finished:
            proc = subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    text=True)
            wait = rng.uniform(args.min_s, args.max_s)
            while proc.poll() is None and not _running(store, proc.pid):  # CLI start-up is not what we kill
                time.sleep(0.02)
            try:
                proc.wait(timeout=wait)
                finished = proc.returncode == 0
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                kills.append({"after_s": round(wait, 2), "jobs": _states(store)})
        last = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=600)
        counters = server.server.batch
        with sqlite3.connect(store) as conn:
            ok = int(conn.execute("SELECT count(*) FROM responses WHERE status = 'ok'").fetchone()[0])
            rows = int(conn.execute("SELECT count(*) FROM responses").fetchone()[0])
    lost, twice = args.prompts - ok, counters.submitted_twice
    finish({
        "prompts": args.prompts, "batch_size": args.batch_size, "kills": len(kills),
        "kills_with_a_job_submitting": sum(1 for k in kills if k["jobs"].get("submitting")),
        "kills_with_jobs_open": sum(1 for k in kills if k["jobs"].get("submitted")),
        "last_run_exit": last.returncode, "answers_stored": rows, "answers_ok": ok,
        "lost": lost, "prompts_submitted_twice": twice,
        "jobs_received": counters.jobs, "items_received": counters.items,
        "jobs_in_store": _states(store), "wall_s": round(time.perf_counter() - started, 1),
        "kill_log": kills,
    }, before, goal="no answer lost (every prompt has an ok row at the end) and no prompt submitted twice, "
                    "after every kill and resume", within_goal=lost == 0 and twice == 0)


if __name__ == "__main__":
    main()
