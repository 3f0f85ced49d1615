"""``--batch`` against one-at-a-time, on the fake batch servers; print JSON.

For each provider (OpenAI's Batch API, Anthropic's Message Batches) the same ``--prompts`` prompts are run
into two fresh stores against the same fake server (in this process, on its own thread; its processing
delay is ``--processing-s``): one at a time (``--concurrency``) and with ``--batch`` (``--batch-size``
requests per job). Reported per mode: wall time, this process's CPU time (client and fake server
together), the spend, and for the batch run the jobs and items the server received; ``identical`` says
whether the stored answers (text, status, value, tokens) are the same, ``cost_ratio`` the batch spend over
the one-at-a-time spend.

Usage: ``python benchmarks/batch_run.py [--prompts 2000] [--batch-size 500] [--processing-s 0.5]
[--concurrency 64] [--providers openai,anthropic]``.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_json import finish, load_average

from counterbench.run.runner import run_prompts
from counterbench.testing._fakecore import run_in_thread
from counterbench.testing.fake_batch import BatchConfig, FakeAnthropicBatchServer, FakeOpenAIBatchServer

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.run.conftest import make_prompts  # noqa: E402

PROVIDERS: dict[str, tuple[type, str, str, str]] = {
    "openai": (FakeOpenAIBatchServer, "openai:gpt-4o-mini", "OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "anthropic": (FakeAnthropicBatchServer, "anthropic:claude-haiku-4.5", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
}


def _answers(store: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(store) as conn:
        return conn.execute("SELECT prompt_id, status, response, value, input_tokens, output_tokens FROM responses "
                            "ORDER BY prompt_id").fetchall()


def _measure(run: Any) -> dict[str, Any]:
    wall, cpu = time.perf_counter(), time.process_time()
    summary = run()
    return {"wall_s": round(time.perf_counter() - wall, 3), "cpu_s": round(time.process_time() - cpu, 3),
            "status": summary.status, "answered": int(summary.totals["done"]),
            "cost_usd": summary.totals["cost_usd"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--prompts", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--processing-s", type=float, default=0.5)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--providers", default="openai,anthropic")
    args = parser.parse_args()
    before = load_average()
    prompts = make_prompts(args.prompts)
    out: dict[str, Any] = {"prompts": args.prompts, "batch_size": args.batch_size,
                           "processing_s": args.processing_s, "results": {}}
    for name in args.providers.split(","):
        server_class, model, key_var, url_var = PROVIDERS[name]
        folder = Path(tempfile.mkdtemp(prefix="cb-batch-bench-"))
        with run_in_thread(server_class(batch=BatchConfig(processing_s=args.processing_s))) as server:
            env = {key_var: "bench-key", url_var: server.base_url}
            plain = _measure(lambda: run_prompts(prompts, [model], store=folder / "plain.db", env=env,  # noqa: B023
                                                 concurrency=args.concurrency))
            batch = _measure(lambda: run_prompts(prompts, [model], store=folder / "batch.db", env=env,  # noqa: B023
                                                 batch=True, batch_size=args.batch_size, batch_poll=0.25))
            counters = server.server.batch
            batch.update(jobs=counters.jobs, items=counters.items, submitted_twice=counters.submitted_twice)
        out["results"][name] = {
            "one_at_a_time": plain, "batch": batch,
            "identical": _answers(folder / "plain.db") == _answers(folder / "batch.db"),
            "cost_ratio": round(batch["cost_usd"] / plain["cost_usd"], 4) if plain["cost_usd"] else None,
        }
    half = all(abs(r["batch"]["cost_usd"] - r["one_at_a_time"]["cost_usd"] / 2) <= 1e-6  # totals: to $0.000001
               for r in out["results"].values())
    finish(out, before, goal="for every provider the --batch run stores the same answers as one at a time "
                             "(identical) at half the spend (cost_ratio 0.5, the batch price, up to the "
                             "spend's rounding to $0.000001)",
           within_goal=half and all(r["identical"] for r in out["results"].values()))


if __name__ == "__main__":
    main()
