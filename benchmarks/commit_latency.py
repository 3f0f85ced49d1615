"""How long after an answer arrives is it on disk? Measure the store's arrival-to-commit latency; print JSON.

The fake OpenAI server runs in this process (its own thread); ``--requests`` prompts go through
:func:`counterbench.run.run_prompts` at ``--concurrency``. Each row's ``finished_at`` is taken when
the engine records the answer; the time its transaction committed is taken right after SQLite's
commit returns (a wrapper around ``Store.write_responses``). Reported: percentiles of the difference
in milliseconds, commits and rows per commit.

Usage: ``python benchmarks/commit_latency.py [--requests 5000] [--concurrency 64] [--latency-ms 5]``.
"""

from __future__ import annotations

import argparse
import json
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
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=5.0)
    args = parser.parse_args()
    import pandas as pd

    delays: list[float] = []
    batches: list[int] = []
    original = Store.write_responses

    def timed(self: Store, rows: Any) -> None:
        original(self, rows)
        now = time.time()
        batches.append(len(rows))
        delays.extend(now - row[FINISHED] for row in rows)

    Store.write_responses = timed  # type: ignore[method-assign]
    table = pd.DataFrame({
        "prompt_id": [f"c_{i:06d}" for i in range(args.requests)], "use_case": "salary_estimation",
        "answer_type": "inr_annual", "system": "Answer: ### <NUMBER> INR",
        "user": [f"Salary for fresher #{i}?" for i in range(args.requests)],
    })
    with tempfile.TemporaryDirectory() as tmp, run_in_thread(FakeOpenAIServer(FaultConfig(
            latency_ms=args.latency_ms))) as server:
        started = time.perf_counter()
        run_prompts(table, [f"openai-compatible:{server.base_url}:fake-model"], store=Path(tmp) / "s.db",
                    concurrency=args.concurrency, handle_signals=False)
        wall = time.perf_counter() - started
    ms = np.array(delays) * 1000.0
    print(json.dumps({
        "settings": vars(args), "wall_s": round(wall, 3), "answers_per_s": round(args.requests / wall, 1),
        "arrival_to_commit_ms": {q: round(float(np.percentile(ms, p)), 2)
                                 for q, p in (("p50", 50), ("p90", 90), ("p99", 99), ("max", 100))},
        "commits": len(batches), "rows_per_commit_mean": round(float(np.mean(batches)), 2),
    }, indent=1))


if __name__ == "__main__":
    main()
