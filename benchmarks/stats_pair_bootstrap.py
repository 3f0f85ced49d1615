"""Benchmark: matched pair gaps + 2,000-replicate pair bootstrap, counterbench vs the straightforward way.

Data: one model's full RupeeBias design in two languages (39,150 answers → 383,400 matched pairs),
synthesised in two regimes:

- ``llm_like``: answers rounded to ₹50,000 and 60 % of identifiers given the slot's modal answer
  (temperature-0 models repeat themselves: many Δ% are exactly 0 and values repeat);
- ``continuous``: every answer distinct (the worst case for counterbench's exact tie shortcut).

Methods (each run in a fresh subprocess so peak memory is its own):

- ``counterbench``: ``pair_gaps`` (group by slot, triu indices per slot size) + ``bootstrap_mean``
  (chunked, int64 indices, exact multinomial shortcut for repeated values), plus, reported but not
  compared, the Binomial Violation@10 bootstrap and the slot (cluster) bootstrap; run exact and
  with ``resolution=0.01`` (Δ% rounded to 0.01 pp for resampling: CI endpoints move ≤ 0.005 pp);
- ``baseline``: pandas self-merge on the slot columns, keep identifier_x < identifier_y, then one
  2,000 × n index matrix and ``gaps[idx].mean(axis=1)``.

Prints one JSON document: seconds per phase, speed ratio, peak RSS (``ru_maxrss``) and the
tracemalloc peak of the bootstrap phase, and the point estimates/CIs of both (they must agree up
to Monte Carlo error). To stay within about a minute, the baseline really runs 250 replicates
(1.5 GB) and its bootstrap time is scaled linearly to ``--n-boot`` (``baseline_extrapolated``; the
work is exactly proportional to the replicates); ``--baseline-boot 2000`` runs it in full (~12 GB,
~30 s more per regime). Also reported: ``pair_gaps`` on nine models (3.45 million pairs).

Usage: ``python benchmarks/stats_pair_bootstrap.py [--regimes llm_like,continuous] [--n-boot 2000]``
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from bench_json import finish, load_average

SRC = Path(__file__).resolve().parents[1] / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

AXES = {"Religion": 12, "Caste": 24, "Region": 30, "Gender": 5, "Disability": 11, "Urban/Rural": 5}
USE_CASES = {
    "salary_estimation": (18, 3),
    "salary_increment_estimation": (27, 3),
    "counter_offer_recommendation": (27, 2),
    "service_pricing_vendor": (9, 2),
    "service_pricing_customer": (9, 2),
}
SLOT = ["model", "use_case", "language", "axis", "profile_id", "question_variant"]


def make_frame(regime: str, seed: int = 0) -> pd.DataFrame:
    """One model's full design in English and Hinglish with synthetic answers."""
    parts = []
    for lang in ("en", "hinglish"):
        for uc, (n_prof, n_qv) in USE_CASES.items():
            for axis, k in AXES.items():
                part = pd.MultiIndex.from_product(
                    [[f"{axis}_{i:02d}" for i in range(k)], [f"p{j:02d}" for j in range(n_prof)], range(n_qv)],
                    names=["identifier", "profile_id", "question_variant"],
                ).to_frame(index=False)
                part["model"], part["use_case"], part["language"], part["axis"] = "sim", uc, lang, axis
                parts.append(part)
    frame = pd.concat(parts, ignore_index=True)
    rng = np.random.default_rng(seed)
    level = 3e5 + 1.5e5 * pd.factorize(frame["profile_id"])[0]
    if regime == "continuous":
        frame["value"] = level * rng.gamma(30.0, 1 / 30.0, len(frame))
    else:
        modal = rng.random(len(frame)) < 0.6
        noisy = np.round(level * rng.normal(1.0, 0.08, len(frame)) / 5e4) * 5e4
        frame["value"] = np.where(modal, level, noisy)
    return frame


def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _mem_available_mb() -> float:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("inf")


