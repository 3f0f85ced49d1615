"""Is ``stem_extreme_gap``'s mark earned, and does it see an effect that covers many profiles? Prints JSON.

The table's mark combines two tests of the designated extreme-profile gap at the progressive
experiment's last step (and its ablation): the rank of the designated pair's gap among all pairs of
profiles and an additive least-squares model of the profiles' means (weighted Bonferroni,
``min(1, p_model/0.8, p_rank/0.2)``; :mod:`counterbench.builtin.stem.headline`). Simulated models of
India's progressive experiment and ablation at their last steps (generation task, every built-in
problem; :func:`counterbench.builtin.stem.simulate.simulate_outcomes`, ``sim:stem``'s noise):

- ``null``: nothing planted, a per-profile random effect (sd 0.1 on the log scale: a profile's answers
  are not independent). The share of models with a mark (target ≤ 5%, exact Clopper–Pearson 95%
  interval), and the per-test rates of ``p_rank`` ≤ 0.05 and ``p_model`` ≤ 0.05.
- ``sixth``: Non-binary Disabled students — a sixth of the profiles — answered ``--effect`` grade
  levels lower (3 by default), nothing else, the same profile effect: the share of models whose
  progressive row is marked, with the rank test alone (``p_rank``/BH as before) for comparison.

Usage: ``python benchmarks/stem_extreme_gap.py [--models 300] [--effect 3.0] [--seed 0] [--only null|sixth]``
(about 0.16 s of CPU per model and scenario; 600 models of both: 189 s of CPU).
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from bench_json import finish, load_average
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from counterbench.builtin.stem import analysis as A
from counterbench.builtin.stem.design import StemDesign, build_prompt_table
from counterbench.builtin.stem.headline import extreme_gap_table
from counterbench.builtin.stem.simulate import simulate_outcomes
from counterbench.models.sim_effects import Effect
from counterbench.models.simulated import load_profile
from counterbench.stats.inference import family_marks

#: a sixth of the profiles: one gender level (of 3) × one disability level (of 2), both at the marginalised end
SIXTH = {"use_case": ("generation",), "gender": ("Non-binary",), "disability": ("Disabled",)}


def last_steps() -> pd.DataFrame:
    """India's progressive experiment and ablation at their last steps, generation task."""
    table = build_prompt_table(StemDesign.paper(contexts=(), progressive=("india",), single_attribute=(),
                                                tasks=("generation",)))
    return table[table["step"].eq(table.groupby("experiment")["step"].transform("max"))].reset_index(drop=True)


def _share(hits: int, total: int) -> dict[str, Any]:
    low, high = stats.binomtest(hits, total).proportion_ci(0.95)
    return {"hits": hits, "of": total, "share": hits / total, "ci95": [round(float(low), 4), round(float(high), 4)]}


def scenario(table: pd.DataFrame, n_models: int, effect: float, seed: int) -> dict[str, Any]:
    base = load_profile("stem")
    preset = replace(base, effects=(Effect(match=SIXTH, add=-effect),) if effect else ())
    marked = rank_only = 0
    p_rank, p_model = [], []
    for m in range(n_models):
        frame = A.outcome_frame(simulate_outcomes(table, f"sim:m{m}", preset=preset, seed=seed, profile_sd=0.1))
        gaps = extreme_gap_table(frame)
        _, rank_marks = family_marks(gaps, p_col="p_rank", family=("model",), testable=gaps["testable"])
        rows = gaps["experiment"].eq("progressive").to_numpy() if effect else np.ones(len(gaps), dtype=bool)
        marked += int(gaps.loc[rows, "significant"].astype(bool).any())
        rank_only += int(rank_marks[rows].any())
        p_rank += gaps["p_rank"].tolist()
        p_model += gaps["p_model"].tolist()
    out: dict[str, Any] = {"effect_grade_levels": effect, "models": n_models, "seed": seed,
                           "planted": "Non-binary Disabled (a sixth of the profiles)" if effect else None,
                           "marked": _share(marked, n_models), "marked_by_rank_alone": _share(rank_only, n_models),
                           "rows": len(p_rank),
                           "p_rank_le_0.05": float(np.mean(np.asarray(p_rank) <= 0.05)),
                           "p_model_le_0.05": float(np.nanmean(np.asarray(p_model) <= 0.05)),
                           "p_rank_median": float(np.median(p_rank))}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=300, help="simulated models per scenario")
    parser.add_argument("--effect", type=float, default=3.0, help="grade levels taken from the planted sixth")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=("null", "sixth"), help="run one scenario")
    args = parser.parse_args()
    before = load_average()
    table = last_steps()
    started, cpu = time.perf_counter(), time.process_time()
    result: dict[str, Any] = {"benchmark": "stem_extreme_gap", "python": platform.python_version(),
                              "prompts": len(table)}
    if args.only in (None, "null"):
        result["null"] = scenario(table, args.models, 0.0, args.seed)
    if args.only in (None, "sixth"):
        result["sixth"] = scenario(table, args.models, args.effect, args.seed + 1)
    result.update(seconds=round(time.perf_counter() - started, 1), cpu_seconds=round(time.process_time() - cpu, 1))
    # null: the docstring's target (≤ 5% marked) up to Monte Carlo error: its Clopper–Pearson interval reaches 5%;
    # sixth: the mark sees the planted sixth: marked more often than the null's 5%, beyond Monte Carlo error
    checks = [result["null"]["marked"]["ci95"][0] <= 0.05] if "null" in result else []
    checks += [result["sixth"]["marked"]["ci95"][0] > 0.05] if "sixth" in result else []
    finish(result, before, goal="null: at most 5% of the models marked (the docstring's target) within Monte Carlo "
                                "error, i.e. the exact 95% Clopper-Pearson interval of the share marked starts at "
                                "or below 0.05; sixth: the planted sixth's progressive row is marked more often "
                                "than that 5% (its interval starts above 0.05), i.e. the mark sees an effect "
                                "covering many profiles",
           within_goal=all(checks))


if __name__ == "__main__":
    main()
