"""Calibration of the STEM and hiring studies' marks and intervals: simulated models with known truth.

Each replicate is one simulated model analysed with the study's own analysis functions; a *family*
is one model's rows of one table (the unit the marks are corrected over). Per scenario:

- **false stars**: the share of replicates with at least one mark in a family when nothing is
  planted (target ≤ 5%) — with the study's marks, and with the rule the tables used before (the
  paper's response-level Benjamini–Hochberg; an uncorrected "interval excludes the ideal");
- **coverage** of the 95% intervals the report shows, where the truth is known (target 93–97%);
- **power**: with the planted effects of ``sim:stem`` / a planted hiring preference, the share of
  planted comparisons that are marked.

STEM answers come from :func:`counterbench.builtin.stem.simulate.simulate_outcomes` with the ``sim:stem``
preset (its effects removed for the null) and a per-profile random effect (``profile_sd``: a model
answers one student's wording consistently — the pseudo-replication a response-level test ignores).
Hiring answers come from :mod:`counterbench.builtin.hiring.synthetic` (``Planted``) with a per-job
effect in Direct Comparison (``compare_job_sd``: a job's neutral resume is relatively strong or weak).

Used by ``tests/studies/test_studies_calibration.py`` (small sizes) and
``benchmarks/calibration_studies.py`` (the long version).
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from typing import Any

import numpy as np
import pandas as pd

from counterbench.builtin.hiring import controls, metrics, ordering
from counterbench.builtin.hiring import synthetic as syn
from counterbench.builtin.hiring.data import load_baskets, load_jobs
from counterbench.builtin.hiring.plan import select_jobs
from counterbench.builtin.stem import analysis as A
from counterbench.builtin.stem import analysis_designs as D
from counterbench.builtin.stem.design import StemDesign, build_prompt_table
from counterbench.builtin.stem.simulate import simulate_outcomes
from counterbench.builtin.stem.study import StemStudy
from counterbench.models.simulated import load_profile
from counterbench.stats.multiple_testing import benjamini_hochberg

__all__ = ["hiring_scenario", "stem_design", "stem_scenario"]


def _marked(frame: pd.DataFrame, after: str, before: str | None = None) -> tuple[bool, bool]:
    """(any mark now, any mark by the old rule) in one family's rows."""
    if frame.empty:
        return False, False
    now = bool(frame[after].fillna(False).astype(bool).any()) if after in frame.columns else False
    old = bool(frame[before].fillna(False).astype(bool).any()) if before and before in frame.columns else now
    return now, old


@cache
def stem_design(name: str) -> pd.DataFrame:
    """The STEM prompt table of a named design: ``quick`` (the preset) or ``paper`` (every experiment)."""
    if name == "paper":
        return build_prompt_table(StemDesign.paper())
    study = StemStudy()
    filters = study.presets[name]["filters"]
    table = study.table
    keep = table["profile_id"].isin(filters.get("profile", table["profile_id"]))
    if "question_variant" in filters:
        keep &= table["question_variant"].isin(filters["question_variant"])
    return table[keep].reset_index(drop=True)


def _stem_batch(table: pd.DataFrame, seed: int, planted: bool, profile_sd: float, models: int) -> list[dict[str, Any]]:
    """``models`` independent simulated models analysed in one call (every model has its own random
    streams and its own families, so they are independent replicates)."""
    preset = load_profile("stem")
    if not planted:
        preset = replace(preset, effects=())
    names = [f"sim:cal{i}" for i in range(models)]
    results = pd.concat([simulate_outcomes(table, name, preset=preset, seed=seed, profile_sd=profile_sd)
                         for name in names], ignore_index=True)
    frame = A.outcome_frame(results)
    pair = A.pairwise_tables(frame)
    _cells, gaps = D.interaction_tables(frame, seed=seed)
    shares, inter = D.position_tables(frame)
    single = D.single_attribute_table(frame)
    return [_stem_marks(*(t[t["model"].eq(name)] if not t.empty else t for t in (pair, gaps, shares, inter, single)),
                        planted=planted) for name in names]


