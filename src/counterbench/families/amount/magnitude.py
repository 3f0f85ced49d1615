"""Gap magnitude tables: leaderboard, axis / use-case Mean Δ%, pairs per axis, language shift,
fairness ablation, merit sensitivity (paper §4.2, §5.1, §6, App. A.1, D, E; spec §3).

Pairs come from :func:`counterbench.stats.gaps.pair_gaps` over slots (model × language × use case
× axis × profile × question variant); intervals from :mod:`counterbench.analyses.resampling`
(stratified by model × language × use case × axis).

Decisions:

- **Overall** Mean Δ% pools the pairs of all the study's languages (Table 2); ``axis_mean`` is the
  unweighted mean of the per-axis Mean Δ% over the pooled languages; the share column counts the
  pairs of the study's two largest axes (:class:`counterbench.families.amount.tables.TableLayout`).
- **Intervals.** ``ci_low``/``ci_high`` are *the* 95% CI: slots resampled (paired where two arms
  share slots), expanded for few slots (:mod:`counterbench.stats.inference`). ``pair_ci_*`` is the
  paper's method (pairs resampled), kept as a labelled column: pairs of one slot share a profile
  and a question, so it is too narrow (docs/analysis.md gives the simulation).
- **Language shift** (Fig. 5b): ΔMean Δ% = second − first language per model × axis, pooled over
  use cases (the study's first language against each of its others). ``ci``: paired slot
  bootstrap, a slot matched with the same use case × axis × profile × question variant in the
  other language; ``pair_ci``: the two languages' pair replicates
  subtracted (independent arms). ``significant``: BH q ≤ 0.05 over the model's rows (family: one
  model's axes), tested only with ≥ ``MIN_SLOTS`` matched slots.
- **Fairness ablation** (App. E): the standard arm is restricted to the slots the fairness run
  covers (same use cases, profiles, question variants), so the two means compare like with like;
  relative change = (fair − standard) / standard × 100; intervals and marks as for the language
  shift (family: one model's languages); the unit resampled is the use case × profile × question
  variant with all its axes (the axes of one profile and question are not independent), matched
  between the two prompts.
- **Small-sample correction** of both intervals: the variance factor and Bell–McCaffrey degrees of
  freedom of :func:`counterbench.stats.inference.slot_design`, a slot weighing its share of the pairs.
  Their p: the swap test of the two arms slot by slot (:mod:`counterbench.stats.swap_test`), exact
  under "the language (the prompt) changes nothing"; a mark also needs the interval to exclude 0.
- **Merit sensitivity** (App. D): Δ% between every pair of profiles within (identifier, question
  variant) (:func:`counterbench.stats.robustness.profile_pair_gaps`), stratified by model ×
  language × use case; the cluster interval resamples (axis, identifier, question variant) slots.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from counterbench.analyses.pooled import mark_rows
from counterbench.analyses.profiles import AnalysisProfile
from counterbench.analyses.resampling import (
    CellReplicates,
    StrataBootstrap,
    bootstrap_strata,
    cell_replicates,
    summarise_cells,
)
from counterbench.analyses.resampling import percentiles as percentile_interval
from counterbench.analyses.slots import GROUP_COLUMNS, SlotResampler
from counterbench.families.amount.tables import heavy_axes_column
from counterbench.stats.arrays import FloatArray, IntArray
from counterbench.stats.cluster_bootstrap import cluster_weights
from counterbench.stats.gaps import PairGaps, pair_gaps
from counterbench.stats.inference import both_tests_pvalue, slot_design, slot_interval, slot_t_pvalue
from counterbench.stats.robustness import profile_pair_gaps
from counterbench.stats.seeding import stable_seed
from counterbench.stats.swap_test import SwapTest

__all__ = [
    "SLOT_COLUMNS",
    "STRATUM_COLUMNS",
    "GapFamily",
    "axis_mean_delta",
    "fairness_ablation",
    "gap_family",
    "language_shift",
    "leaderboard",
    "merit_sensitivity",
    "pairs_per_axis",
    "use_case_axis_mean_delta",
    "use_case_mean_delta",
]

SLOT_COLUMNS: tuple[str, ...] = ("model", "language", "use_case", "axis", "profile_id", "question_variant")
STRATUM_COLUMNS: tuple[str, ...] = ("model", "language", "use_case", "axis")


@dataclass(frozen=True)
class GapFamily:
    """Matched pairs of one set of values and their stratified bootstrap."""

    pairs: PairGaps
    boot: StrataBootstrap
    confidence: float
    #: every gap is an absolute Δ% (≥ 0; the default rules), so Mean Δ% intervals are cut at 0
    nonnegative: bool = False


def _bootstrap_pairs(pairs: PairGaps, strata_cols: Sequence[str], *, n_boot: int, seed: int, tau: float,
                     label: str, confidence: float, resampler: SlotResampler | None = None,
                     nonnegative: bool = False) -> GapFamily:
    keys = pairs.slot_keys
    cols = list(strata_cols)
    slot_stratum = keys.groupby(cols, observed=True, sort=False, dropna=False).ngroup().to_numpy()
    strata_keys = keys[cols].drop_duplicates().reset_index(drop=True)
    weights_for = None
    group_codes = None
    if resampler is not None:
        group_codes = strata_keys.groupby(list(GROUP_COLUMNS), observed=True, sort=False).ngroup().to_numpy()
        groups = [tuple(str(v) for v in row) for row in strata_keys[GROUP_COLUMNS].itertuples(index=False)]
        positions = resampler.positions(keys)

        def weights_for(stratum: int, slot_codes: IntArray) -> FloatArray:
            return resampler.weights(groups[stratum], positions[slot_codes])

    boot = bootstrap_strata(pairs.gap, slot_stratum[pairs.slot], strata_keys, pairs.slot, n_boot=n_boot, seed=seed,
                            tau=tau, label=label, cluster_weights_for=weights_for, groups=group_codes)
    return GapFamily(pairs, boot, confidence, nonnegative)


def gap_family(values: pd.DataFrame, profile: AnalysisProfile, *, n_boot: int, seed: int, tau: float,
               label: str = "mean_delta", confidence: float = 0.95,
               resampler: SlotResampler | None = None) -> GapFamily:
    """Identifier pairs of ``values`` (one prompt variant) and their bootstrap, stratified; the slot
    (cluster) resamples come from ``resampler`` when given."""
    pairs = pair_gaps(values, list(SLOT_COLUMNS), nonpositive=profile.nonpositive)
    return _bootstrap_pairs(pairs, STRATUM_COLUMNS, n_boot=n_boot, seed=seed, tau=tau, label=label,
                            confidence=confidence, resampler=resampler, nonnegative=profile.nonpositive == "nan")


def _cells(fam: GapFamily, by: Sequence[str]) -> pd.DataFrame:
    out = summarise_cells(cell_replicates(fam.boot, by), fam.confidence, nonnegative=fam.nonnegative)
    out["tau"] = fam.boot.tau
    return out


def axis_mean_delta(fam: GapFamily) -> pd.DataFrame:
    """Mean Δ% and V@τ per model × language × axis, with each axis's share of the pairs (Tables 3–4)."""
    out = _cells(fam, ["model", "language", "axis"])
    totals = out.groupby(["model", "language"], sort=False)["n_pairs"].transform("sum")
    out["share_of_pairs"] = out["n_pairs"] / totals.where(totals > 0)
    return out