def run_counterbench(frame: pd.DataFrame, n_boot: int, seed: int, resolution: float | None) -> dict[str, Any]:
    from counterbench.stats import (
        bootstrap_mean,
        bootstrap_violation_rate,
        cluster_bootstrap_mean,
        pair_gaps,
    )

    start_rss = _rss_mb()
    t0 = time.perf_counter()
    pairs = pair_gaps(frame, SLOT)
    t1 = time.perf_counter()
    res = bootstrap_mean(pairs.gap, n_boot=n_boot, seed=seed, resolution=resolution)
    t2 = time.perf_counter()
    viol = bootstrap_violation_rate(pairs.gap, 10.0, n_boot=n_boot, seed=seed)
    t3 = time.perf_counter()
    clus = cluster_bootstrap_mean(pairs.gap, pairs.slot, n_boot=n_boot, seed=seed)
    t4 = time.perf_counter()
    peak_rss = _peak_rss_mb()
    tracemalloc.start()
    bootstrap_mean(pairs.gap, n_boot=min(n_boot, 200), seed=seed, resolution=resolution)
    traced_peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return {
        "resolution": resolution,
        "n_pairs": pairs.n_pairs,
        "n_distinct_gaps": int(np.unique(pairs.gap).size),
        "seconds_pair_gaps": t1 - t0,
        "seconds_bootstrap_mean": t2 - t1,
        "seconds_total": t2 - t0,
        "seconds_violation_bootstrap": t3 - t2,
        "seconds_cluster_bootstrap": t4 - t3,
        "peak_rss_mb": peak_rss,
        "peak_rss_above_start_mb": peak_rss - start_rss,
        "bootstrap_tracemalloc_peak_mb": traced_peak,
        "mean_gap": res.estimate,
        "ci": [res.low, res.high],
        "violation_at_10": viol.estimate,
        "violation_ci": [viol.low, viol.high],
        "cluster_ci": [clus.low, clus.high],
    }


def run_baseline(frame: pd.DataFrame, n_boot: int, seed: int, baseline_boot: int) -> dict[str, Any]:
    start_rss = _rss_mb()
    t0 = time.perf_counter()
    rows = frame.dropna(subset=["value"])
    merged = rows.merge(rows, on=SLOT, suffixes=("_a", "_b"))
    merged = merged[merged["identifier_a"] < merged["identifier_b"]]
    a, b = merged["value_a"].to_numpy(), merged["value_b"].to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        gaps = np.where(a + b > 0, np.abs(a - b) / ((a + b) / 2) * 100, np.nan)
    gaps = gaps[~np.isnan(gaps)]
    t1 = time.perf_counter()
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, gaps.size, size=(baseline_boot, gaps.size))
    reps = gaps[idx].mean(axis=1)
    del idx
    low, high = np.quantile(reps, [0.025, 0.975])
    t2 = time.perf_counter()
    peak_rss = _peak_rss_mb()
    scale = n_boot / baseline_boot
    return {
        "n_pairs": int(gaps.size),
        "seconds_pair_gaps": t1 - t0,
        "seconds_bootstrap_mean": (t2 - t1) * scale,
        "seconds_total": (t1 - t0) + (t2 - t1) * scale,
        "baseline_replicates_run": baseline_boot,
        "baseline_extrapolated": baseline_boot != n_boot,
        "peak_rss_mb": peak_rss,
        "peak_rss_above_start_mb": peak_rss - start_rss,
        "projected_index_and_gather_mb_at_n_boot": n_boot * gaps.size * 16 / 2**20,
        "mean_gap": float(gaps.mean()),
        "ci": [float(low), float(high)],
    }


def run_scale(seed: int) -> dict[str, Any]:
    from counterbench.stats import pair_gaps, summarise_gaps

    frame = pd.concat([make_frame("continuous", seed + m).assign(model=f"m{m}") for m in range(9)], ignore_index=True)
    t0 = time.perf_counter()
    pairs = pair_gaps(frame, SLOT)
    t1 = time.perf_counter()
    table = summarise_gaps(pairs, ["model", "language", "axis"])
    t2 = time.perf_counter()
    return {
        "n_rows": len(frame),
        "n_pairs": pairs.n_pairs,
        "seconds_pair_gaps": t1 - t0,
        "seconds_summarise_by_model_language_axis": t2 - t1,
        "n_cells": len(table),
        "peak_rss_mb": _peak_rss_mb(),
    }


def worker(args: argparse.Namespace) -> dict[str, Any]:
    if args.worker == "scale":
        return run_scale(args.seed)
    frame = make_frame(args.regime, args.seed)
    if args.worker == "counterbench":
        return run_counterbench(frame, args.n_boot, args.seed, args.resolution)
    return run_baseline(frame, args.n_boot, args.seed, args.baseline_boot)


