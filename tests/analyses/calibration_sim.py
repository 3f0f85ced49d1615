"""Calibration of counterbench's inference: simulated studies with known truth through ``analyze``.

Each *scenario* is a prompt design (e.g. full English, the quick preset) and a generative law
(:mod:`tests.analyses.simlaw`: profile baseline × identifier multiplier × lognormal noise, rounded
like ``sim:`` models). ``n_sims`` independent simulated models are analysed, ``per_call`` at a time
(one ``analyze`` call with several models: every model has its own random streams, so they are
independent replicates). For every table the scenario reports:

- **coverage** of *the* 95% interval (``ci_low``/``ci_high``: slots resampled) and of the paper's
  pair interval (``pair_ci_*``) where there is one. Truth: 0 for differences with nothing planted
  (language shift, fairness ablation); the planted value for canonical pair gaps and identifier
  deviations (the law's multipliers); for Mean Δ% and V@τ, whose truth has no closed form, the
  mean of the estimates over all simulations of the scenario;
- **false stars**: the share of simulated models with at least one mark in a table family (one
  model's rows) when nothing is planted there — with counterbench's marks (``significant``) and
  with the rule used before (an unadjusted p < 0.05 / a pair interval that excludes 0 / the
  paper's q within an axis column across the models analysed together);
- **power**: the share of planted canonical pair gaps that are marked.

Used by ``tests/analyses/test_calibration.py`` (small sizes) and ``benchmarks/calibration.py``
(≥ 500 simulations).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from counterbench.families.amount.analysis import analyze
from counterbench.prompts import prompts
from counterbench.stats.multiple_testing import benjamini_hochberg
from tests.analyses.simlaw import baselines, simulate_results

__all__ = ["Scenario", "design", "planted_pairs", "run_scenario", "slot_threshold_coverage"]

CANONICAL = {"Religion": ("Hindu", "Muslim"), "Caste": ("Brahmin", "Dalit"), "Region": ("Gujarati", "Santhali"),
             "Gender": ("Male", "Female"), "Disability": ("No disability", "Intellectual disability"),
             "Urban/Rural": ("Tier 1 city", "Village")}
DESIGNS: dict[str, dict[str, Any]] = {
    "full_english": {"language": ["en"]},
    "quick": {"preset": "quick"},
    "salary_both_languages_fairness": {"use_case": ["salary_estimation"], "variant": ["standard", "fairness"]},
}


def design(name: str) -> pd.DataFrame:
    """The prompt table of a named design (see :data:`DESIGNS`)."""
    return prompts("rupeebias", **DESIGNS[name])


def planted_pairs(gap: float, axes: list[str] | None = None) -> dict[str, float]:
    """Multipliers that plant a canonical pair gap of exactly ``gap`` % of the pair's mean:
    reference × (1 + g/2), comparison × (1 − g/2)."""
    out: dict[str, float] = {}
    for axis, (ref, comp) in CANONICAL.items():
        if axes is None or axis in axes:
            out[ref], out[comp] = 1 + gap / 200.0, 1 - gap / 200.0
    return out


@dataclass
class Scenario:
    """One calibration scenario."""

    name: str
    design: str
    n_sims: int
    effects: Mapping[str, float] = field(default_factory=dict)
    noise_sd: float = 0.03
    per_call: int = 10
    bootstrap: int = 1000
    seed: int = 0


def _true_gap(effects: Mapping[str, float], ref: str, comp: str) -> float:
    r, c = effects.get(ref, 1.0), effects.get(comp, 1.0)
    return 200.0 * (r - c) / (r + c)


def _true_deviation(effects: Mapping[str, float], table: pd.DataFrame) -> pd.Series:
    ids = table[["axis", "identifier"]].drop_duplicates()
    mult = ids["identifier"].map(dict(effects)).fillna(1.0)
    level = mult.groupby(ids["axis"]).transform("mean")
    return pd.Series(((mult - level) / level * 100.0).to_numpy(), index=pd.MultiIndex.from_frame(ids))


def _covered(frame: pd.DataFrame, truth: pd.Series | np.ndarray, lo: str, hi: str) -> tuple[int, int]:
    t = np.asarray(truth, dtype=np.float64)
    low, high = frame[lo].to_numpy(np.float64), frame[hi].to_numpy(np.float64)
    ok = np.isfinite(low) & np.isfinite(high) & np.isfinite(t)
    return int(np.count_nonzero((low[ok] <= t[ok]) & (t[ok] <= high[ok]))), int(ok.sum())


def _collect(result: Any, effects: Mapping[str, float], table: pd.DataFrame) -> dict[str, pd.DataFrame]:
    out = {name: result.tables[name].copy() for name in (
        "leaderboard", "axis_mean_delta", "use_case_mean_delta", "cpg", "cpg_overall", "identifier_deviation",
        "kendalls_w", "kendalls_w_axis", "language_moderation", "fairness_ablation", "mog", "power")}
    for name in ("cpg", "cpg_overall"):
        frame = out[name]
        if not frame.empty:
            frame["truth"] = [_true_gap(effects, r, c) for r, c in zip(frame["reference"], frame["comparison"],
                                                                       strict=True)]
    dev = out["identifier_deviation"]
    if not dev.empty:
        truth = _true_deviation(effects, table)
        dev["truth"] = [truth.get((a, i), np.nan) for a, i in zip(dev["axis"], dev["identifier"], strict=True)]
    mog = out["mog"]
    if not mog.empty:
        truth = _true_deviation(effects, table)  # MOG truth: max relative gap of the true multipliers
        mult = {a: (1 + truth.loc[a] / 100.0) for a in truth.index.get_level_values(0).unique()}
        mog["truth"] = [200.0 * (mult[a].max() - mult[a].min()) / (mult[a].max() + mult[a].min())
                        for a in mog["axis"]]
    return out


def simulate(scenario: Scenario) -> dict[str, pd.DataFrame]:
    """Every simulated model's tables of interest, stacked (model names ``sim:cal0``, ``sim:cal1``, ...)."""
    table = design(scenario.design)
    base = baselines(table)
    parts: dict[str, list[pd.DataFrame]] = {}
    done = 0
    while done < scenario.n_sims:
        batch = range(done, min(done + scenario.per_call, scenario.n_sims))
        results = pd.concat([simulate_results(table, f"sim:cal{i}", effects=scenario.effects,
                                              noise_sd=scenario.noise_sd, seed=scenario.seed * 100_003 + i, base=base)
                             for i in batch], ignore_index=True)
        result = analyze(results, bootstrap=scenario.bootstrap, seed=scenario.seed + done)
        for name, frame in _collect(result, scenario.effects, table).items():
            parts.setdefault(name, []).append(frame)
        done = batch.stop
    return {name: pd.concat(frames, ignore_index=True) for name, frames in parts.items()}


