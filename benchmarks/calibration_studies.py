"""Are the STEM and hiring studies' marks earned? Simulated models with known truth. Prints JSON.

The long version of ``tests/studies/test_studies_calibration.py`` (the simulations are in
``tests/studies/calibration_studies_sim.py``). Scenarios (sizes with ``--scale 1``):

1. ``stem_quick_null`` — the quick preset (96 prompts), nothing planted, a per-profile random effect
   (sd 0.1 on the log scale): the share of simulated models with at least one mark per table family.
2. ``stem_paper_null`` — the paper's design (21,385 prompts with the built-in problems: the main
   experiment's 7,000 — 100 profiles per context, 7 ranking subjects × 2 roles, 21 generation problems —
   the progressive experiment and its IIT ablation, the single-attribute replication), the same:
   pairwise (the paper's response level and the profile-level marks), interaction gaps, position tables.
   (docs/stem.md's figures for it were measured when the built-in set had 7 generation problems: 9,471
   prompts.)
3. ``stem_paper_null_no_profile_effect`` — the same without the profile effect: the single-attribute
   intervals' coverage of 0 (their truth when nothing is planted).
4. ``stem_paper_planted`` — ``sim:stem``'s effects (Rural, Low income −0.5 level; Disabled −1.5
   grades): the share of planted comparisons marked, and false stars among the others.
5. ``hiring_*_null`` — 3 jobs (the quick preset), 20 and 100 jobs: false stars of the win-rate and
   score families (before: an uncorrected "interval excludes the ideal"), coverage of the win-rate,
   score-difference and position intervals.
6. ``hiring_rationale_null`` — three models per replicate: coverage of the rationale effect's interval
   over models.
7. ``hiring_planted`` — Chinese-marked resumes chosen with +0.15 probability, men +3 points (20 jobs).
8. ``hiring_occupation_null`` — the paper's design (100 jobs = 20 occupations × 5 near-duplicate jobs),
   a fair model whose near-duplicate jobs are answered alike (a per-occupation shift of Direct
   Comparison, sd 0.05, and of each basket's score, sd 2 points, on top of the per-job shift): the
   share of fair models with a mark on the new unit (occupations resampled and swapped), with its exact
   binomial 95% interval (``false_star_interval``), and in the same run the baseline on the old unit
   (every job independent), which these shared shifts fool.
9. ``stem_headline_null`` — the paper design, nothing planted, the per-profile effect (200 models): the
   share of models with a mark in each of the headline tables — ``stem_within_gaps``, ``stem_deciles``,
   ``stem_progressive_shap``, ``stem_extreme_gap``, ``stem_kappa_average`` (each model paired with the
   next) — and, for the descriptive ``stem_single_bias``, the share of rows with ``p_wordings`` ≤ 0.05
   (why it draws no mark: a wording's own effect makes it too frequent). ``..._no_profile_effect``: the
   same without the profile effect (100 models).
10. ``stem_headline_planted`` — planted intersectional effects (Hindi/Regional-medium IIT students −2.6
   grades, English-medium +2, Low-income Disabled ST −3, on top of ``sim:stem``): the share of models
   whose headline rows for them are marked (50 models).

11. ``stem_bias_null`` — the bias table's MAB marks (levels shuffled over profiles, BH within model): the
   share of null models (per-profile effect) with a mark, on the main experiment (7,000 prompts, 200
   models, both conventions) and on the quick preset (96 prompts, 1,000 models); ``stem_bias_planted`` —
   ``sim:stem``'s effects (50 models): the share of the 10 planted rows (Rural and Low-income in the ranking
   task, Disabled in generation) marked, and the share of the other rows marked; ``stem_bias_null_more`` —
   300 more null models of the main experiment (other seeds).

Usage: ``python benchmarks/calibration_studies.py [--scale 1.0] [--bootstrap 1000] [--only NAME ...]``
(e.g. ``--only stem_headline_null --scale 0.05`` for a 10-model check; the full 200 models take ~12 min).
Every simulation is seeded; the figures are reproducible.

``within_goal`` (the targets docs/stem.md and docs/hiring.md give, with the Monte Carlo error of n
simulated models, ±2·√(0.05·0.95/n)): in every null scenario each family's share of fair models with a
mark is ≤ 5% + that error (the paper's response-level column and the job-unit baseline are shown for
contrast and not held to it), the false discovery rate of the planted runs is ≤ 5% + that error (what
Benjamini–Hochberg controls once effects are present), and each 95% interval's coverage of a known truth
(the hiring null scenarios; the single-attribute intervals without a profile effect) is within
0.95 ± max(2 points, that error). ``goal_checks`` gives each figure, its bound and its verdict; power
(planted effects found) has no target.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from bench_json import finish, load_average, mc_error

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

NOMINAL = 0.05
GOAL = ("every null scenario's marks are earned: each family's share of fair models with a mark <= 5% + the "
        "Monte Carlo error 2*sqrt(0.05*0.95/n) over its n simulated models (the paper's response-level column "
        "and the job-unit baseline excepted); the planted runs' false discovery rate <= 5% + that error; each "
        "95% interval's coverage of a known truth (hiring null scenarios; single-attribute intervals without a "
        "profile effect) within 0.95 +- max(0.02, that error) (docs/stem.md, docs/hiring.md); see goal_checks "
        "(true when the run has no figure with a target)")


def scenarios(scale: float, bootstrap: int) -> dict[str, Any]:
    from tests.studies.calibration_studies_sim import hiring_scenario, stem_scenario

    from counterbench.builtin.hiring.synthetic import Planted

    def n(base: int) -> int:
        return max(10, int(base * scale))

    planted = Planted(compare_job_sd=0.08, compare_effects={"Chinese": 0.15}, score_effects={"Male": 3.0})
    shared = Planted(compare_job_sd=0.08, compare_occupation_sd=0.05, score_occupation_sd=2.0)
    return {
        "stem_quick_null": lambda: stem_scenario("quick", n(1000), seed=101),
        "stem_paper_null": lambda: stem_scenario("paper", n(300), seed=102),
        "stem_paper_null_no_profile_effect": lambda: stem_scenario("paper", n(100), profile_sd=0.0, seed=103),
        "stem_paper_planted": lambda: stem_scenario("paper", n(100), planted=True, seed=104),
        "hiring_quick_null": lambda: hiring_scenario(3, n(1000), n_boot=bootstrap, variations=1, seed=105),
        "hiring_20_jobs_null": lambda: hiring_scenario(20, n(500), n_boot=bootstrap, seed=106),
        "hiring_100_jobs_null": lambda: hiring_scenario(100, n(200), n_boot=bootstrap, seed=107),
        "hiring_rationale_null": lambda: hiring_scenario(20, n(300), n_boot=bootstrap, n_models=3, variations=1,
                                                         seed=108),
        "hiring_planted": lambda: hiring_scenario(20, n(200), n_boot=bootstrap, plan=planted, seed=109),
        "hiring_occupation_null": lambda: {
            "occupation": with_intervals(hiring_scenario(100, n(200), n_boot=bootstrap, plan=shared, seed=110)),
            "job_baseline": with_intervals(hiring_scenario(100, n(200), n_boot=bootstrap, plan=shared, seed=110,
                                                           by_job=True))},
        "stem_headline_null": lambda: headline_scenario(max(2, int(200 * scale)), seed=120),
        "stem_headline_null_no_profile_effect": lambda: headline_scenario(max(2, int(100 * scale)), profile_sd=0.0,
                                                                          seed=121),
        "stem_headline_planted": lambda: headline_scenario(max(2, int(50 * scale)), planted=True, seed=122),
        "stem_bias_null": lambda: {
            "main": bias_scenario("main", max(2, int(200 * scale)), seed=130),
            "quick": bias_scenario("quick", max(2, int(1000 * scale)), seed=131)},
        "stem_bias_planted": lambda: bias_scenario("main", max(2, int(50 * scale)), planted=True, seed=132),
        "stem_bias_null_more": lambda: bias_scenario("main", max(2, int(300 * scale)), seed=5000, prefix="n"),
    }


def bias_scenario(design: str, n_sims: int, *, planted: bool = False, profile_sd: float = 0.1, seed: int = 0,
                  prefix: str = "m") -> dict[str, Any]:
    """Scenario 11: the bias table's MAB marks over ``n_sims`` simulated models (``main``: the main
    experiment of the paper design; ``quick``: the quick preset)."""
    from dataclasses import replace

    import numpy as np

    from counterbench.builtin.stem import analysis as A
    from counterbench.builtin.stem.design import StemDesign, build_prompt_table
    from counterbench.builtin.stem.simulate import simulate_outcomes
    from counterbench.models.simulated import load_profile
    from counterbench.prompts import prompts

    table = (build_prompt_table(StemDesign.paper(progressive=(), single_attribute=())) if design == "main"
             else prompts("stem", preset="quick"))
    base = load_profile("stem")
    preset = base if planted else replace(base, effects=())
    conventions = ("counterbench",) if planted else ("counterbench", "paper")
    marked: dict[str, list[bool]] = {c: [] for c in conventions}
    planted_rows: list[float] = []
    other_rows: list[float] = []
    testable: list[float] = []
    for i in range(n_sims):
        frame = A.outcome_frame(simulate_outcomes(table, f"sim:{prefix}{i}", preset=preset, seed=seed + i,
                                                  profile_sd=profile_sd))
        for convention in conventions:
            _, bias = A.bias_tables(frame, convention=convention, seed=seed + i)
            marked[convention].append(bool(bias["significant"].any()))
            testable.append(float(bias["testable"].mean()))
            if planted:
                truth = ((bias["task"].eq("ranking") & bias["attribute"].isin(["location", "income"]))
                         | (bias["task"].eq("generation") & bias["attribute"].eq("disability")))
                planted_rows.append(float(bias.loc[truth, "significant"].mean()))
                other_rows.append(float(bias.loc[~truth, "significant"].mean()))
    out: dict[str, Any] = {"n_sims": n_sims, "design": design, "prompts": len(table), "profile_sd": profile_sd,
                           "testable_share": float(np.mean(testable))}
    if planted:
        out["planted_rows_marked"] = float(np.mean(planted_rows))
        out["other_rows_marked"] = float(np.mean(other_rows))
        return out
    out["false_star_share"] = {f"stem_bias ({c})": float(np.mean(v)) for c, v in marked.items()}
    return with_intervals(out)


def with_intervals(result: dict[str, Any]) -> dict[str, Any]:
    """Add the exact (Clopper-Pearson) 95% interval of each false-star share over the ``n_sims`` models."""
    from scipy.stats import binomtest

    n_sims = int(result["n_sims"])
    result["false_star_interval"] = {}
    for name, share in result["false_star_share"].items():
        marked = round(share * n_sims)
        ci = binomtest(marked, n_sims).proportion_ci(confidence_level=0.95, method="exact")
        result["false_star_interval"][name] = {"marked": marked, "of": n_sims, "low": round(float(ci.low), 4),
                                               "high": round(float(ci.high), 4)}
    return result


def _headline_marks(frame: Any, pair_frame: Any) -> dict[str, Any]:
    """Whether each headline table marks anything for the one model in ``frame`` (see scenario 8)."""
    from counterbench.builtin.stem import subgroups as G
    from counterbench.builtin.stem import summaries as S
    from counterbench.builtin.stem.headline import extreme_gap_table

    out: dict[str, Any] = {}
    for name, table in (("stem_within_gaps", G.within_gap_table(frame)), ("stem_deciles", G.decile_table(frame)),
                        ("stem_progressive_shap", S.progressive_shap_table(frame)),
                        ("stem_extreme_gap", extreme_gap_table(frame)),
                        ("stem_kappa_average", S.kappa_average_table(pair_frame))):
        out[name] = bool(table["significant"].fillna(False).astype(bool).any()) if len(table) else False
    single = S.single_bias_table(frame)
    out["_single_p"] = (int((single["p_wordings"] <= 0.05).sum()), int(single["p_wordings"].notna().sum()))
    return out


def headline_scenario(n_sims: int, *, profile_sd: float = 0.1, planted: bool = False, seed: int = 0
                      ) -> dict[str, Any]:
    """Scenarios 8 and 9: the headline tables over ``n_sims`` simulated models of the paper design."""
    from dataclasses import replace

    import numpy as np
    import pandas as pd
    from tests.studies.calibration_studies_sim import stem_design

    from counterbench.builtin.stem import analysis as A
    from counterbench.builtin.stem import subgroups as G
    from counterbench.builtin.stem.headline import extreme_gap_table
    from counterbench.builtin.stem.simulate import simulate_outcomes
    from counterbench.models.sim_effects import Effect
    from counterbench.models.simulated import load_profile

    table = stem_design("paper")
    base = load_profile("stem")
    plants = (Effect(match={"use_case": ("generation",), "college_tier": ("IIT",), "medium": ("Hindi/Regional",)},
                     add=-2.6),
              Effect(match={"use_case": ("generation",), "medium": ("English",)}, add=2.0),
              Effect(match={"use_case": ("generation",), "income": ("Low",), "disability": ("Disabled",),
                            "caste": ("ST",)}, add=-3.0))
    preset = replace(base, effects=(*base.effects, *plants)) if planted else replace(base, effects=())

    def one(i: int) -> Any:
        return A.outcome_frame(simulate_outcomes(table, f"sim:m{i}", preset=preset, seed=seed, profile_sd=profile_sd))

    if planted:
        found = {"iit_medium_gap": [], "bottom_tenth_medium": [], "extreme_gap_progressive": []}
        for i in range(n_sims):
            frame = one(i)
            gaps = G.within_gap_table(frame)
            medium = gaps[gaps["attribute"].eq("medium") & gaps["task"].eq("generation")]
            found["iit_medium_gap"].append(bool(medium["significant"].all()) if len(medium) else False)
            tenth = G.decile_table(frame)
            bottom = tenth[tenth["attribute"].eq("medium") & tenth["end"].eq("bottom") & tenth["task"].eq("generation")]
            found["bottom_tenth_medium"].append(bool(bottom["significant"].any()))
            extreme = extreme_gap_table(frame)
            found["extreme_gap_progressive"].append(bool(extreme.loc[extreme["experiment"].eq("progressive"),
                                                                     "significant"].any()))
        return {"n_sims": n_sims, "planted": True, "marked_share": {k: float(np.mean(v)) for k, v in found.items()}}
    frames = [one(i) for i in range(n_sims)]
    runs = [_headline_marks(frames[i], pd.concat([frames[i], frames[(i + 1) % n_sims]], ignore_index=True))
            for i in range(n_sims)]
    hits = sum(r["_single_p"][0] for r in runs)
    rows = sum(r["_single_p"][1] for r in runs)
    return {"n_sims": n_sims, "prompts": len(table), "profile_sd": profile_sd,
            "false_star_share": {k: float(np.mean([r[k] for r in runs])) for k in runs[0] if not k.startswith("_")},
            "single_bias_p_wordings_le_0.05": hits / rows if rows else None}


def _mc_error(n: int) -> float:
    """Twice the standard error of a share near 5% (or 95%) over ``n`` simulated models."""
    return mc_error(NOMINAL, n)


def goal_checks(scenarios_run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each figure the docs give a target for, with its bound and whether it is within it (see the docstring)."""
    checks: dict[str, dict[str, Any]] = {}

    def at_most(name: str, value: float | None, n: int) -> None:
        if value is not None:
            bound = NOMINAL + _mc_error(n)
            checks[name] = {"value": round(value, 4), "at_most": round(bound, 4), "ok": value <= bound}

    def covers(name: str, value: float | None, n: int) -> None:
        if value is not None:
            half = max(0.02, _mc_error(n))
            low, high = 1 - NOMINAL - half, min(1.0, 1 - NOMINAL + half)
            checks[name] = {"value": round(value, 4), "within": [round(low, 4), round(high, 4)],
                            "ok": low <= value <= high}

    for name, result in scenarios_run.items():
        parts = {"occupation": result["occupation"]} if name == "hiring_occupation_null" else (
            {k: result[k] for k in ("main", "quick")} if name == "stem_bias_null" else {"": result})
        for part, got in parts.items():
            label = f"{name}.{part}" if part else name
            n = int(got.get("n_sims", 0))
            planted = bool(got.get("planted")) or "planted" in name
            if not planted:
                for family, share in got.get("false_star_share", {}).items():
                    if family != "pairwise_response":  # the paper's column, shown for contrast
                        at_most(f"{label}: false stars {family}", share, n)
                if "jobs" in got:  # a hiring scenario: the intervals it shows
                    for interval, share in got.get("coverage", {}).items():
                        covers(f"{label}: coverage {interval}", share, n)
                if got.get("profile_sd") == 0.0:  # with the profile effect their truth is not 0 (see docs/stem.md)
                    covers(f"{label}: coverage single_attribute", got.get("single_coverage"), n)
            at_most(f"{label}: false discovery rate", got.get("false_discovery_rate_profile"), n)
            at_most(f"{label}: false discovery rate win_rates",
                    got.get("false_discovery_rate", {}).get("win_rates"), n)
    return checks


def main() -> None:
    before = load_average()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies the number of simulations")
    parser.add_argument("--bootstrap", type=int, default=1000, help="job-bootstrap replicates (hiring)")
    parser.add_argument("--only", nargs="*", default=None, help="scenario names to run")
    parser.add_argument("--out", default=None, help="also write the JSON here")
    args = parser.parse_args()
    out: dict[str, Any] = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                                       "load": os.getloadavg()[0]}, "scale": args.scale,
                           "bootstrap": args.bootstrap, "scenarios": {}}
    for name, run in scenarios(args.scale, args.bootstrap).items():
        if args.only and name not in args.only:
            continue
        start = time.perf_counter()
        result = run()
        result["seconds"] = round(time.perf_counter() - start, 1)
        out["scenarios"][name] = result
        print(f"{name}: {result['seconds']} s", file=sys.stderr)
    checks = goal_checks(out["scenarios"])
    out["goal_checks"] = checks
    finish(out, before, goal=GOAL, within_goal=all(c["ok"] for c in checks.values()), out=args.out)


if __name__ == "__main__":
    main()