def _spawn(
    method: str, regime: str, args: argparse.Namespace, baseline_boot: int, resolution: float | None = None
) -> dict[str, Any]:
    cmd = [
        sys.executable, __file__, "--worker", method, "--regime", regime, "--n-boot", str(args.n_boot),
        "--seed", str(args.seed), "--baseline-boot", str(baseline_boot),
    ]  # fmt: skip
    if resolution is not None:
        cmd += ["--resolution", str(resolution)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def agreement(ours: dict[str, Any], base: dict[str, Any], n_boot: int) -> dict[str, Any]:
    """Do counterbench's point estimate and 95% CI agree with the baseline's up to Monte Carlo error?

    The point estimates are means of the same pairs: equal up to floating-point rounding (relative 1e-9).
    A percentile endpoint of B bootstrap replicates has Monte Carlo standard error ≈ 2.67·s/√B (the 2.5%
    quantile of a normal of SD s: √(0.025·0.975/B)/φ(1.96)·s), s taken from the baseline's interval
    ((high − low)/3.92); the endpoints must differ by at most 3 standard errors of their difference (both
    runs' B), plus ``resolution / 2`` for a resampling on rounded values (the docstring's bound)."""
    s = (base["ci"][1] - base["ci"][0]) / (2 * 1.959964)
    se = 2.671 * s * math.sqrt(1 / n_boot + 1 / base["baseline_replicates_run"])
    tolerance = 3 * se + (ours["resolution"] or 0.0) / 2
    ci_diff = max(abs(a - b) for a, b in zip(ours["ci"], base["ci"], strict=True))
    same_mean = abs(ours["mean_gap"] - base["mean_gap"]) <= 1e-9 * max(1.0, abs(base["mean_gap"]))
    return {"ci_max_abs_diff": ci_diff, "ci_mc_tolerance": tolerance,
            "agrees": bool(ours["n_pairs"] == base["n_pairs"] and same_mean and ci_diff <= tolerance)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--regimes", default="llm_like,continuous")
    parser.add_argument("--n-boot", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--baseline-boot", type=int, default=250, help="replicates the baseline really runs")
    parser.add_argument("--worker", choices=["counterbench", "baseline", "scale"], help=argparse.SUPPRESS)
    parser.add_argument("--regime", help=argparse.SUPPRESS)
    parser.add_argument("--resolution", type=float, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args)))
        return
    before = load_average()
    n_pairs = 383_400
    need_mb = args.n_boot * n_pairs * 16 / 2**20 + 1500
    baseline_boot = min(args.baseline_boot, args.n_boot)
    if need_mb * baseline_boot / args.n_boot > 0.7 * _mem_available_mb():
        baseline_boot = max(50, int(args.n_boot * 0.7 * _mem_available_mb() / need_mb))
    report: dict[str, Any] = {
        "benchmark": "stats_pair_bootstrap",
        "n_boot": args.n_boot,
        "cpu_count": os.cpu_count(),
        "numpy": np.__version__,
        "pandas": pd.__version__,
        "regimes": {},
    }
    for regime in [r for r in args.regimes.split(",") if r]:
        ours = _spawn("counterbench", regime, args, baseline_boot)
        rounded = _spawn("counterbench", regime, args, baseline_boot, resolution=0.01)
        base = _spawn("baseline", regime, args, baseline_boot)
        report["regimes"][regime] = {
            "counterbench": ours,
            "counterbench_resolution_0.01": rounded,
            "baseline": base,
            "speed_ratio_total_resolution_0.01": base["seconds_total"] / rounded["seconds_total"],
            "speed_ratio_total": base["seconds_total"] / ours["seconds_total"],
            "speed_ratio_pair_gaps": base["seconds_pair_gaps"] / ours["seconds_pair_gaps"],
            "speed_ratio_bootstrap": base["seconds_bootstrap_mean"] / ours["seconds_bootstrap_mean"],
            "peak_rss_ratio": base["peak_rss_mb"] / ours["peak_rss_mb"],
            "same_pairs": base["n_pairs"] == ours["n_pairs"],
            "mean_gap_abs_diff": abs(base["mean_gap"] - ours["mean_gap"]),
            "agreement_with_baseline": agreement(ours, base, args.n_boot),
            "agreement_with_baseline_resolution_0.01": agreement(rounded, base, args.n_boot),
        }
    report["scale_nine_models"] = _spawn("scale", "continuous", args, baseline_boot)
    finish(report, before, goal="in every regime counterbench (exact and resolution 0.01) and the baseline agree, "
                                "as the docstring requires 'up to Monte Carlo error': the same pairs, the same "
                                "mean gap (relative 1e-9) and 95% CI endpoints within 3 Monte Carlo standard "
                                "errors of the two runs' replicates (+ resolution/2); see agreement()",
           within_goal=bool(report["regimes"]) and all(
               r[key]["agrees"] for r in report["regimes"].values()
               for key in ("agreement_with_baseline", "agreement_with_baseline_resolution_0.01")))


if __name__ == "__main__":
    main()