def _by_model_any(frame: pd.DataFrame, column: pd.Series | np.ndarray, n_models: int) -> float:
    flags = pd.Series(np.asarray(column, dtype=bool), index=frame.index)
    return float(flags.groupby(frame["model"]).any().sum() / n_models) if n_models else float("nan")


def _two_model_q(frame: pd.DataFrame) -> np.ndarray:
    """The paper's ``q_bh_within_axis`` had the models been audited two at a time (sim:cal0 with
    sim:cal1, ...), as in the issue's two-model report."""
    index = frame["model"].astype(str).str.removeprefix("sim:cal").astype(int) // 2
    q = np.full(len(frame), np.nan)
    for _, rows in frame.groupby([index, frame["language"], frame["axis"]]).indices.items():
        q[rows] = benjamini_hochberg(frame["p_fisher"].to_numpy(np.float64)[rows])[0]
    return q


def _coverage_entry(frame: pd.DataFrame, truth: Any, pair: bool) -> dict[str, Any]:
    hit, n = _covered(frame, truth, "ci_low", "ci_high")
    entry: dict[str, Any] = {"slots": hit / n if n else None, "n": n}
    if pair and "pair_ci_low" in frame.columns:
        hit_p, n_p = _covered(frame, truth, "pair_ci_low", "pair_ci_high")
        entry["pairs"] = hit_p / n_p if n_p else None
    return entry


