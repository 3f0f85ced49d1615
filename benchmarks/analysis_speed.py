"""How fast is ``counterbench analyze rupeebias`` on a full study? Prints JSON.

1. **Full analysis.** 9 simulated models × the complete RupeeBias prompt set (39,150 prompts each,
   352,350 responses) → every table of :func:`counterbench.families.amount.analysis.analyze` with
   2,000-replicate bootstraps. Wall time and peak memory (``ru_maxrss`` of a child process that
   does only this). Goals: ≤ 60 s and ≤ 2 GB on 2 cores.

   ``--source law`` (default) builds the results table in memory with the simulated model's
   generative law (profile baseline × identifier multiplier × lognormal noise, 1% refusals, 1%
   malformed answers; :mod:`tests.analyses.simlaw`). ``--source store`` instead runs 9 ``sim:``
   models (YAML files written for the run) through the real engine into a SQLite store (in its own
   child process), then times ``load_results`` (reading and joining the store) and the analysis
   separately, in a child that does only that (its peak memory is what ``counterbench analyze``
   needs).

2. **Against the straightforward algorithm**, in the same run, on a subset (one model, both
   languages, salary estimation, question variant 1: 3,132 responses, ~29,500 pairs): pairs by a
   pandas self-merge on the slot columns, and for every cell of the leaderboard, axis and use-case
   tables a percentile bootstrap from a 2,000 × n index matrix (``rng.integers(0, n, (2000, n))``,
   as the release did) — versus counterbench's pair construction and stratified bootstrap for the
   same tables (which also computes the slot-cluster and Violation@τ intervals). Goal: ≥ 10×. The
   subset is small enough for the index matrices to fit in memory (~0.5 GB for the largest cell).

3. **Many models in bounded memory** (``--models N``, N > 9, implies ``--source store``): the 9
   engine-built models are copied in SQL to N models (copy ``k`` of a model gets every value
   multiplied by a deterministic per-response factor within ±2%, so the copies differ), then
   ``counterbench.analyze(store)`` — which reads and analyses the store one model at a time
   (:mod:`counterbench.families.amount.by_model`) — is timed in a child process; its peak RSS is what
   ``counterbench analyze`` needs. Goal: N = 50 (1,957,500 responses) within 4 GB. Before the
   copies, the same path is timed on the 9 models alone (``nine``, with the workers ``counterbench analyze``
   picks: one per core; goal: ≤ 30 s), again in one process (``nine_one_worker``), and the same study
   analysis of the same answers read into memory first (``nine_in_memory``: ``counterbench.analyze(frame)``,
   reading timed apart); ``store_vs_memory`` is the ratio of the wall times (goal: ≤ 1.1), ``store_vs_memory_cpu``
   of the CPU times (workers' included). ``peak_rss_total_mb`` bounds the memory held at once (this process
   and every worker at its largest).

4. **Against an earlier version** (``--baseline SRC``, with the law source): the full analysis of 1.
   again, in the same run, with the ``counterbench`` package of another checkout's ``src`` folder
   (e.g. ``git archive <commit> src | tar -x -C /tmp/base``, then ``--baseline /tmp/base/src``), the
   same data: its wall and CPU time and the ratios ``baseline / this`` (above 1: this version is faster).

A short run: ``--models 2 --repeat 1`` (the first two simulated models in 1. and 4.).

Usage: ``python benchmarks/analysis_speed.py [--source law|store] [--models N] [--bootstrap 2000]
[--repeat 3] [--baseline SRC] [--out FILE]``. The machine's load average is reported (before and after the
run, and at the end of each timed phase of 3.): the figures are wall times (and CPU times). With
``--models N`` (N > 9), ``within_goal`` is true when the 9 models take ≤ 30 s from the store and ≤ 1.1× the
in-memory analysis (a one-line summary goes to stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

#: the 9 simulated models: (name, noise sd, strength of the planted ±15% bias as a fraction)
MODELS = [(f"sim:bench{i}", 0.02 + 0.005 * i, i / 8) for i in range(9)]
SUBSET = {"use_case": ["salary_estimation"], "question_variant": [1]}


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _effects(strength: float) -> dict[str, float]:
    from tests.analyses.simlaw import PLANTED

    return {k: 1.0 + (v - 1.0) * strength for k, v in PLANTED.items()}


def _law_results(n_models: int = len(MODELS)) -> Any:
    import pandas as pd
    from tests.analyses.simlaw import baselines, simulate_results

    from counterbench.prompts import prompts

    table = prompts("rupeebias")
    base = baselines(table)
    frames = [simulate_results(table, name, effects=_effects(strength), noise_sd=sd, refusal_rate=0.01,
                               malformed_rate=0.01, seed=i, base=base)
              for i, (name, sd, strength) in enumerate(MODELS[:n_models])]
    return pd.concat(frames, ignore_index=True)


def _build_store(folder: Path) -> tuple[Path, float]:
    import yaml

    from counterbench.prompts import prompts
    from counterbench.run import run_prompts

    models = []
    for name, sd, strength in MODELS:
        path = folder / f"{name.split(':')[1]}.yaml"
        path.write_text(yaml.safe_dump({"extends": "fair", "noise_sd": sd, "identifier_effects": _effects(strength)}))
        models.append(f"sim:{path}")
    store = folder / "bench.db"
    started = time.perf_counter()
    summary = run_prompts(prompts("rupeebias"), models, store=store, handle_signals=False, concurrency=64)
    if not summary.complete:
        raise SystemExit(f"building the store failed: {summary.status}")
    return store, time.perf_counter() - started


def phase_build(args: argparse.Namespace) -> dict[str, Any]:
    """Child process: fill a store with the 9 simulated models through the engine."""
    store, seconds = _build_store(Path(args.store).parent)
    return {"store": str(store), "store_build_s": seconds, "store_mb": store.stat().st_size / 1e6,
            "peak_rss_mb": _peak_mb()}


def _copy_models(store: Path, n_models: int) -> float:
    """Fill ``store`` up to ``n_models`` models by copying the engine-built ones (see the module docstring)."""
    import sqlite3

    from counterbench.run.store import RESPONSE_COLUMNS

    started = time.perf_counter()
    cols = [c for c in RESPONSE_COLUMNS if c not in ("model", "value")]
    with sqlite3.connect(store) as conn:
        built = [m for (m,) in conn.execute("SELECT DISTINCT model FROM responses ORDER BY model")]
        for k in range(len(built), n_models):
            source = built[k % len(built)]
            conn.execute(
                f"INSERT INTO responses (model, value, {', '.join(cols)}) "
                f"SELECT ?, value * (1.0 + ((id * 2654435761 + ?) % 1000 - 500) / 25000.0), {', '.join(cols)} "
                "FROM responses WHERE model = ?",
                (f"sim:copy{k}", k, source),
            )
            conn.commit()
    return time.perf_counter() - started


def _children_usage() -> tuple[float, float]:
    """CPU seconds and peak RSS (MB, the largest) of this process's finished children (analysis workers)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0


