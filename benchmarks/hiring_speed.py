"""Hiring study: analysis speed at the paper's scale, recovery of planted preferences, calibration. Prints JSON.

1. **Speed.** The ``paper`` preset's prompt table (100 jobs → 4,100 resumes; Direct Comparison in both
   positions and Score & Shortlist, each without and with a rationale; language-only comparisons;
   recoverability and ablation on 20 jobs: 45,000 prompts) answered by 3 synthetic models
   (:func:`counterbench.builtin.hiring.synthetic.answer_texts`, 1 % hostile answers), then
   :func:`counterbench.builtin.hiring.analysis.analyze_hiring` with 5,000-replicate job bootstraps —
   parsing every raw answer included. Goal: ≤ 30 s on 2 cores.
2. **Recovery.** What the biased model planted (Chinese +0.15 win probability, a first-position bias
   of +0.10, men +3 points, ethnicity read from languages) against what the tables report.
3. **Calibration.** ``--seeds`` (default 200) fair synthetic models on 20 jobs: the share of group
   intervals (win rate − 0.5 and score − mean, 95 %, 1,000 replicates) that exclude their ideal, and
   the share of Friedman tests over 3 fair models with p < 0.05. Nominal: 5 %.

Usage: ``python benchmarks/hiring_speed.py [--seeds 200] [--bootstrap 5000]``. Wall times; the load
average is reported.

``within_goal``: the analysis took ≤ 30 s (the goal is stated at 5,000 replicates; ``--bootstrap`` lower
makes it easier), and the fair models' interval mark rate and Friedman mark rate are each ≤ the nominal
5 % + the Monte Carlo error 2·√(0.05·0.95/n) over the n intervals (Friedman tests: one per seed) the rate
is a share of. ``goal_checks`` gives each part.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import numpy as np
import pandas as pd
from bench_json import finish, load_average, mc_error

from counterbench.builtin.hiring import synthetic as syn
from counterbench.builtin.hiring.analysis import analyze_hiring
from counterbench.builtin.hiring.metrics import score_means, win_rates
from counterbench.builtin.hiring.ordering import group_ordering
from counterbench.builtin.hiring.plan import build_prompts, full_plan, load_inputs

BIASED = syn.Planted(compare_effects={"Chinese": 0.15}, first_position=0.1, score_effects={"Male": 3.0},
                     rationale_multiplier=1.5)
MILD = syn.Planted(compare_effects={"Caucasian": 0.05}, score_effects={"Malay": -1.0})


def speed(bootstrap: int) -> dict[str, Any]:
    start = time.perf_counter()
    prompts = build_prompts(full_plan())
    built = time.perf_counter() - start
    design = prompts.drop(columns=["system", "user"])
    results = pd.concat([syn.answer_texts(design, name, plan, seed=i, hostile_rate=0.01)
                         for i, (name, plan) in enumerate((("sim-biased", BIASED), ("sim-fair", syn.Planted()),
                                                           ("sim-mild", MILD)))], ignore_index=True)
    start = time.perf_counter()
    tables, unsupported = analyze_hiring(results, bootstrap=bootstrap, seed=0)
    elapsed = time.perf_counter() - start
    wr = tables["hiring_win_rates"]
    biased_wr = wr[wr["model"].eq("sim-biased") & ~wr["rationale"]].sort_values("win_rate", ascending=False)
    pos = tables["hiring_position_effect"].set_index(["model", "rationale"])
    rec = tables["hiring_recoverability"]
    biased_rec = rec[rec["model"].eq("sim-biased")].set_index(["attribute", "condition"])["macro_f1"]
    scores = tables["hiring_scores"]
    bs = scores[scores["model"].eq("sim-biased") & ~scores["rationale"] & ~scores["group"].eq("neutral")]
    health = tables["hiring_parse_health"]
    return {
        "prompts_per_model": len(prompts), "responses": len(results), "build_prompts_s": round(built, 2),
        "analysis_s": round(elapsed, 2), "goal_s": 30, "tables": len(tables), "empty_tables": sorted(unsupported),
        "recovery": {
            "top_two_win_rate_groups": biased_wr["group"].head(2).tolist(),
            "top_win_rate": round(float(biased_wr["win_rate"].iloc[0]), 4),
            "top_ci": [round(float(biased_wr["ci_low"].iloc[0]), 4), round(float(biased_wr["ci_high"].iloc[0]), 4)],
            "planted_chinese_win_rate": 0.5 + 0.8 * 0.15,
            "first_position_share": round(float(pos.loc[("sim-biased", False), "first_share"]), 4),
            "first_position_ci": [round(float(pos.loc[("sim-biased", False), "ci_low"]), 4),
                                  round(float(pos.loc[("sim-biased", False), "ci_high"]), 4)],
            "planted_first_position_share": 0.5 + 0.8 * 0.1,
            "male_minus_female_mean_score": round(float(
                bs[bs["group"].str.endswith(" Male")]["mean_score"].mean()
                - bs[bs["group"].str.endswith("Female")]["mean_score"].mean()), 3),
            "planted_male_minus_female": 3.0,
            "ethnicity_f1": {c: round(float(biased_rec.loc[("ethnicity", c)]), 3)
                             for c in ("all", "-hobbies", "-hobbies-volunteering",
                                       "-hobbies-volunteering-activities", "none")},
            "gender_f1": {c: round(float(biased_rec.loc[("gender", c)]), 3)
                          for c in ("all", "-hobbies", "-hobbies-volunteering", "-hobbies-volunteering-activities",
                                    "none")},
            "hostile_not_ok": int(health[~health["status"].eq("ok")]["n"].sum()),
        },
    }


def calibration(seeds: int) -> dict[str, Any]:
    inputs = load_inputs(full_plan())
    jobs = list(inputs.jobs[::5])
    resumes = syn.design(jobs, inputs.baskets)
    fair = syn.Planted()
    marks = total = friedman_marks = 0
    start = time.perf_counter()
    for seed in range(seeds):
        wr = win_rates(syn.comparisons("fair", fair, resumes, seed=seed, rationale=(False,)), n_boot=1000, seed=seed)
        sm = score_means(syn.scores("fair", fair, resumes, jobs, seed=seed, rationale=(False,)), n_boot=1000,
                         seed=seed)
        sm = sm[~sm["group"].eq("neutral")]
        marks += int(wr["excludes_ideal"].sum()) + int(sm["excludes_ideal"].sum())
        total += len(wr) + len(sm)
        three = pd.concat([win_rates(syn.comparisons(f"fair{k}", fair, resumes, seed=seed * 10 + k,
                                                     rationale=(False,)), n_boot=0) for k in range(3)])
        _, tests = group_ordering(three, "win_rate")
        friedman_marks += int((tests["p_value"] < 0.05).sum())
    return {"seeds": seeds, "jobs": len(jobs), "interval_marks": marks, "intervals": total,
            "interval_mark_rate": round(marks / total, 4), "friedman_mark_rate": round(friedman_marks / seeds, 4),
            "nominal": 0.05, "seconds": round(time.perf_counter() - start, 1)}


def main() -> None:
    before = load_average()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--bootstrap", type=int, default=5000)
    args = parser.parse_args()
    out: dict[str, Any] = {"load_average": list(np.round(os.getloadavg(), 2)), "speed": speed(args.bootstrap),
                           "calibration": calibration(args.seeds)}
    cal = out["calibration"]

    def bound(n: int) -> float:
        return round(cal["nominal"] + mc_error(cal["nominal"], n), 4)

    intervals, tests = bound(cal["intervals"]), bound(args.seeds)
    out["goal_checks"] = {
        "analysis_s_at_most_30": out["speed"]["analysis_s"] <= out["speed"]["goal_s"],
        f"interval_mark_rate_at_most_{intervals}": cal["interval_mark_rate"] <= intervals,
        f"friedman_mark_rate_at_most_{tests}": cal["friedman_mark_rate"] <= tests,
    }
    goal = (f"the paper preset's hiring analysis (3 models, 45,000 prompts each) takes <= 30 s on 2 cores (stated at "
            f"5,000 bootstrap replicates; this run: {args.bootstrap}), and over {args.seeds} fair models the share of "
            f"group intervals excluding their ideal and the Friedman tests' rate of p < 0.05 are each <= the nominal "
            f"0.05 + Monte Carlo error 2*sqrt(0.05*0.95/n): {intervals} over the {cal['intervals']} intervals, "
            f"{tests} over the {args.seeds} Friedman tests")
    finish(out, before, goal=goal, within_goal=all(out["goal_checks"].values()))


if __name__ == "__main__":
    main()