def _stem_marks(pair: pd.DataFrame, gaps: pd.DataFrame, shares: pd.DataFrame, inter: pd.DataFrame,
                single: pd.DataFrame, *, planted: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if not pair.empty:
        rank = pair["task"].eq("ranking")
        planted_rows = rank & ((pair["attribute"].eq("location") & pair["level_b"].eq("Rural"))
                               | (pair["attribute"].eq("income") & pair["level_b"].eq("Low")))
        planted_rows |= pair["task"].eq("generation") & pair["attribute"].eq("disability")
        null_rows = pair[~planted_rows] if planted else pair
        # the paper's rule as a one-model run applies it: BH over the model's whole table
        paper = benjamini_hochberg(pair["p_response"].to_numpy(np.float64))[1]
        out["pairwise_response"] = (bool(paper[~planted_rows.to_numpy()].any()) if planted else bool(paper.any()),) * 2
        out["pairwise_profile"] = _marked(null_rows, "significant_profile")
        out["_planted_profile"] = (int(pair.loc[planted_rows, "significant_profile"].fillna(False).astype(bool).sum()),
                                   int(planted_rows.sum()))
        out["_planted_response"] = (int(pair.loc[planted_rows, "significant_response"].astype(bool).sum()),
                                    int(planted_rows.sum()))
        marks = pair["significant_profile"].fillna(False).astype(bool)
        out["_fdp"] = (int((marks & ~planted_rows).sum()), int(marks.sum()))
    if not gaps.empty and not planted:  # every interaction table involves a planted attribute
        old = benjamini_hochberg(gaps["p"].to_numpy(np.float64))[1]  # the paper's Welch, BH over the model's table
        out["interaction_gaps"] = (bool(gaps["significant"].astype(bool).any()), bool(old.any()))
    if not shares.empty:
        out["positions"] = _marked(shares, "significant")
    if not inter.empty:
        out["position_interactions"] = _marked(inter, "significant")
    if not single.empty and not planted:
        levels = single[~single["attribute"].eq("(baseline)")]
        ok = levels["ci_low"].notna()
        covered = (levels["ci_low"] <= 0) & (levels["ci_high"] >= 0)
        out["_single_coverage"] = (int(covered[ok].sum()), int(ok.sum()))
    return out


def stem_scenario(design: str, n_sims: int, *, planted: bool = False, profile_sd: float = 0.1,
                  seed: int = 0, per_call: int = 20) -> dict[str, Any]:
    """False-star shares per family (now and before), coverage and power over ``n_sims`` simulated models."""
    table = stem_design(design)
    runs: list[dict[str, Any]] = []
    call = 0
    while len(runs) < n_sims:
        runs += _stem_batch(table, seed * 100_003 + call, planted, profile_sd, min(per_call, n_sims - len(runs)))
        call += 1
    families = sorted({k for r in runs for k in r if not k.startswith("_")})
    out: dict[str, Any] = {"design": design, "prompts": len(table), "n_sims": n_sims, "planted": planted,
                           "profile_sd": profile_sd, "false_star_share": {}, "false_star_share_before": {}}
    for fam in families:
        got = [r[fam] for r in runs if fam in r]
        out["false_star_share"][fam] = float(np.mean([g[0] for g in got]))
        out["false_star_share_before"][fam] = float(np.mean([g[1] for g in got]))
    for key in ("_single_coverage", "_planted_profile", "_planted_response"):
        got = [r[key] for r in runs if key in r]
        hits, total = sum(g[0] for g in got), sum(g[1] for g in got)
        out[key.lstrip("_")] = hits / total if total else None
    if planted:  # BH's guarantee with effects present: the false discovery rate E[V / max(R, 1)] ≤ α
        out["false_discovery_rate_profile"] = float(np.mean([r["_fdp"][0] / max(r["_fdp"][1], 1) for r in runs]))
    return out


# --- hiring ---------------------------------------------------------------------------------------

def _hiring_design(n_jobs: int) -> tuple[pd.DataFrame, list[Any]]:
    # round-robin over occupations (as `jobs: N` in presets.yaml), then spread over the gender-dominance
    # categories as the presets do (quick: one per category): 3 jobs are 3 occupations, 20 are 16, 100 are 20
    jobs = select_jobs(load_jobs(), len(load_jobs()))
    by_kind: dict[str, list[Any]] = {}
    for j in jobs:
        by_kind.setdefault(j.gender_dominance, []).append(j)
    chosen: list[Any] = []
    kinds = sorted(by_kind)
    i = 0
    while len(chosen) < n_jobs:
        kind = kinds[i % len(kinds)]
        pool = by_kind[kind]
        index = i // len(kinds)
        if index < len(pool):
            chosen.append(pool[index])
        i += 1
    baskets = load_baskets()
    return syn.design(chosen, baskets), chosen


def _covered(frame: pd.DataFrame, lo: str, hi: str, truth: float) -> tuple[int, int]:
    ok = frame[lo].notna() & frame[hi].notna()
    inside = (frame[lo] <= truth + 1e-12) & (frame[hi] >= truth - 1e-12)
    return int(inside[ok].sum()), int(ok.sum())


def _hiring_one(resumes: pd.DataFrame, jobs: list[Any], plan: syn.Planted, seed: int, n_boot: int,
                n_models: int, variations: int, by_job: bool = False) -> dict[str, Any]:
    resumes = resumes[resumes["variation"] <= variations]
    out: dict[str, Any] = {"wr": [], "score": [], "_wr_cov": [], "_score_cov": [], "_pos_cov": [],
                           "_planted_wr": [], "_planted_score": [], "_fdp": []}
    wrs, summaries = [], []
    for m in range(n_models):
        model = f"sim:m{m}"
        comp = syn.comparisons(model, plan, resumes, seed=seed * 101 + m)
        sc = syn.scores(model, plan, resumes, jobs, seed=seed * 101 + m)
        if by_job:  # the old unit: every job independent (the analyses fall back to jobs without occupations)
            comp, sc = comp.drop(columns="occupation"), sc.drop(columns="occupation")
        wr = metrics.win_rates(comp, n_boot=n_boot, seed=seed)
        means = metrics.score_means(sc, n_boot=n_boot, seed=seed)
        marked = means[~means["group"].eq("neutral")]
        now_wr = _marked(wr, "significant", "excludes_ideal") if "significant" in wr.columns else \
            _marked(wr, "excludes_ideal")
        now_sc = _marked(marked, "significant", "excludes_ideal") if "significant" in marked.columns else \
            _marked(marked, "excludes_ideal")
        planted_wr = wr["group"].isin([g for g in wr["group"] if any(k in g for k in plan.compare_effects)])
        planted_sc = marked["group"].isin([g for g in marked["group"] if any(k in g for k in plan.score_effects)])
        mark_wr = "significant" if "significant" in wr.columns else "excludes_ideal"
        out["_planted_wr"].append((int(wr.loc[planted_wr, mark_wr].astype(bool).sum()), int(planted_wr.sum())))
        out["_planted_score"].append((int(marked.loc[planted_sc, mark_wr].astype(bool).sum()), int(planted_sc.sum())))
        wr_marks = wr[mark_wr].astype(bool)
        out["_fdp"].append((int((wr_marks & ~planted_wr).sum()), int(wr_marks.sum())))
        null_wr = wr[~planted_wr]
        out["wr"].append(now_wr if not plan.compare_effects else
                         _marked(null_wr, mark_wr, "excludes_ideal"))
        if not plan.score_effects:  # false stars and coverage of 0: with nothing planted
            out["score"].append(now_sc)
        out["_wr_cov"].append(_covered(null_wr, "ci_low", "ci_high", 0.5))
        if not plan.score_effects:
            out["_score_cov"].append(_covered(marked, "diff_low", "diff_high", 0.0))
        if plan.first_position == 0:
            out["_pos_cov"].append(_covered(controls.position_effect(comp, n_boot=n_boot, seed=seed),
                                            "ci_low", "ci_high", 0.5))
        wrs.append(wr)
        summaries.append(metrics.bias_summary(wr, metrics.top_score_rates(sc)))
    if n_models >= 2:
        summary = pd.concat(summaries, ignore_index=True)
        _deltas, tests = ordering.rationale_effect(summary, n_boot=n_boot, seed=seed)
        out["_rationale_cov"] = [_covered(tests, "delta_low", "delta_high", 0.0)] if plan.rationale_multiplier == 1 \
            else []
    return out


def hiring_scenario(n_jobs: int, n_sims: int, *, plan: syn.Planted | None = None, n_boot: int = 1000,
                    n_models: int = 1, variations: int = 5, seed: int = 0, by_job: bool = False) -> dict[str, Any]:
    """False-star shares (win rates, scores; now and before), coverage of the shown intervals, power.

    The analyses resample and swap occupations (the jobs of one occupation are near-duplicates);
    ``by_job`` drops the occupation column first, so every job counts as independent (the old unit)."""
    plan = plan or syn.Planted(compare_job_sd=0.08)
    resumes, jobs = _hiring_design(n_jobs)
    runs = [_hiring_one(resumes, jobs, plan, seed * 100_003 + i, n_boot, n_models, variations, by_job)
            for i in range(n_sims)]
    out: dict[str, Any] = {"jobs": n_jobs, "occupations": len({j.occupation for j in jobs}),
                           "unit": "job" if by_job else "occupation", "variations": variations, "n_sims": n_sims,
                           "n_models": n_models,
                           "bootstrap": n_boot, "false_star_share": {}, "false_star_share_before": {},
                           "coverage": {}, "power": {}}
    for fam in ("wr", "score"):
        got = [g for r in runs for g in r[fam]]
        name = {"wr": "win_rates", "score": "scores"}[fam]
        if not got:
            continue
        out["false_star_share"][name] = float(np.mean([g[0] for g in got]))
        out["false_star_share_before"][name] = float(np.mean([g[1] for g in got]))
    for key, name in (("_wr_cov", "win_rates"), ("_score_cov", "scores"), ("_pos_cov", "position_effect"),
                      ("_rationale_cov", "rationale_delta"), ("_planted_wr", "win_rates"),
                      ("_planted_score", "scores")):
        got = [g for r in runs for g in r.get(key, [])]
        hits, total = sum(g[0] for g in got), sum(g[1] for g in got)
        target = out["power"] if key.startswith("_planted") else out["coverage"]
        if total:
            target[name] = hits / total
    if plan.compare_effects:
        fdp = [v / max(r, 1) for run in runs for v, r in run["_fdp"]]
        out["false_discovery_rate"] = {"win_rates": float(np.mean(fdp))}
    return out