def phase_many(args: argparse.Namespace) -> dict[str, Any]:
    """Child process: ``counterbench.analyze(store)`` on a store of many models (read model by model; with
    ``--workers`` models at once, default as ``counterbench analyze`` picks)."""
    from counterbench.analyses.model_workers import auto_workers
    from counterbench.pipeline import analyze
    from counterbench.run.study_results import count_answers, study_models

    workers = args.workers if args.workers is not None else auto_workers(
        count_answers(args.store), len(study_models(args.store, "rupeebias")))
    started = time.perf_counter()
    cpu0, (child_cpu0, _) = time.process_time(), _children_usage()
    result = analyze(args.store, bootstrap=args.bootstrap, seed=0, workers=workers)
    child_cpu, child_rss = _children_usage()
    own_rss = _peak_mb()
    return {"analyze_store_s": time.perf_counter() - started, "workers": workers,
            "analyze_cpu_s": time.process_time() - cpu0 + child_cpu - child_cpu0,
            "load_average": os.getloadavg(), "peak_rss_mb": own_rss,
            "workers_peak_rss_mb": child_rss if workers > 1 else 0.0,
            # an upper bound of the memory held at once: this process and every worker at its largest
            "peak_rss_total_mb": own_rss + (workers * child_rss if workers > 1 else 0.0),
            "models": len(result.summary["models"]),
            "responses": int(result.summary["n_responses"]), "pairs": int(result.summary["n_pairs"])}