def summarise(scenario: Scenario, tables: dict[str, pd.DataFrame]) -> dict[str, Any]:
    """Coverage, false stars and power of one scenario (see the module docstring)."""
    n_models = scenario.n_sims
    planted = bool(scenario.effects)
    cov: dict[str, Any] = {}
    for name, keys in (("leaderboard", ["model"]), ("axis_mean_delta", ["language", "axis"]),
                       ("use_case_mean_delta", ["language", "use_case"])):
        frame = tables[name]
        value = "overall_mean_delta" if name == "leaderboard" else "mean_delta"
        truth = frame.groupby(keys[1:] or (lambda _: 0))[value].transform("mean") if keys[1:] else \
            np.full(len(frame), frame[value].mean())
        cov[name] = _coverage_entry(frame, truth, True)
        if name != "leaderboard":
            v_truth = frame.groupby(keys[1:])["v10"].transform("mean")
            hit, n = _covered(frame, v_truth, "v10_ci_low", "v10_ci_high")
            hit_w, _ = _covered(frame, v_truth, "v10_wilson_ci_low", "v10_wilson_ci_high")
            hit_p, _ = _covered(frame, v_truth, "v10_pair_ci_low", "v10_pair_ci_high")
            cov[f"{name}.v10"] = {"slots": hit / n if n else None, "wilson": hit_w / n if n else None,
                                  "pairs": hit_p / n if n else None, "n": n}
    for name in ("cpg", "cpg_overall", "identifier_deviation"):
        frame = tables[name]
        if not frame.empty:
            testable = frame[frame["testable"].astype(bool)] if "testable" in frame.columns else frame
            cov[name] = _coverage_entry(testable, testable["truth"], False)
            if "testable" in frame.columns:
                cov[name]["share_testable"] = float(frame["testable"].astype(bool).mean())
    for name in ("language_moderation", "fairness_ablation"):
        frame = tables[name]
        if not frame.empty:
            cov[name] = _coverage_entry(frame, np.zeros(len(frame)), True)
    mog = tables["mog"]
    if not mog.empty:
        cov["mog"] = {"interval": "none (descriptive)", "n": len(mog),
                      "mean_estimate_minus_truth": float((mog["max_gap"] - mog["truth"]).mean()),
                      "share_above_truth": float((mog["max_gap"] > mog["truth"]).mean())}
    stars: dict[str, Any] = {}
    for name in ("cpg", "cpg_overall", "kendalls_w", "kendalls_w_axis", "language_moderation", "fairness_ablation"):
        frame = tables[name]
        if frame.empty or (planted and name.startswith("cpg")):
            continue
        entry = {"after": _by_model_any(frame, frame["significant"].astype(bool), n_models)}
        if name.startswith("cpg"):
            entry["before"] = _by_model_any(frame, frame["p_value"] < 0.05, n_models)
        elif name == "kendalls_w_axis":  # the paper's q: BH within an axis column across two models
            entry["before"] = _by_model_any(frame, _two_model_q(frame) < 0.05, n_models)
        elif name == "kendalls_w":
            entry["before"] = _by_model_any(frame, frame["q_bh_all"] < 0.05, n_models)
        else:
            excl = (frame["pair_ci_low"] > 0) | (frame["pair_ci_high"] < 0)
            entry["before"] = _by_model_any(frame, excl, n_models)
        if "testable" in frame.columns:  # the per-test size at the levels BH uses (diagnosis of the tail)
            tested = frame[frame["testable"].astype(bool)]
            p = pd.to_numeric(tested["shift_p_value" if "shift_p_value" in tested else "p_value"], errors="coerce")
            m = max(1, round(len(tested) / n_models))
            entry.update({"family_size": m, "p_below_0.05": float((p < 0.05).mean()),
                          "p_below_0.05_over_m": float((p < 0.05 / m).mean())})
        stars[name] = entry
    power: dict[str, Any] = {}
    if planted:
        for name in ("cpg", "cpg_overall"):
            frame = tables[name]
            hit = frame[frame["truth"].abs() > 0]
            if not hit.empty:
                power[name] = {"marked": float(hit["significant"].astype(bool).mean()), "n": len(hit),
                               "testable": float(hit["testable"].astype(bool).mean())}
                by = "use_case" if name == "cpg" else "axis"
                power[name]["by_" + by] = hit.groupby(by)["significant"].mean().round(3).to_dict()
    return {"scenario": scenario.name, "design": scenario.design, "n_sims": n_models, "noise_sd": scenario.noise_sd,
            "bootstrap": scenario.bootstrap, "planted": dict(scenario.effects), "coverage": cov,
            "family_wise_false_stars": stars, "power": power}