def use_case_mean_delta(fam: GapFamily) -> pd.DataFrame:
    """Mean Δ% per model × language × use case (Fig. 6)."""
    return _cells(fam, ["model", "language", "use_case"])


def use_case_axis_mean_delta(fam: GapFamily) -> pd.DataFrame:
    """Mean Δ% per model × language × use case × axis (the strata; Fig. 2 radar)."""
    return _cells(fam, list(STRATUM_COLUMNS))


def pairs_per_axis(fam: GapFamily) -> pd.DataFrame:
    """Defined pairs per model × axis (both languages) and their share of the model's pairs."""
    out = _cells(fam, ["model", "axis"])[["model", "axis", "n_pairs"]]
    totals = out.groupby("model", sort=False)["n_pairs"].transform("sum")
    out["share"] = out["n_pairs"] / totals.where(totals > 0)
    return out


def leaderboard(fam: GapFamily, simulated: dict[str, bool], heavy_axes: Sequence[str] = ()) -> pd.DataFrame:
    """Table 2: one row per model, sorted by overall Mean Δ% (ascending), with ``rank``; with
    ``heavy_axes``, the share of the model's pairs from those axes (e.g. ``religion_region_share``)."""
    overall = _cells(fam, ["model"])
    board = overall[["model", "mean_delta", "ci_low", "ci_high", "pair_ci_low", "pair_ci_high", "v10",
                     "n_pairs", "n_slots", "tau"]].rename(columns={"mean_delta": "overall_mean_delta",
                                                                   "v10": "overall_v10"})
    by_lang = _cells(fam, ["model", "language"])
    for lang in by_lang["language"].drop_duplicates():
        part = by_lang[by_lang["language"] == lang].set_index("model")
        renamed = {"mean_delta": f"{lang}_mean_delta", "ci_low": f"{lang}_ci_low", "ci_high": f"{lang}_ci_high",
                   "v10": f"{lang}_v10", "v10_ci_low": f"{lang}_v10_ci_low", "v10_ci_high": f"{lang}_v10_ci_high"}
        part = part[list(renamed)].rename(columns=renamed)
        board = board.join(part, on="model")
    axes = _cells(fam, ["model", "axis"])
    board["axis_mean"] = board["model"].map(axes.groupby("model", sort=False)["mean_delta"].mean())
    share_column = heavy_axes_column(heavy_axes)
    if share_column:
        heavy = axes[axes["axis"].isin(list(heavy_axes))].groupby("model", sort=False)["n_pairs"].sum()
        board[share_column] = board["model"].map(heavy).fillna(0) / board["n_pairs"].where(board["n_pairs"] > 0)
    board["simulated"] = board["model"].map(lambda m: bool(simulated.get(str(m), str(m).startswith("sim:"))))
    board = board.sort_values("overall_mean_delta", kind="stable", na_position="last").reset_index(drop=True)
    board["rank"] = np.arange(1, len(board) + 1)
    return board


