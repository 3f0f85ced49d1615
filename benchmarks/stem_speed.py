"""STEM study speed and calibration, printed as JSON.

1. ``prompt_table_s``: building the ``paper`` preset's prompt table (both contexts, 100 profiles each,
   both tasks and roles, the progressive experiment, its ablation and the single-attribute replication),
   reading the study's data files (``import_s`` is the one-off import of counterbench and its libraries;
   ``prompt_table_second_s`` a second build with the data caches cleared). Target ≤ 2 s.
2. ``analysis_s``: every STEM analysis table for two simulated models × the ``paper`` preset (both tasks),
   from results rows as the store returns them (the generation task's MGL scored at parse time).
   Target ≤ 30 s.
3. ``calibration``: over ``--seeds`` seeds (≥ 100 for the closing figure), a fresh profile sample and
   a fresh ``sim:stem`` draw per seed, the main experiment's pairwise tests: the share of comparisons of
   *unplanted* attributes that are FDR-significant (response and profile level; nominal 0.05), and the
   share of planted comparisons that are (power).

Usage: ``python benchmarks/stem_speed.py [--seeds 100]``.

``within_goal``: the prompt table built in ≤ 2 s, the analysis in ≤ 30 s, and both unplanted rates
(response and profile level) ≤ the nominal 0.05 + the Monte Carlo error 2·√(0.05·0.95/n) over the n
unplanted comparisons of all seeds; ``goal_checks`` gives each part.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from typing import Any

import numpy as np
import pandas as pd
from bench_json import finish, load_average, mc_error


def _planted(frame: pd.DataFrame) -> pd.Series:
    ranking = frame["task"].eq("ranking") & (
        (frame["attribute"].eq("location") & (frame["level_a"].eq("Rural") | frame["level_b"].eq("Rural")))
        | (frame["attribute"].eq("income") & (frame["level_a"].eq("Low") | frame["level_b"].eq("Low"))))
    generation = frame["task"].eq("generation") & frame["attribute"].eq("disability")
    return ranking | generation


def _affected_attribute(frame: pd.DataFrame) -> pd.Series:
    return (frame["task"].eq("ranking") & frame["attribute"].isin(["location", "income"])) | (
        frame["task"].eq("generation") & frame["attribute"].eq("disability"))


def main() -> None:
    before = load_average()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    out: dict[str, Any] = {}

    t0 = time.perf_counter()
    from counterbench.builtin.stem import design as stem_design
    from counterbench.builtin.stem import problems, profiles

    out["import_s"] = round(time.perf_counter() - t0, 3)
    t0 = time.perf_counter()
    table = stem_design.build_prompt_table(stem_design.StemDesign.paper())
    out["prompt_table_s"] = round(time.perf_counter() - t0, 3)
    out["prompt_rows"] = len(table)
    for cached in (profiles.load_contexts, problems._builtin, stem_design.presets, stem_design.prompt_texts):
        cached.cache_clear()
    t0 = time.perf_counter()
    stem_design.build_prompt_table(stem_design.StemDesign.paper())
    out["prompt_table_second_s"] = round(time.perf_counter() - t0, 3)
    out["load_average"] = round(os.getloadavg()[0], 2)
    StemDesign, build_prompt_table = stem_design.StemDesign, stem_design.build_prompt_table

    from counterbench.builtin.stem import analysis as A
    from counterbench.builtin.stem import analysis_designs as D
    from counterbench.builtin.stem.simulate import simulate_outcomes

    results = pd.concat([simulate_outcomes(table, "sim:a", seed=1), simulate_outcomes(table, "sim:b", seed=2)],
                        ignore_index=True)
    t0 = time.perf_counter()
    frame = A.outcome_frame(results)
    A.descriptive(frame)
    A.bias_tables(frame)
    A.pairwise_tables(frame)
    A.shap_tables(frame)
    A.kappa_table(frame)
    D.progressive_table(frame)
    D.interaction_tables(frame)
    D.single_attribute_table(frame)
    D.extremes_table(frame)
    D.position_tables(frame)
    out["analysis_s"] = round(time.perf_counter() - t0, 3)
    out["analysis_rows"] = len(results)

    rates: dict[str, list[float]] = {"unplanted_response": [], "unplanted_profile": [], "planted_response": [],
                                     "planted_profile": []}
    t0 = time.perf_counter()
    for seed in range(args.seeds):
        design = StemDesign.paper(seed=seed, progressive=[], single_attribute=[])
        rows = simulate_outcomes(build_prompt_table(design), "sim:stem", seed=seed)
        pw = A.pairwise_tables(A.outcome_frame(rows))
        planted, affected = _planted(pw), _affected_attribute(pw)
        unplanted = ~affected
        for unit in ("response", "profile"):
            rates[f"unplanted_{unit}"].append(float(pw.loc[unplanted, f"significant_{unit}"].mean()))
            rates[f"planted_{unit}"].append(float(pw.loc[planted, f"significant_{unit}"].mean()))
    out["calibration"] = {
        "seeds": args.seeds,
        "comparisons_per_seed": len(pw),
        "unplanted_comparisons_per_seed": int(unplanted.sum()),
        **{f"{k}_rate": round(float(np.mean(v)), 4) for k, v in rates.items()},
        "unplanted_profile_rate_max_seed": round(float(np.max(rates["unplanted_profile"])), 4),
        "nominal": 0.05,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    calibration = out["calibration"]
    n = args.seeds * calibration["unplanted_comparisons_per_seed"]
    bound = round(0.05 + mc_error(0.05, n), 4)
    checks = {
        "prompt_table_s_at_most_2": out["prompt_table_s"] <= 2.0,
        "analysis_s_at_most_30": out["analysis_s"] <= 30.0,
        f"unplanted_response_rate_at_most_{bound}": calibration["unplanted_response_rate"] <= bound,
        f"unplanted_profile_rate_at_most_{bound}": calibration["unplanted_profile_rate"] <= bound,
    }
    out["goal_checks"] = checks
    goal = (f"the paper preset's STEM prompt table built in <= 2 s, every STEM analysis table for 2 simulated models "
            f"x the paper preset in <= 30 s (the docstring's targets), and over {args.seeds} seeds the share of "
            f"unplanted comparisons FDR-significant (response and profile level) each <= the nominal 0.05 + Monte "
            f"Carlo error 2*sqrt(0.05*0.95/n) over their n = {n} comparisons = {bound}")
    finish(out, before, goal=goal, within_goal=all(checks.values()))


if __name__ == "__main__":
    main()