def run_scenario(scenario: Scenario) -> dict[str, Any]:
    """Simulate and summarise one scenario."""
    return summarise(scenario, simulate(scenario))


def slot_threshold_coverage(n_slots: list[int], n_sims: int, *, noise_sd: float = 0.03, n_boot: int = 1000,
                            step: float = 1000.0, tail_df: float | None = None, seed: int = 0
                            ) -> dict[int, dict[str, float]]:
    """Coverage of the canonical pair gap's slot interval, and its false-mark rate, by matched slots.

    Each simulation draws ``n`` slots with salary-like levels (the ``sim:fair`` salary baselines,
    cycled), a reference and a comparison answer per slot with lognormal noise and no gap, rounded to
    ``step`` rupees (1,000 like ``sim:`` models; 100,000 = whole lakhs, as LLMs often answer; a step
    ≤ 1 is a share of the slot's level: 0.1 = answers of 90%, 100% or 110% of the level) — with
    ``tail_df``, the noise is Student-t with that many degrees of freedom (occasional wild answers) —
    and runs
    the analysis's machinery: slot multiplicities (:func:`~counterbench.stats.cluster_bootstrap.cluster_weights`),
    the gap of the resampled sums, :func:`~counterbench.stats.inference.slot_design`,
    :func:`~counterbench.stats.inference.slot_interval` and
    :func:`~counterbench.stats.inference.slot_t_pvalue`. The plain percentile interval of the same
    replicates is reported for comparison. Chooses ``MIN_SLOTS``.
    """
    from counterbench.analyses.resampling import percentiles
    from counterbench.stats.cluster_bootstrap import cluster_weights
    from counterbench.stats.gaps import relative_gap
    from counterbench.stats.inference import slot_design, slot_interval, slot_t_pvalue

    levels = np.array([24, 20, 15, 22, 18, 13, 17, 14, 10, 9, 7.5, 5.5, 11, 9, 7, 11.5, 9.5, 7.0]) * 1e5
    rng = np.random.default_rng(seed)
    out: dict[int, dict[str, float]] = {}
    for n in n_slots:
        b = levels[np.arange(n) % levels.size]
        cover = cover_pct = marks = with_interval = 0
        for _ in range(n_sims):
            z = rng.standard_normal((2, n)) if tail_df is None else rng.standard_t(tail_df, (2, n))
            unit = step if step > 1 else step * b  # step ≤ 1: a share of the slot's level ("round numbers")
            r = np.round(b * np.exp(noise_sd * z[0]) / unit) * unit
            c = np.round(b * np.exp(noise_sd * z[1]) / unit) * unit
            suff = np.column_stack([r, c])
            gap = float(relative_gap(r.sum(), c.sum(), signed=True))
            reps = relative_gap(*(cluster_weights(rng, n, n_boot) @ suff).T, signed=True)[None, :]
            factor, df = slot_design(r + c)  # as the analysis does for a gap of sums
            low, high = slot_interval(gap, reps, n, factor=factor, df=df)
            with_interval += bool(np.isfinite(low[0]))  # two slots of unequal levels: none
            cover += bool(low[0] <= 0.0 <= high[0])
            plo, phi = percentiles(reps[0], 0.95)
            cover_pct += bool(plo <= 0.0 <= phi)
            marks += bool(slot_t_pvalue(gap, reps, n, factor=factor, df=df)[0] < 0.05)
        out[n] = {"slot_interval": cover / with_interval if with_interval else float("nan"),
                  "share_with_interval": with_interval / n_sims, "plain_percentile": cover_pct / n_sims,
                  "p_below_0.05": marks / n_sims}
    return out
