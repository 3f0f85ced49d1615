"""Are the hiring score table's marks (each group vs the neutral resume) earned? Simulated models. Prints JSON.

``hiring_scores.diff`` is a group's mean score minus its job's neutral resume's score, paired by job,
with an occupation-bootstrap interval and a mark (swap test over occupations and the interval's t-test,
Benjamini–Hochberg within the model). This benchmark draws synthetic Score & Shortlist answers
(:mod:`counterbench.builtin.hiring.synthetic`) on the paper's design — 100 jobs = 20 occupations × 5
near-duplicate jobs, 8 groups × 5 resume variations and one neutral resume per job — with the
near-duplicates answered alike (a per-occupation × basket score shift, sd 2 points, as
``calibration_studies.py --only hiring_occupation_null``), and measures:

- ``fair``: no preference. The share of models with at least one mark (target ≤ 5%, with its exact
  Clopper–Pearson 95% interval) and the coverage of 0 by the 95% intervals shown (target 93–97%).
- ``one_group``: one group (``Chinese Male``) scored ``--effect`` points higher (8 by default), nothing
  else. The share of models whose planted group is marked; the share of models with a mark on any of
  the other seven groups, the false discovery rate (mean over models of false marks / all marks) and
  the other groups' interval coverage of 0 — and, for reference, how often the other groups' descriptive
  difference from the mean over the groups (``diff_mean``, the contrast the table used to mark) has
  an interval excluding 0.

Usage: ``python benchmarks/hiring_scores.py [--models 400] [--jobs 100] [--bootstrap 1000] [--seed 0]``
(400 models per scenario take about 1–2 minutes on one core).
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from bench_json import finish, load_average

from counterbench.builtin.hiring import synthetic as syn
from counterbench.builtin.hiring.data import Job, load_baskets, load_jobs
from counterbench.builtin.hiring.metrics import NEUTRAL, score_means

PLANTED_GROUP = "Chinese Male"


def _jobs(n_jobs: int) -> list[Job]:
    """``n_jobs`` built-in jobs, occupation by occupation (100: all 20 occupations × 5 jobs)."""
    return sorted(load_jobs(), key=lambda j: (int(j.job_id.rsplit("_", 1)[1]), j.job_id))[:n_jobs] \
        if n_jobs < 100 else load_jobs()


def _share(hits: int, total: int) -> dict[str, Any]:
    low, high = stats.binomtest(hits, total).proportion_ci(0.95) if total else (np.nan, np.nan)
    return {"hits": hits, "of": total, "share": hits / total if total else None,
            "ci95": [round(float(low), 4), round(float(high), 4)]}


def _covered(rows: pd.DataFrame, low: str, high: str) -> tuple[int, int]:
    ok = rows[low].notna() & rows[high].notna()
    inside = (rows[low] <= 1e-12) & (rows[high] >= -1e-12)
    return int(inside[ok].sum()), int(ok.sum())


def scenario(effect: float, n_models: int, jobs: list[Job], n_boot: int, seed: int) -> dict[str, Any]:
    resumes = syn.design(jobs, load_baskets())
    plan = syn.Planted(score_occupation_sd=2.0, score_effects={PLANTED_GROUP: effect} if effect else {})
    any_mark = planted_marked = other_marked = 0
    cover = [0, 0]
    mean_outside = [0, 0]
    fdp: list[float] = []
    for m in range(n_models):
        scores = syn.scores(f"sim:m{m}", plan, resumes, jobs, seed=seed * 100_003 + m, rationale=(False,))
        table = score_means(scores, n_boot=n_boot, seed=seed + m)
        groups = table[~table["group"].eq(NEUTRAL)]
        planted = groups["group"].eq(PLANTED_GROUP).to_numpy() if effect else np.zeros(len(groups), dtype=bool)
        marks = groups["significant"].astype(bool).to_numpy()
        others = groups[~planted]
        any_mark += int(marks.any())
        planted_marked += int(marks[planted].any())
        other_marked += int(marks[~planted].any())
        fdp.append(float(marks[~planted].sum() / max(marks.sum(), 1)))
        hit, total = _covered(others, "diff_low", "diff_high")
        cover[0] += hit
        cover[1] += total
        ok = others["diff_mean_low"].notna() & others["diff_mean_high"].notna()
        outside = (others["diff_mean_low"] > 0) | (others["diff_mean_high"] < 0)
        mean_outside[0] += int(outside[ok].sum())
        mean_outside[1] += int(ok.sum())
    out: dict[str, Any] = {"effect": effect, "planted_group": PLANTED_GROUP if effect else None,
                           "models": n_models, "jobs": len(jobs), "occupations": len({j.occupation for j in jobs}),
                           "bootstrap": n_boot, "seed": seed,
                           "coverage_of_0_other_groups": cover[0] / cover[1] if cover[1] else None,
                           "intervals": cover[1],
                           "diff_mean_excludes_0_other_groups": mean_outside[0] / mean_outside[1]
                           if mean_outside[1] else None}
    if effect:
        out["planted_marked"] = _share(planted_marked, n_models)
        out["models_with_another_group_marked"] = _share(other_marked, n_models)
        out["false_discovery_rate"] = float(np.mean(fdp))
    else:
        out["models_with_a_mark"] = _share(any_mark, n_models)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=400, help="simulated models per scenario")
    parser.add_argument("--jobs", type=int, default=100, help="jobs (100: the paper's 20 occupations × 5)")
    parser.add_argument("--bootstrap", type=int, default=1000, help="occupation-bootstrap replicates")
    parser.add_argument("--effect", type=float, default=8.0, help="points added to the planted group's scores")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    before = load_average()
    jobs = _jobs(args.jobs)
    started, cpu = time.perf_counter(), time.process_time()
    result = {"benchmark": "hiring_scores", "python": platform.python_version(),
              "fair": scenario(0.0, args.models, jobs, args.bootstrap, args.seed),
              "one_group": scenario(args.effect, args.models, jobs, args.bootstrap, args.seed + 1),
              "seconds": round(time.perf_counter() - started, 1), "cpu_seconds": round(time.process_time() - cpu, 1)}
    fair = result["fair"]
    coverage = fair["coverage_of_0_other_groups"]
    finish(result, before, goal="no preference (fair): models with a mark <= 5% (its Clopper-Pearson 95% interval "
                                "reaches 5%) and the 95% intervals cover 0 in 93-97%, the docstring's targets",
           within_goal=fair["models_with_a_mark"]["ci95"][0] <= 0.05
           and coverage is not None and 0.93 <= coverage <= 0.97)


if __name__ == "__main__":
    main()
