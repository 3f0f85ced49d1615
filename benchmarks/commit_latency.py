"""How long after an answer arrives is it on disk? Measure the store's arrival-to-commit latency; print JSON.

The fake OpenAI server runs in this process (its own thread); ``--requests`` prompts go through
:func:`counterbench.run.run_prompts` at ``--concurrency``. Each row's ``finished_at`` is taken when
the engine records the answer; the time its transaction committed is taken right after SQLite's
commit returns (a wrapper around ``Store.write_responses``). Reported: percentiles of the difference
in milliseconds, answer commits and rows per commit, every write transaction of the run
(``transactions``: the store's ``COMMIT`` statements, answers and prompt rows alike, from SQLite's trace
callback), the wall time spent inside the store's writes (``write_s``, its share of the run's wall time)
and the machine's load average. ``within_goal``: p99 arrival-to-commit ≤ 10 ms.

Usage: ``python benchmarks/commit_latency.py [--requests 10000] [--concurrency 64] [--latency-ms 5]``.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from counterbench.run import run_prompts
from counterbench.run.store import RESPONSE_COLUMNS, Store
from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread

FINISHED = RESPONSE_COLUMNS.index("finished_at")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=10000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=5.0)
    parser.add_argument("--window-ms", type=float, default=None, help="the group-commit window (default: the run's)")
    args = parser.parse_args()
    import pandas as pd

    delays: list[float] = []
    batches: list[int] = []
    commits = [0]
    write_s = [0.0]
    original = Store.write_responses
    original_prompts = Store.save_prompts
    original_init = Store.__init__

    def timed(self: Store, rows: Any, *more: Any, **kw: Any) -> None:
        t0 = time.perf_counter()
        original(self, rows, *more, **kw)
        write_s[0] += time.perf_counter() - t0
        now = time.time()
        if rows:
            batches.append(len(rows))
        delays.extend(now - row[FINISHED] for row in rows)

    def timed_prompts(self: Store, records: Any) -> None:
        t0 = time.perf_counter()
        original_prompts(self, records)
        write_s[0] += time.perf_counter() - t0

    def counted(self: Store, path: Any, conn: Any) -> None:
        original_init(self, path, conn)
        conn.set_trace_callback(lambda sql: commits.__setitem__(0, commits[0] + sql.strip().upper().startswith(
            "COMMIT")))

    Store.write_responses = timed  # type: ignore[method-assign]
    Store.save_prompts = timed_prompts  # type: ignore[method-assign]
    Store.__init__ = counted  # type: ignore[method-assign]
    load_before = os.getloadavg()
    table = pd.DataFrame({
        "prompt_id": [f"c_{i:06d}" for i in range(args.requests)], "use_case": "salary_estimation",
        "answer_type": "inr_annual", "system": "Answer: ### <NUMBER> INR",
        "user": [f"Salary for fresher #{i}?" for i in range(args.requests)],
    })
    with tempfile.TemporaryDirectory() as tmp, run_in_thread(FakeOpenAIServer(FaultConfig(
            latency_ms=args.latency_ms))) as server:
        started = time.perf_counter()
        run_prompts(table, [f"openai-compatible:{server.base_url}:fake-model"], store=Path(tmp) / "s.db",
                    concurrency=args.concurrency, handle_signals=False,
                    commit_window=None if args.window_ms is None else args.window_ms / 1000.0)
        wall = time.perf_counter() - started
    ms = np.array(delays) * 1000.0
    p99 = float(np.percentile(ms, 99))
    print(json.dumps({
        "settings": vars(args), "load_average_before": load_before, "load_average_after": os.getloadavg(),
        "wall_s": round(wall, 3), "answers_per_s": round(args.requests / wall, 1),
        "arrival_to_commit_ms": {q: round(float(np.percentile(ms, p)), 2)
                                 for q, p in (("p50", 50), ("p90", 90), ("p99", 99), ("max", 100))},
        "commits": len(batches), "rows_per_commit_mean": round(float(np.mean(batches)), 2),
        "transactions": commits[0], "write_s": round(write_s[0], 3), "write_share": round(write_s[0] / wall, 3),
        "goals": {"p99_ms": 10.0}, "within_goal": p99 <= 10.0,
    }, indent=1))


if __name__ == "__main__":
    main()