def _pair_interval(a: CellReplicates, ia: int, b: CellReplicates, ib: int, confidence: float) -> tuple[float, float]:
    """Pair-bootstrap interval of a[ia] − b[ib] (independent resamples of the two arms)."""
    if a.pair.shape[1] == 0:
        return np.nan, np.nan
    lo, hi = percentile_interval(a.pair[ia] - b.pair[ib], confidence)
    return float(lo), float(hi)


def _paired_slot_test(x: FloatArray, x_slot: IntArray, y: FloatArray, y_slot: IntArray, *, n_boot: int,
                      seed: int, confidence: float, swaps: SwapTest) -> dict[str, float]:
    """Paired slot bootstrap of mean(x) − mean(y): ``ci_low``, ``ci_high`` (expanded percentile),
    ``p_value`` (the swap test of the two arms slot by slot, :mod:`counterbench.stats.swap_test`) and
    ``n_slots``; ``*_slot`` are matched slot codes (a slot code shared by both arms is resampled
    jointly). Same scheme as :func:`counterbench.stats.cluster_bootstrap.cluster_bootstrap_mean_difference`."""
    ok_x, ok_y = ~np.isnan(x), ~np.isnan(y)
    k = int(max(x_slot.max(initial=-1), y_slot.max(initial=-1))) + 1
    suff = np.column_stack([
        np.bincount(x_slot[ok_x], weights=x[ok_x], minlength=k), np.bincount(x_slot[ok_x], minlength=k),
        np.bincount(y_slot[ok_y], weights=y[ok_y], minlength=k), np.bincount(y_slot[ok_y], minlength=k),
    ]).astype(np.float64)
    suff = suff[(suff[:, 1] > 0) & (suff[:, 3] > 0)]  # matched slots: both arms answered

    def diff(t: FloatArray) -> FloatArray:
        return np.asarray(t[:, 0] / t[:, 1] - t[:, 2] / t[:, 3], dtype=np.float64)

    n = suff.shape[0]
    out = {"ci_low": np.nan, "ci_high": np.nan, "p_value": np.nan, "n_slots": float(n)}
    if n == 0:
        return out
    p_swap = swaps.pvalue(suff, suff[:, [2, 3, 0, 1]], diff)
    if n_boot <= 0:
        return out
    with np.errstate(divide="ignore", invalid="ignore"):
        estimate = diff(suff.sum(axis=0)[None, :])
        reps = diff(cluster_weights(np.random.default_rng(seed), n, int(n_boot)) @ suff)[None, :]
    # a slot weighs its share of each arm's pairs (equal when every slot has the same identifiers)
    factor, df = slot_design(suff[:, 1] / suff[:, 1].sum() + suff[:, 3] / suff[:, 3].sum())
    low, high = slot_interval(estimate, reps, n, 1, confidence, factor=factor, df=df)
    p_t = float(slot_t_pvalue(estimate, reps, n, factor=factor, df=df)[0])
    out.update(ci_low=float(low[0]), ci_high=float(high[0]), p_value=both_tests_pvalue(p_swap, p_t))
    return out


