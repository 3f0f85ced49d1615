"""How much do server faults slow a run down? Fault-free vs faulty wall time; print JSON.

The fake OpenAI server runs in this process (its own thread) with ``--latency-ms``; the same
``--requests`` prompts go through :func:`counterbench.run.run_prompts` once fault-free and once with
``--fault-rate`` of the ``--faults`` kinds (429/503/529 carry ``Retry-After: --retry-after``), with
the engine's default retry policy (``--max-attempts`` tries). Reported: wall times, their ratio
(the issue's target: at most 3), completion, and retries.

Usage: ``python benchmarks/run_faults.py [--requests 2000] [--concurrency 16] [--fault-rate 0.3]
[--faults 429,503,529,500,reset,malformed] [--retry-after 0.05] [--latency-ms 10]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd
from bench_json import finish, load_average

from counterbench.options import RetryPolicy
from counterbench.run import load_results, run_prompts
from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread

SYSTEM = "When the user asks for salary advice, return exactly ONE annual CTC in INR: ### <NUMBER> INR"


def _prompts(n: int) -> pd.DataFrame:
    return pd.DataFrame({
        "prompt_id": [f"b_{i:06d}" for i in range(n)], "use_case": "salary_estimation",
        "answer_type": "inr_annual", "system": SYSTEM,
        "user": [f"I am a fresher (#{i}). What salary in INR should I expect?" for i in range(n)],
    })


def one(config: FaultConfig, n: int, concurrency: int, attempts: int, store: Path) -> dict[str, Any]:
    with run_in_thread(FakeOpenAIServer(config)) as server:
        started = time.perf_counter()
        summary = run_prompts(_prompts(n), [f"openai-compatible:{server.base_url}:fake-model"], store=store,
                              concurrency=concurrency, retry=RetryPolicy(max_attempts=attempts), handle_signals=False)
        wall = time.perf_counter() - started
        outcomes = dict(server.counters.outcomes)
    ok = int((load_results(store)["status"] == "ok").sum())
    return {"wall_s": round(wall, 3), "ok": ok, "requests": n, "retries": int(summary.totals["retries"]),
            "server_outcomes": outcomes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--fault-rate", type=float, default=0.3)
    parser.add_argument("--faults", default="429,503,529,500,reset,malformed")
    parser.add_argument("--retry-after", default="0.05")
    parser.add_argument("--latency-ms", type=float, default=10.0)
    parser.add_argument("--max-attempts", type=int, default=12)
    args = parser.parse_args()
    before = load_average()
    kinds = tuple(k for k in args.faults.split(",") if k)
    with tempfile.TemporaryDirectory() as tmp:
        clean = one(FaultConfig(latency_ms=args.latency_ms), args.requests, args.concurrency, args.max_attempts,
                    Path(tmp) / "clean.db")
        faulty = one(FaultConfig(latency_ms=args.latency_ms, fault_rate=args.fault_rate, fault_kinds=kinds,
                                 retry_after=args.retry_after, seed=1), args.requests, args.concurrency,
                     args.max_attempts, Path(tmp) / "faulty.db")
    result = {"settings": vars(args), "fault_free": clean, "faulty": faulty,
              "slowdown": round(faulty["wall_s"] / clean["wall_s"], 2)}
    # the docstring's target (the issue's): at most 3x the fault-free time; README: every prompt completed
    finish(result, before, goal="the faulty run takes at most 3x the fault-free wall time (slowdown <= 3, the "
                                "issue's target in the docstring) and every prompt of both runs completes "
                                "(ok == requests, as README.md states for --max-attempts 12)",
           within_goal=result["slowdown"] <= 3 and clean["ok"] == clean["requests"]
           and faulty["ok"] == faulty["requests"])


if __name__ == "__main__":
    main()
