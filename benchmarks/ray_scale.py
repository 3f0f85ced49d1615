"""What does running on Ray cost and bring, on this machine? Prints JSON.

Each part runs in its own child process (clean memory figures), against a local Ray instance
started with ``ray.init(num_cpus=CPUS)`` before the timed runs (its start-up is reported apart):

1. **Embedded model** — the first ``--embedded-prompts`` prompts of ``rupeebias --preset quick``
   with ``--model local`` (structured answers, 24 tokens): in-process (one llama.cpp with
   ``os.cpu_count()`` threads) vs ``--ray`` with 2 actors of 1 thread each (each loads its own
   model, included in the time), and with 1 actor of ``os.cpu_count()`` threads, in ``--repeat``
   alternating rounds (best of each, and each round's ratio). The control: two plain processes
   without Ray, 1 llama.cpp thread each, answering every other pair of prompts (the split the
   two Ray workers make) — it separates what Ray costs from what the split into two single-thread
   processes costs on this machine. Goal: Ray ≥ 0.9× the in-process speed.
2. **Fake OpenAI server** (its own process, ``--latency-ms`` per request): ``--http-requests``
   prompts at ``--concurrency`` in flight, in-process vs ``--ray`` with 2 actors; requests per
   second and client CPU per request (in-process: this process; Ray: the driver plus the workers'
   own CPU, reported by them).
3. **A simulated run of ``--sim-prompts`` prompts** through Ray (``sim:fair``, no latency, 2
   actors): the driver's RSS sampled every second from the first answer to the last — flat means
   the driver holds no more memory at the end than after planning — plus the driver's and the
   workers' CPU per prompt (what Ray costs per prompt).

``within_goal``: the goal of part 1, Ray (2 workers × 1 thread) ≥ 0.9× the in-process speed with the
embedded model (``speed_ratio_ray_vs_in_process``, best of each, as ``meets_goals``); false when part 1
did not run or failed — parts 2 and 3 state no target.

Usage: ``python benchmarks/ray_scale.py [--embedded-prompts 40] [--http-requests 2000]
[--sim-prompts 1000000] [--skip-embedded] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench_json import finish, load_average

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
CPUS = 2


def _rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _start_ray() -> float:
    import ray

    from counterbench.run.ray_setup import LOCAL_SYSTEM_CONFIG

    started = time.perf_counter()
    # as `--ray` without an address starts it (workers at nice 0)
    ray.init(num_cpus=CPUS, include_dashboard=False, logging_level="WARNING", _system_config=LOCAL_SYSTEM_CONFIG)
    return time.perf_counter() - started


def _timed(fn: Any) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def _embedded_table(n: int) -> Any:
    from counterbench.prompts import prompts

    return prompts("rupeebias", preset="quick").head(n)


def phase_embedded_part(args: argparse.Namespace) -> dict[str, Any]:
    """The control arm: one plain process (no Ray) answering every other pair of prompts with 1 thread."""
    from counterbench.models.base import GenerationConfig
    from counterbench.models.llamacpp import LlamaCppBackend
    from counterbench.run import run_prompts

    table = _embedded_table(args.embedded_prompts)
    part = table.iloc[[i for i in range(len(table)) if i // 2 % 2 == args.part]]  # pairs, as dealt to 2 workers
    summary = run_prompts(part, [LlamaCppBackend(name="local", n_threads=1)], store=Path(args.tmp) / f"p{args.part}.db",
                          config=GenerationConfig(max_tokens=24, structured=True), handle_signals=False)
    assert summary.complete
    return {"prompts": len(part), "cpu_s": time.process_time()}


def _two_plain_processes(args: argparse.Namespace, tmp: str) -> tuple[float, float]:
    """Wall and CPU seconds of two plain single-thread processes answering half the prompts each."""
    started = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, __file__, "--phase", "embedded_part", "--part", str(part),
                               "--tmp", tmp, "--embedded-prompts", str(args.embedded_prompts)],
                              stdout=subprocess.PIPE, text=True, cwd=REPO) for part in (0, 1)]
    outs = [json.loads(proc.communicate()[0].strip().splitlines()[-1]) for proc in procs]
    assert all(proc.returncode == 0 for proc in procs)
    return time.perf_counter() - started, sum(out["cpu_s"] for out in outs)


def phase_embedded(args: argparse.Namespace) -> dict[str, Any]:
    from counterbench.models.base import GenerationConfig
    from counterbench.run import run_prompts
    from counterbench.run.ray_exec import RayOptions

    table = _embedded_table(args.embedded_prompts)
    config = GenerationConfig(max_tokens=24, structured=True)
    out: dict[str, Any] = {"prompts": len(table), "ray_start_s": _start_ray(), "rounds": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):  # alternate, so that a change in the machine's load hits both
            stats: dict[str, Any] = {}
            plain, plain_s, plain_cpu = _timed(lambda i=i: run_prompts(
                table, ["local"], store=Path(tmp) / f"a{i}.db", config=config, handle_signals=False))
            on_ray, ray_s, driver_cpu = _timed(lambda i=i, stats=stats: run_prompts(
                table, ["local"], store=Path(tmp) / f"b{i}.db", config=config, handle_signals=False,
                ray=RayOptions(actors=2, threads=1, stats=stats)))
            one: dict[str, Any] = {}
            wide, wide_s, _ = _timed(lambda i=i, one=one: run_prompts(
                table, ["local"], store=Path(tmp) / f"c{i}.db", config=config, handle_signals=False,
                ray=RayOptions(actors=1, threads=os.cpu_count() or 1, stats=one)))
            two_s, two_cpu = _two_plain_processes(args, tempfile.mkdtemp(dir=tmp))
            assert plain.complete and on_ray.complete and wide.complete
            out["rounds"].append({
                "in_process_s": plain_s, "in_process_cpu_s": plain_cpu, "ray_s": ray_s,
                "ray_answering_s": stats["answering_s"], "ray_worker_start_s": stats["startup_s"],
                "ray_worker_cpu_s": stats["worker_cpu_s"], "ray_driver_cpu_s": driver_cpu,
                "ray_1_actor_all_threads_s": wide_s, "ray_1_actor_all_threads_answering_s": one["answering_s"],
                "two_plain_processes_1_thread_s": two_s, "two_plain_processes_cpu_s": two_cpu,
                "ratio": plain_s / ray_s, "ratio_1_actor_all_threads": plain_s / wide_s,
                "ratio_two_plain_processes": plain_s / two_s, "ratio_ray_vs_two_plain_processes": two_s / ray_s,
                "load_average": os.getloadavg()[0],
            })
    rounds = out["rounds"]
    n = len(table)
    best_plain = min(r["in_process_s"] for r in rounds)
    best_ray = min(r["ray_s"] for r in rounds)
    best_answering = min(r["ray_answering_s"] for r in rounds)
    out.update({
        "in_process_threads": os.cpu_count(), "ray_actors": 2, "ray_threads_per_actor": 1,
        "best_in_process_s": best_plain, "best_ray_s": best_ray,
        "speed_ratio_ray_vs_in_process": best_plain / best_ray,
        # each round's ray run right after its in-process run, under nearly the same load
        "speed_ratio_per_round": [round(r["ratio"], 3) for r in rounds],
        "speed_ratio_median_of_rounds": statistics.median(r["ratio"] for r in rounds),
        "speed_ratio_after_worker_start": best_plain / best_answering,
        # the control: the same split (2 processes x 1 thread, pairs dealt alternately) without Ray
        "speed_ratio_two_plain_processes_vs_in_process": statistics.median(r["ratio_two_plain_processes"]
                                                                           for r in rounds),
        "speed_ratio_ray_vs_two_plain_processes": statistics.median(r["ratio_ray_vs_two_plain_processes"]
                                                                    for r in rounds),
        "speed_ratio_1_actor_all_threads": best_plain / min(r["ray_1_actor_all_threads_s"] for r in rounds),
        "speed_ratio_1_actor_all_threads_after_worker_start":
            best_plain / min(r["ray_1_actor_all_threads_answering_s"] for r in rounds),
        # what Ray costs: CPU (the driver plus the workers once started, against the in-process run's
        # whole process) and wall time per prompt, and the fixed start of the workers
        "cpu_ms_per_prompt_in_process": statistics.median(r["in_process_cpu_s"] for r in rounds) / n * 1000,
        "cpu_ms_per_prompt_ray": statistics.median(r["ray_driver_cpu_s"] + r["ray_worker_cpu_s"] for r in rounds)
        / n * 1000,
        "ray_driver_cpu_ms_per_prompt": min(r["ray_driver_cpu_s"] for r in rounds) / n * 1000,
        "ray_worker_start_s": statistics.median(r["ray_worker_start_s"] for r in rounds),
        "ray_extra_wall_ms_per_prompt_after_start": statistics.median(
            r["ray_answering_s"] - r["in_process_s"] for r in rounds) / n * 1000,
    })
    return out


def phase_http(args: argparse.Namespace) -> dict[str, Any]:
    from benchmarks.run_throughput import make_prompts

    from counterbench.run import run_prompts
    from counterbench.run.ray_exec import RayOptions
    from counterbench.testing.fake_openai import ServerProcess

    out: dict[str, Any] = {"requests": args.http_requests, "concurrency": args.concurrency,
                           "server_latency_ms": args.latency_ms, "ray_start_s": _start_ray()}
    with ServerProcess("fake_openai", "--latency-ms", str(args.latency_ms)) as server, \
            tempfile.TemporaryDirectory() as tmp:
        model = f"openai-compatible:{server.base_url}:fake-model"
        for name, ray in (("in_process", None), ("ray", "stats")):
            stats: dict[str, Any] = {}
            options = RayOptions(actors=2, stats=stats) if ray else None
            table = make_prompts(args.http_requests, name)
            summary, wall, cpu = _timed(lambda table=table, options=options, name=name: run_prompts(
                table, [model], store=Path(tmp) / f"{name}.db", concurrency=args.concurrency,
                handle_signals=False, ray=options))
            assert summary.complete and summary.totals["ok"] == args.http_requests
            worker_cpu = float(stats.get("worker_cpu_s", 0.0))
            out[name] = {"wall_s": wall, "requests_per_s": args.http_requests / wall,
                         "driver_cpu_ms_per_request": cpu / args.http_requests * 1000,
                         "client_cpu_ms_per_request": (cpu + worker_cpu) / args.http_requests * 1000}
            if ray:
                out[name]["ray_stats"] = stats
                out[name]["requests_per_s_after_startup"] = args.http_requests / stats["answering_s"]
    out["speed_ratio_ray_vs_in_process"] = out["ray"]["requests_per_s"] / out["in_process"]["requests_per_s"]
    out["speed_ratio_after_startup"] = (out["ray"]["requests_per_s_after_startup"]
                                        / out["in_process"]["requests_per_s"])
    return out


def _sim_prompts(n: int) -> Any:
    import pandas as pd

    idents = ["Hindu", "Muslim", "Sikh", "Christian"]
    return pd.DataFrame({
        "prompt_id": [f"m_{i:07d}" for i in range(n)],
        "study": "bench", "use_case": "salary_estimation", "language": "en", "axis": "Religion",
        "identifier": [idents[i % 4] for i in range(n)],
        "profile_id": [f"P{i // 4 % 20:02d}" for i in range(n)],
        "question_variant": 1, "variant": "standard", "answer_type": "inr_annual",
        "system": "When the user asks for salary advice, return exactly ONE annual CTC in INR: ### <NUMBER> INR",
        "user": [f"I am {idents[i % 4]}. Request {i}. What salary in INR should I expect?" for i in range(n)],
    })


def phase_million(args: argparse.Namespace) -> dict[str, Any]:
    from counterbench.run import run_prompts
    from counterbench.run.ray_exec import RayOptions

    out: dict[str, Any] = {"prompts": args.sim_prompts, "ray_start_s": _start_ray()}
    table = _sim_prompts(args.sim_prompts)
    out["rss_after_prompt_table_mb"] = _rss_mb()
    samples: list[tuple[float, float, int]] = []
    stop = threading.Event()
    store = Path(args.tmp) / "million.db"

    def sample() -> None:
        import sqlite3

        started = time.perf_counter()
        while not stop.wait(1.0):
            done = 0
            try:
                with sqlite3.connect(store, timeout=1) as conn:
                    done = int(conn.execute("SELECT max(id) FROM responses").fetchone()[0] or 0)
            except sqlite3.Error:
                pass
            samples.append((round(time.perf_counter() - started, 1), round(_rss_mb(), 1), done))

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    stats: dict[str, Any] = {}
    summary, wall, cpu = _timed(lambda: run_prompts(table, ["sim:fair"], store=store, concurrency=512,
                                                    handle_signals=False, ray=RayOptions(actors=2, stats=stats)))
    stop.set()
    thread.join()
    assert summary.complete and summary.totals["done"] == args.sim_prompts
    answering = [s for s in samples if 0 < s[2] < args.sim_prompts]
    rss = [s[1] for s in answering]
    n = args.sim_prompts
    out.update({
        "wall_s": wall, "prompts_per_s": n / wall,
        "driver_cpu_us_per_prompt": cpu / n * 1e6,
        "worker_cpu_us_per_prompt": float(stats.get("worker_cpu_s", 0.0)) / n * 1e6,
        "driver_peak_rss_mb": _peak_mb(),
        "driver_rss_while_answering_mb": {"first": rss[0] if rss else None, "last": rss[-1] if rss else None,
                                          "min": min(rss, default=None), "max": max(rss, default=None)},
        "rss_samples_s_mb_stored": samples[:: max(1, len(samples) // 30)],
        "ray_stats": stats,
    })
    return out


def _child(phase: str, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, __file__, "--phase", phase, "--tmp", tmp,
               "--embedded-prompts", str(args.embedded_prompts), "--repeat", str(args.repeat),
               "--http-requests", str(args.http_requests),
               "--sim-prompts", str(args.sim_prompts), "--concurrency", str(args.concurrency),
               "--latency-ms", str(args.latency_ms)]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, check=False)
    if proc.returncode != 0:
        return {"failed": proc.stderr[-3000:]}
    # the report is the last JSON line: Ray may print its workers' output to the child's stdout too
    lines = proc.stdout.strip().splitlines()
    result: dict[str, Any] = json.loads(next(line for line in reversed(lines) if line.startswith('{"')))
    return result


GOAL = ("the embedded model through Ray (2 workers x 1 thread) at >= 0.9x the in-process speed "
        "(embedded.speed_ratio_ray_vs_in_process, best of each; docs/scale.md); false when the embedded part did "
        "not run or failed (the http and million parts state no target)")


def main() -> None:
    before = load_average()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedded-prompts", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=2, help="alternating rounds of the embedded comparison")
    parser.add_argument("--http-requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--sim-prompts", type=int, default=1_000_000)
    parser.add_argument("--skip-embedded", action="store_true")
    parser.add_argument("--only", choices=["embedded", "http", "million"], default=None)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--phase", choices=["embedded", "embedded_part", "http", "million"], default=None,
                        help=argparse.SUPPRESS)
    parser.add_argument("--tmp", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--part", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase is not None:
        phases = {"embedded": phase_embedded, "embedded_part": phase_embedded_part, "http": phase_http,
                  "million": phase_million}
        print(json.dumps(phases[args.phase](args)))
        return
    import ray

    report: dict[str, Any] = {"benchmark": "ray_scale", "python": platform.python_version(), "ray": ray.__version__,
                              "cpu_count": os.cpu_count(), "ray_num_cpus": CPUS,
                              "load_average_before": before}
    wanted = [args.only] if args.only else ["embedded", "http", "million"]
    if args.skip_embedded and "embedded" in wanted:
        wanted.remove("embedded")
    for phase in wanted:
        report[phase] = _child(phase, args)
    embedded = report.get("embedded", {})
    if "speed_ratio_ray_vs_in_process" in embedded:
        report["meets_goals"] = {"embedded_ratio_at_least_0.9": embedded["speed_ratio_ray_vs_in_process"] >= 0.9}
    met = report.get("meets_goals", {}).get("embedded_ratio_at_least_0.9", False)
    finish(report, before, goal=GOAL, within_goal=met, out=args.out)


if __name__ == "__main__":
    main()