def _slot_codes(frames: Sequence[pd.DataFrame], cols: list[str]) -> list[IntArray]:
    """Shared integer codes of the rows of several slot-key frames on ``cols``."""
    keys = pd.concat([f[cols].astype(str) for f in frames], ignore_index=True)
    codes = keys.groupby(cols, sort=False, dropna=False).ngroup().to_numpy().astype(np.int64)
    bounds = np.cumsum([0, *(len(f) for f in frames)])
    return [codes[bounds[i] : bounds[i + 1]] for i in range(len(frames))]


def language_shift(fam: GapFamily, *, seed: int, first: str, second: str) -> pd.DataFrame:
    """ΔMean Δ% = ``second`` − ``first`` per model × axis, pooled over use cases (Fig. 5b).

    ``ci``: paired slot bootstrap, a slot of one language matched with the same use case × axis ×
    profile × question variant of the other; ``pair_ci``: the two languages' pair replicates
    subtracted (independent arms, the paper's method). Marks: see the module docstring.
    """
    cells = cell_replicates(fam.boot, ["model", "language", "axis"])
    keys = cells.keys.astype(str)
    index = {tuple(row): i for i, row in enumerate(keys.itertuples(index=False, name=None))}
    pairs = fam.pairs
    slot_keys = pairs.slot_keys.astype({c: str for c in ("model", "language", "axis")})
    (match,) = _slot_codes([pairs.slot_keys], ["use_case", "axis", "profile_id", "question_variant"])
    (group,) = _slot_codes([slot_keys], ["model", "axis"])
    group_of_pair = group[pairs.slot]
    order = np.argsort(group_of_pair, kind="stable")
    bounds = np.searchsorted(group_of_pair[order], np.arange(group.max(initial=-1) + 2))
    lang = slot_keys["language"].to_numpy()
    group_of = {(m, a): int(g) for m, a, g in zip(slot_keys["model"], slot_keys["axis"], group, strict=True)}
    records = []
    swaps = SwapTest(stable_seed("swap_test", "language_shift", base_seed=seed))
    for model, axis in keys[["model", "axis"]].drop_duplicates().itertuples(index=False, name=None):
        i1, i2 = index.get((model, first, axis)), index.get((model, second, axis))
        if i1 is None or i2 is None:
            continue
        lo, hi = _pair_interval(cells, i2, cells, i1, fam.confidence)
        g = group_of[(model, axis)]
        members = order[bounds[g] : bounds[g + 1]]
        slot = pairs.slot[members]
        in_second, in_first = lang[slot] == second, lang[slot] == first
        test = _paired_slot_test(
            pairs.gap[members[in_second]], match[slot[in_second]], pairs.gap[members[in_first]],
            match[slot[in_first]], n_boot=fam.boot.n_boot,
            seed=stable_seed("language_shift", model, axis, base_seed=seed), confidence=fam.confidence, swaps=swaps)
        records.append({"model": model, "axis": axis, f"{first}_mean_delta": cells.mean[i1],
                        f"{second}_mean_delta": cells.mean[i2], "delta_mean_delta": cells.mean[i2] - cells.mean[i1],
                        **test, "pair_ci_low": lo, "pair_ci_high": hi})
    return mark_rows(pd.DataFrame.from_records(records).rename(columns={"p_value": "shift_p_value"}), "shift_p_value")


