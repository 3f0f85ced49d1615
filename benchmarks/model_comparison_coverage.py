"""Do paired model differences and joint rank intervals hold what they claim? Prints JSON.

Three simulated models answer the same slots (``--slots``, default 40; also run with 12): per slot and
identity one score, ``60 + slot effect (sd 6, shared by every model: the same prompt) + model × slot
effect (sd 2) + planted gap + noise (sd 3)``. Three measures (a comparison level against the reference
each) with known gaps per model:

=========  =====  =====  =====
measure      A      B      C
=========  =====  =====  =====
level_1      0      0     −5
level_2     −2     −2     −4
level_3      1      1      3
=========  =====  =====  =====

A and B have the same law. Over ``--reps`` repetitions (default 200) this counts:

- **coverage** of the 95% interval of every paired difference (3 pairs × 3 measures; goal 93–97%);
- **family-wise false "different"**: repetitions where A and B are marked different on any measure, with
  Benjamini–Hochberg within the pair's family of 3 measures (goal ≤ 5%), and how often one A–B comparison
  alone has p ≤ 0.05 (the p-value's level);
- **joint rank coverage**: repetitions where every model's rank interval of a measure holds its true rank
  (1 + the models with a strictly smaller true size; A and B tie at 1), per measure (goal ≥ 95%).

Usage: ``python benchmarks/model_comparison_coverage.py [--reps 200] [--slots 40] [--bootstrap 1000]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from bench_json import finish, load_average, mc_error

from counterbench.analyses.model_compare import compare_models
from counterbench.analyses.model_summaries import MeasureKey, SlotStats

GAPS = {"A": (0.0, -2.0, 1.0), "B": (0.0, -2.0, 1.0), "C": (-5.0, -4.0, 3.0)}
KEYS = [MeasureKey("gap", "u", "score", "en", "f", "ref", f"level_{i + 1}", "difference", "points") for i in range(3)]


def true_rank(model: str, measure: int) -> int:
    size = abs(GAPS[model][measure])
    return 1 + sum(abs(g[measure]) < size for g in GAPS.values())


def simulate(rng: np.random.Generator, n_slots: int) -> dict[str, dict[MeasureKey, SlotStats]]:
    slot_effect = rng.normal(0.0, 6.0, size=(n_slots, 4))  # reference + three levels, shared by every model
    slots = np.asarray([f"s{i:03d}" for i in range(n_slots)], dtype=object)
    out: dict[str, dict[MeasureKey, SlotStats]] = {}
    for model, gaps in GAPS.items():
        interaction = rng.normal(0.0, 2.0, size=n_slots)
        y = 60 + slot_effect + interaction[:, None] + rng.normal(0.0, 3.0, size=(n_slots, 4))
        y[:, 1:] += np.asarray(gaps)[None, :]
        ones = np.ones(n_slots)
        out[model] = {key: SlotStats(slots, np.zeros(n_slots, dtype=object).astype(str),
                                     np.column_stack([y[:, i + 1], ones, y[:, 0], ones]))
                      for i, key in enumerate(KEYS)}
    return out


def run(reps: int, n_slots: int, bootstrap: int, seed: int = 20261204) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    covered = rows = 0
    by_pair: dict[str, list[int]] = {}
    false_family = 0
    same_rows = same_small_p = 0
    rank_hits = np.zeros(len(KEYS))
    rank_width = []
    started = time.perf_counter()
    for rep in range(reps):
        diffs, ranks = compare_models(simulate(rng, n_slots), KEYS, n_boot=bootstrap, seed=rep)
        same = False
        for r in diffs.itertuples():
            i = int(str(r.comparison).rsplit("_", 1)[1]) - 1
            truth = GAPS[str(r.model_a)][i] - GAPS[str(r.model_b)][i]
            hit = bool(r.ci_low <= truth <= r.ci_high)
            covered += hit
            rows += 1
            pair = f"{r.model_a}-{r.model_b}"
            by_pair.setdefault(pair, [0, 0])
            by_pair[pair][0] += hit
            by_pair[pair][1] += 1
            if {str(r.model_a), str(r.model_b)} == {"A", "B"}:
                same |= bool(r.significant)
                same_rows += 1
                same_small_p += bool(r.p_value <= 0.05)
        false_family += same
        for i, key in enumerate(KEYS):
            part = ranks[ranks["comparison"] == key.comparison]
            ok = all(int(r.rank_low) <= true_rank(str(r.model), i) <= int(r.rank_high) for r in part.itertuples())
            rank_hits[i] += ok
            rank_width += [int(r.rank_high) - int(r.rank_low) + 1 for r in part.itertuples()]
    return {
        "slots": n_slots, "reps": reps, "bootstrap": bootstrap, "seed": seed,
        "difference_coverage": round(covered / rows, 4),
        "difference_coverage_by_pair": {k: round(c / n, 4) for k, (c, n) in by_pair.items()},
        "same_law_marked_different_familywise": round(false_family / reps, 4),
        "same_law_p_below_005_per_measure": round(same_small_p / same_rows, 4),
        "joint_rank_coverage_by_measure": {key.comparison: round(float(h) / reps, 4) for key, h in
                                           zip(KEYS, rank_hits, strict=True)},
        "mean_rank_interval_length": round(float(np.mean(rank_width)), 3),
        "seconds": round(time.perf_counter() - started, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--slots", type=int, nargs="*", default=[40, 12])
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261204)
    args = parser.parse_args()
    before = load_average()
    runs = [run(args.reps, n, args.bootstrap, args.seed) for n in args.slots]
    for r in runs:  # the docstring's goals; the family-wise rate up to its Monte-Carlo error at this many reps
        r["within_goal"] = bool(
            0.93 <= r["difference_coverage"] <= 0.97
            and r["same_law_marked_different_familywise"] <= 0.05 + mc_error(0.05, args.reps)
            and all(c >= 0.95 for c in r["joint_rank_coverage_by_measure"].values()))
    finish({"runs": runs}, before,
           goal="for every --slots (runs[].within_goal): paired-difference coverage in 93-97%; A and B marked "
                "different family-wise in <= 5% of repetitions, up to its Monte-Carlo error "
                "2*sqrt(0.05*0.95/reps); joint rank coverage >= 95% for every measure",
           within_goal=all(r["within_goal"] for r in runs))


if __name__ == "__main__":
    main()