def phase_memory(args: argparse.Namespace) -> dict[str, Any]:
    """Child process: the same study analysis as ``many``, on the store's answers read into memory first
    (``counterbench.analyze(frame)``); the reading is timed apart."""
    from counterbench.pipeline import analyze
    from counterbench.run.study_results import load_study_results

    started = time.perf_counter()
    results = load_study_results(args.store, "rupeebias", models=None, profile="default")
    read_s = time.perf_counter() - started
    started = time.perf_counter()
    cpu0 = time.process_time()
    result = analyze(results, "rupeebias", bootstrap=args.bootstrap, seed=0)
    return {"read_s": read_s, "analyze_s": time.perf_counter() - started, "analyze_cpu_s": time.process_time() - cpu0,
            "load_average": os.getloadavg(), "peak_rss_mb": _peak_mb(), "models": len(result.summary["models"]),
            "responses": int(result.summary["n_responses"])}


def phase_full(args: argparse.Namespace) -> dict[str, Any]:
    """Child process: load or generate the data, then time the full analysis alone."""
    from counterbench.families.amount.analysis import analyze

    out: dict[str, Any] = {}
    started = time.perf_counter()
    if args.store:
        from counterbench.run.results import load_results

        results = load_results(args.store)
        out["load_results_s"] = time.perf_counter() - started
    else:
        results = _law_results(min(args.models, len(MODELS)))
        out["generate_s"] = time.perf_counter() - started
    out["responses"] = len(results)
    out["models"] = int(results["model"].nunique())
    rss_before = _peak_mb()
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    result = analyze(results, bootstrap=args.bootstrap, seed=0)
    out["analyze_s"] = time.perf_counter() - t0
    out["analyze_cpu_s"] = time.process_time() - cpu0
    out["peak_rss_mb"] = _peak_mb()
    out["peak_rss_before_analyze_mb"] = rss_before
    out["pairs"] = int(result.summary["n_pairs"])
    out["tables"] = {name: len(frame) for name, frame in result.tables.items()}
    out["unsupported"] = sorted(result.summary["unsupported"])
    return out


def _naive(values: Any, n_boot: int) -> dict[tuple[tuple[str, ...], tuple[Any, ...]], tuple[float, float, float]]:
    """The straightforward algorithm: self-merge pairs, a 2,000 × n index matrix per cell."""
    import numpy as np

    slot = ["model", "language", "use_case", "axis", "profile_id", "question_variant"]
    frame = values[[*slot, "identifier", "value"]].astype({c: str for c in [*slot, "identifier"]})
    pairs = frame.merge(frame, on=slot, suffixes=("_a", "_b"))
    pairs = pairs[pairs["identifier_a"] < pairs["identifier_b"]]
    a, b = pairs["value_a"].to_numpy(), pairs["value_b"].to_numpy()
    pairs = pairs.assign(delta=np.abs(a - b) / ((a + b) / 2) * 100)
    rng = np.random.default_rng(0)
    out = {}
    cells = [("model",), ("model", "language"), ("model", "language", "axis"), ("model", "language", "use_case")]
    for by in cells:
        for key, part in pairs.groupby(list(by)):
            arr = part["delta"].dropna().to_numpy()
            idx = rng.integers(0, arr.size, size=(n_boot, arr.size))
            means = arr[idx].mean(axis=1)
            low, high = np.percentile(means, [2.5, 97.5])
            out[(by, key if isinstance(key, tuple) else (key,))] = float(np.mean(arr)), float(low), float(high)
    return out