def fairness_ablation(standard: pd.DataFrame, fairness: pd.DataFrame, profile: AnalysisProfile, *, n_boot: int,
                      seed: int, tau: float, confidence: float = 0.95) -> pd.DataFrame:
    """Mean Δ% with and without the fairness instruction, same slots, per model × language (App. E)."""
    if fairness.empty or standard.empty:
        return pd.DataFrame()
    slots = list(SLOT_COLUMNS)
    covered = pd.MultiIndex.from_frame(fairness[slots].drop_duplicates().astype(object))
    keep = pd.MultiIndex.from_frame(standard[slots].astype(object)).isin(covered)
    std = gap_family(standard[keep], profile, n_boot=n_boot, seed=seed, tau=tau,
                     label="fairness_ablation:standard", confidence=confidence)
    fair = gap_family(fairness, profile, n_boot=n_boot, seed=seed, tau=tau,
                      label="fairness_ablation:fairness", confidence=confidence)
    cs = cell_replicates(std.boot, ["model", "language"])
    cf = cell_replicates(fair.boot, ["model", "language"])
    s_index = {tuple(r): i for i, r in enumerate(cs.keys.astype(str).itertuples(index=False, name=None))}
    use_cases = fairness.assign(**{c: fairness[c].astype(str) for c in ("model", "language", "use_case")}).groupby(
        ["model", "language"], sort=False)["use_case"].agg(lambda s: ",".join(dict.fromkeys(s)))
    # the unit resampled: use case × profile × question variant, all axes of it together
    fair_codes, std_codes = _slot_codes([fair.pairs.slot_keys, std.pairs.slot_keys],
                                        [c for c in slots if c != "axis"])
    fair_model = fair.pairs.slot_keys["model"].astype(str).to_numpy()[fair.pairs.slot]
    fair_lang = fair.pairs.slot_keys["language"].astype(str).to_numpy()[fair.pairs.slot]
    std_model = std.pairs.slot_keys["model"].astype(str).to_numpy()[std.pairs.slot]
    std_lang = std.pairs.slot_keys["language"].astype(str).to_numpy()[std.pairs.slot]
    records = []
    swaps = SwapTest(stable_seed("swap_test", "fairness_ablation", base_seed=seed))
    for j, key in enumerate(cf.keys.astype(str).itertuples(index=False, name=None)):
        i = s_index.get(tuple(key))
        if i is None:
            continue
        model, language = key
        lo, hi = _pair_interval(cf, j, cs, i, confidence)
        fmask = (fair_model == model) & (fair_lang == language)
        smask = (std_model == model) & (std_lang == language)
        test = _paired_slot_test(
            fair.pairs.gap[fmask], fair_codes[fair.pairs.slot[fmask]], std.pairs.gap[smask],
            std_codes[std.pairs.slot[smask]], n_boot=n_boot,
            seed=stable_seed("fairness_ablation", model, language, base_seed=seed), confidence=confidence,
            swaps=swaps)
        base, delta = cs.mean[i], cf.mean[j] - cs.mean[i]
        records.append({"model": model, "language": language, "use_cases": use_cases.get((model, language), ""),
                        "standard_mean_delta": base, "fairness_mean_delta": cf.mean[j], "delta": delta,
                        "relative_change": delta / base * 100.0 if base else np.nan, **test,
                        "pair_ci_low": lo, "pair_ci_high": hi, "n_pairs_standard": int(cs.n[i]),
                        "n_pairs_fairness": int(cf.n[j])})
    return mark_rows(pd.DataFrame.from_records(records))


def merit_sensitivity(values: pd.DataFrame, profile: AnalysisProfile, *, n_boot: int, seed: int,
                      confidence: float = 0.95) -> pd.DataFrame:
    """Mean Δ% between profiles per model × use case × language (App. D, Fig. 12)."""
    pairs = profile_pair_gaps(values, ["model", "language", "use_case", "axis"], nonpositive=profile.nonpositive)
    fam = _bootstrap_pairs(pairs, ["model", "language", "use_case"], n_boot=n_boot, seed=seed, tau=np.inf,
                           label="merit_sensitivity", confidence=confidence)
    out = summarise_cells(cell_replicates(fam.boot, ["model", "use_case", "language"]), confidence,
                          nonnegative=profile.nonpositive == "nan")
    out = out[out["n_pairs"] > 0]
    return out[["model", "use_case", "language", "mean_delta", "ci_low", "ci_high", "pair_ci_low",
                "pair_ci_high", "n_pairs", "n_slots"]]