def _ours(values: Any, n_boot: int) -> dict[str, Any]:
    from counterbench.analyses.profiles import get_profile
    from counterbench.families.amount import magnitude

    fam = magnitude.gap_family(values, get_profile("default"), n_boot=n_boot, seed=0, tau=10.0)
    board = magnitude.leaderboard(fam, {})
    return {"leaderboard": board, "axis": magnitude.axis_mean_delta(fam),
            "use_case": magnitude.use_case_mean_delta(fam)}


def phase_compare(args: argparse.Namespace) -> dict[str, Any]:
    """Child process: counterbench vs the straightforward algorithm on the subset, best of N."""
    from tests.analyses.simlaw import simulate_results

    from counterbench.analyses.prepare import prepare_results
    from counterbench.analyses.profiles import get_profile
    from counterbench.prompts import prompts

    name, sd, strength = MODELS[4]
    results = simulate_results(prompts("rupeebias", **SUBSET), name, effects=_effects(strength), noise_sd=sd,
                               refusal_rate=0.01, malformed_rate=0.01)
    values = prepare_results(results, get_profile("default")).values
    timings: dict[str, list[float]] = {"naive_s": [], "counterbench_s": []}
    naive_out: dict[Any, Any] = {}
    ours_out: dict[str, Any] = {}
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        naive_out = _naive(values, args.bootstrap)
        timings["naive_s"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        ours_out = _ours(values, args.bootstrap)
        timings["counterbench_s"].append(time.perf_counter() - t0)
    board = ours_out["leaderboard"].iloc[0]
    overall = naive_out[(("model",), (name,))]
    naive_s, ours_s = min(timings["naive_s"]), min(timings["counterbench_s"])
    return {
        "subset": {**SUBSET, "model": name, "responses": len(results), "pairs": int(board["n_pairs"])},
        "cells": len(naive_out),
        "naive_s": naive_s,
        "counterbench_s": ours_s,
        "speedup": naive_s / ours_s,
        "all_naive_s": timings["naive_s"],
        "all_counterbench_s": timings["counterbench_s"],
        "peak_rss_mb": _peak_mb(),
        "overall_mean_delta": {"naive": overall[0], "counterbench": float(board["overall_mean_delta"])},
        "overall_ci": {"naive": [overall[1], overall[2]],
                       "counterbench": [float(board["ci_low"]), float(board["ci_high"])]},
    }


def _child(phase: str, args: argparse.Namespace, store: Path | None = None, package: Path | None = None,
           workers: int | None = None) -> dict[str, Any]:
    """Run ``phase`` in a child process; ``package``: the ``src`` folder whose counterbench it imports."""
    cmd = [sys.executable, __file__, "--phase", phase, "--source", args.source, "--bootstrap", str(args.bootstrap),
           "--repeat", str(args.repeat), "--models", str(args.models)]
    if workers is not None:
        cmd += ["--workers", str(workers)]
    if store is not None:
        cmd += ["--store", str(store)]
    env = None
    if package is not None:
        if not (package / "counterbench" / "__init__.py").is_file():
            raise SystemExit(f"--baseline {package}: no counterbench package in that folder")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(package), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, check=False, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"phase {phase} failed:\n{proc.stderr}")
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", choices=["law", "store"], default="law")
    parser.add_argument("--bootstrap", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--models", type=int, default=len(MODELS),
                        help="models (fewer than 9: the first N, a short run of the full analysis; more than 9: "
                        "copies in the store, analysed model by model)")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="the src folder of an earlier checkout: its full analysis of the same data, for ratios")
    parser.add_argument("--phase", choices=["build", "full", "compare", "many", "memory"], default=None,
                        help=argparse.SUPPRESS)
    parser.add_argument("--store", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--workers", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase is not None:
        phases = {"build": phase_build, "full": phase_full, "compare": phase_compare, "many": phase_many,
                  "memory": phase_memory}
        print(json.dumps(phases[args.phase](args)))
        return
    report: dict[str, Any] = {
        "benchmark": "analysis_speed",
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "load_average_before": os.getloadavg(),
        "bootstrap": args.bootstrap,
        "source": args.source,
        "goals": {"full_analysis_s": 60, "peak_rss_mb": 2048, "speedup": 10},
    }
    if args.models > len(MODELS):
        with tempfile.TemporaryDirectory() as tmp:
            args.source = report["source"] = "store"
            report["store"] = _child("build", args, Path(tmp) / "bench.db")
            store = Path(report["store"]["store"])
            # the 9 engine-built models first, through the same model-by-model path (goal: <= 30 s), and the
            # same analysis of the same answers read into memory first (goal: the store path within 1.1x)
            report["nine"] = _child("many", args, store)
            report["nine_one_worker"] = _child("many", args, store, workers=1)
            report["nine_in_memory"] = _child("memory", args, store)
            for name in ("nine", "nine_one_worker"):
                report[name]["store_vs_memory"] = (report[name]["analyze_store_s"]
                                                   / report["nine_in_memory"]["analyze_s"])
                report[name]["store_vs_memory_cpu"] = (report[name]["analyze_cpu_s"]
                                                       / report["nine_in_memory"]["analyze_cpu_s"])
            report["store"]["copy_s"] = _copy_models(store, args.models)
            report["store"]["store_mb"] = store.stat().st_size / 1e6
            report["many"] = _child("many", args, store)
        report["goals"] = {"peak_rss_mb": 4096, "nine_models_s": 30, "store_vs_memory": 1.1}
        report["meets_goals"] = {"memory": report["many"]["peak_rss_total_mb"] <= 4096,
                                 "nine_models_time": report["nine"]["analyze_store_s"] <= 30,
                                 "store_vs_memory": report["nine"]["store_vs_memory"] <= 1.1}
        # the goal of issue 33: 9 models from the store in <= 30 s and within 1.1x of the in-memory analysis
        report["within_goal"] = report["meets_goals"]["nine_models_time"] and report["meets_goals"]["store_vs_memory"]
        report["load_average_after"] = os.getloadavg()
        print(f"load average {report['load_average_before']} -> {report['load_average_after']}; 9 models from the "
              f"store {report['nine']['analyze_store_s']:.1f} s with {report['nine']['workers']} workers "
              f"({report['nine']['analyze_cpu_s']:.1f} s CPU), one worker "
              f"{report['nine_one_worker']['analyze_store_s']:.1f} s,"
              f" in memory {report['nine_in_memory']['analyze_s']:.1f} s; within_goal={report['within_goal']}",
              file=sys.stderr)
        _emit(report, args.out)
        return
    if args.source == "store":
        with tempfile.TemporaryDirectory() as tmp:
            report["store"] = _child("build", args, Path(tmp) / "bench.db")
            report["full"] = _child("full", args, Path(report["store"]["store"]))
    else:
        report["full"] = _child("full", args)
        if args.baseline is not None:
            base = _child("full", args, package=args.baseline.resolve())
            report["baseline"] = {"package": str(args.baseline), "analyze_s": base["analyze_s"],
                                  "analyze_cpu_s": base["analyze_cpu_s"], "peak_rss_mb": base["peak_rss_mb"],
                                  "wall_ratio": base["analyze_s"] / report["full"]["analyze_s"],
                                  "cpu_ratio": base["analyze_cpu_s"] / report["full"]["analyze_cpu_s"]}
    report["compare"] = _child("compare", args)
    report["load_average_after"] = os.getloadavg()
    report["meets_goals"] = {
        "time": report["full"]["analyze_s"] <= 60,
        "memory": report["full"]["peak_rss_mb"] <= 2048,
        "speedup": report["compare"]["speedup"] >= 10,
    }
    _emit(report, args.out)


def _emit(report: dict[str, Any], out: Path | None) -> None:
    text = json.dumps(report, indent=2)
    if out is not None:
        out.write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
