"""Ordering consistency tables: Kendall's W, question-variant robustness, profile rank agreement,
ranking agreement between languages (paper §4.2, §5.2, §6, App. A.2, B, D; spec §3).

Compositions of :mod:`counterbench.stats.concordance`, :mod:`counterbench.stats.correlation`,
:mod:`counterbench.stats.multiple_testing` and :mod:`counterbench.stats.robustness`.

Decisions:

- **Kendall's W** per model × language × use case × axis: profiles (blocks) × identifiers
  (treatments), each cell the mean over question variants. Identifiers with no value at all in the
  cell are left out; then profiles with any gap are dropped (spec §3). A fully tied matrix gives
  W = 0, p = 1 and is counted (default) or is dropped (the release profile: W and p NaN,
  ``included`` false). Cells with < 2 profiles or < 2 identifiers are not included.
- **Per axis**: mean W over the included use cases, Fisher-combined p; Benjamini–Hochberg q across
  models within each language × axis column (``q_bh_within_axis``, the paper's tables: with two
  models it corrects nothing) and across every model × language × axis cell (``q_bh_all``).
  **Marks**: ``significant`` = ``q_value`` ≤ 0.05, BH within one model's rows of the table (its
  languages × axes; per use case: its languages × use cases × axes; per model: its languages), so
  a model's marks do not depend on which other models were audited with it, and under no ordering
  effect a model gets any mark in ≤ 5% of audits (docs/analysis.md). The analysis then re-marks them
  in the model's one family over every table (:mod:`counterbench.analyses.families`). Per model: Mean W over
  axes, Fisher over the axes' combined p, ``q_bh`` across models within a language (the paper's).
- **Robustness / profile rank agreement**: per-setting values from :mod:`counterbench.stats.robustness`;
  means over use cases (robustness) or axes (rank agreement) with a percentile bootstrap CI that
  resamples those per-setting values (paper App. B), seeded per group.
- Means that are ranked (W, robustness, rank agreement, language ρ) are rounded to 12 significant
  digits first, so that equal answers stay tied whatever the order of summation.
- **Language ρ** (Fig. 5a): default, per use case (identifier means per language within model ×
  use case × axis, Spearman over identifiers present in both, ≥ 3), then averaged over use cases
  with the p-values Fisher-combined; the release profile pools the use cases' values first, as the
  release did (mixing rupees and percentages).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Literal

import numpy as np
import pandas as pd

from counterbench.analyses.profiles import AnalysisProfile
from counterbench.analyses.resampling import percentiles as percentile_interval
from counterbench.stats.arrays import FloatArray
from counterbench.stats.comparisons import language_rank_agreement
from counterbench.stats.concordance import friedman_kendall_w, friedman_kendall_w_stacked
from counterbench.stats.correlation import pairwise_spearman
from counterbench.stats.inference import family_marks
from counterbench.stats.multiple_testing import benjamini_hochberg, fisher_combine
from counterbench.stats.seeding import stable_seed

__all__ = [
    "grouped_mean",
    "kendalls_w_tables",
    "language_rho",
    "profile_rank_agreement_table",
    "qv_robustness_tables",
]

CELL = ["model", "language", "use_case", "axis"]


def round_significant(values: pd.Series, digits: int = 12) -> pd.Series:
    """``values`` rounded to ``digits`` significant digits: means that are equal in exact arithmetic
    (the same answers summed in another order, or shifted by a slot adjustment) become equal floats,
    so ties stay ties when identifiers are ranked."""
    x = values.to_numpy(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        magnitude = np.where((x == 0) | ~np.isfinite(x), 0.0, np.floor(np.log10(np.abs(x))))
        factor = 10.0 ** (digits - 1 - magnitude)
        rounded = np.where(np.isfinite(x), np.round(x * factor) / factor, x)
    return pd.Series(rounded, index=values.index, name=values.name)


def _bh(p: pd.Series) -> np.ndarray:
    q, _ = benjamini_hochberg(p.to_numpy(dtype=np.float64))
    return np.asarray(q, dtype=np.float64)


def _fisher(p: pd.Series) -> float:
    return fisher_combine(p.to_numpy(dtype=np.float64))[1]


def kendalls_w_tables(values: pd.DataFrame, profile: AnalysisProfile) -> dict[str, pd.DataFrame]:
    """``kendalls_w`` (per use case), ``kendalls_w_axis`` and ``kendalls_w_model``."""
    means = values.groupby([*CELL, "profile_id", "identifier"], observed=True, sort=True)["value"].mean()
    means = round_significant(means)
    if means.empty:
        return {}
    wide = means.unstack("identifier")
    policy: Literal["zero", "drop"] = "drop" if profile.drop_fully_tied else "zero"
    records = []
    for (use_case, axis), block in wide.groupby(level=["use_case", "axis"], observed=True, sort=False):
        block = block.dropna(axis=1, how="all")
        cells = block.groupby(level=["model", "language"], observed=True, sort=False).size()
        if not block.isna().to_numpy().any() and cells.nunique() == 1:  # complete: one vectorised call
            stack = block.to_numpy(np.float64).reshape(len(cells), int(cells.iloc[0]), block.shape[1])
            chi2, p, w, tied = friedman_kendall_w_stacked(stack, fully_tied=policy)
            results = [(w[i], chi2[i], p[i], stack.shape[1], stack.shape[2], bool(tied[i])) for i in range(len(cells))]
        else:
            results = []
            for key in cells.index:
                matrix = pd.DataFrame(block.xs(key, level=["model", "language"])).dropna(axis=1, how="all")
                res = friedman_kendall_w(matrix.to_numpy(np.float64), fully_tied=policy)
                results.append((res.kendalls_w, res.statistic, res.pvalue, res.n_blocks, res.n_treatments,
                                res.fully_tied))
        for (model, language), (w_i, chi2_i, p_i, n_blocks, k, tied_i) in zip(cells.index, results, strict=True):
            included = bool(n_blocks >= 2 and k >= 2 and not np.isnan(w_i))
            records.append((model, language, use_case, axis, float(w_i), float(chi2_i), float(p_i), int(n_blocks),
                            int(k), tied_i, included))
    per_cell = pd.DataFrame.from_records(
        records, columns=[*CELL, "w", "chi2", "p_value", "n_blocks", "k", "fully_tied", "included"])
    if not ((per_cell["n_blocks"] >= 2) & (per_cell["k"] >= 2)).any():
        return {}  # nothing computable (a fully tied cell dropped by the release profile still has its row)
    per_cell["q_bh_all"] = _bh(per_cell["p_value"].where(per_cell["included"]))
    per_cell["q_value"], per_cell["significant"] = family_marks(per_cell, testable=per_cell["included"])

    used = per_cell[per_cell["included"]]
    per_axis = used.groupby(["model", "language", "axis"], sort=False).agg(
        mean_w=("w", "mean"), p_fisher=("p_value", _fisher), n_use_cases=("w", "size")).reset_index()
    per_axis["q_bh_within_axis"] = np.nan
    for _, idx in per_axis.groupby(["language", "axis"], sort=False).groups.items():
        per_axis.loc[idx, "q_bh_within_axis"] = _bh(per_axis.loc[idx, "p_fisher"])
    per_axis["q_bh_all"] = _bh(per_axis["p_fisher"])
    per_axis["q_value"], per_axis["significant"] = family_marks(per_axis, p_col="p_fisher")

    by_model = per_axis.groupby(["model", "language"], sort=False).agg(
        mean_w=("mean_w", "mean"), p_fisher=("p_fisher", _fisher), n_axes=("mean_w", "size")).reset_index()
    by_model["q_bh"] = np.nan
    for _, idx in by_model.groupby("language", sort=False).groups.items():
        by_model.loc[idx, "q_bh"] = _bh(by_model.loc[idx, "p_fisher"])
    by_model["q_value"], by_model["significant"] = family_marks(by_model, p_col="p_fisher")
    return {"kendalls_w": per_cell, "kendalls_w_axis": per_axis, "kendalls_w_model": by_model}


def _mean_interval(values: FloatArray, n_boot: int, seed: int, confidence: float) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of a few values (rows resampled), all replicates at once."""
    if n_boot <= 0 or values.size == 0:
        return np.nan, np.nan
    rng = np.random.default_rng(seed)
    reps = values[rng.integers(0, values.size, size=(int(n_boot), values.size))].mean(axis=1)
    low, high = percentile_interval(reps, confidence)
    return float(low), float(high)


def grouped_mean(frame: pd.DataFrame, by: Sequence[str], value_col: str, *, n_boot: int, seed: int,
                 name: str, confidence: float = 0.95) -> pd.DataFrame:
    """Mean of ``value_col`` per group with a percentile bootstrap CI resampling the group's rows
    (``by..., estimate, ci_low, ci_high, n``); NaN values left out; each group seeded with
    ``stable_seed(name, *key, base_seed=seed)`` (the scheme of
    :func:`counterbench.stats.robustness.grouped_mean_ci`, vectorised: one draw per group)."""
    rows = frame[frame[value_col].notna()]
    records = []
    for key, block in rows.groupby(list(by), observed=True, sort=False):
        parts = key if isinstance(key, tuple) else (key,)
        vals = block[value_col].to_numpy(np.float64)
        low, high = _mean_interval(vals, n_boot, stable_seed(name, *(str(p) for p in parts), base_seed=seed),
                                   confidence)
        records.append((*parts, float(vals.mean()), low, high, int(vals.size)))
    return pd.DataFrame.from_records(records, columns=[*by, "estimate", "ci_low", "ci_high", "n"])


def _cell_matrices(wide: pd.DataFrame, group_levels: list[str], cell_levels: list[str]
                   ) -> Iterator[tuple[tuple[object, ...], list[tuple[object, ...]], FloatArray | list[FloatArray]]]:
    """Per group of ``wide`` (index: cell levels + one row level), the cells' matrices: a stacked
    (cells × rows × columns) array when every cell is complete and of one shape, else a list of
    matrices (NaN kept, all-NaN columns of the group dropped). Rows of a cell must be contiguous."""
    for gkey, block in wide.groupby(level=group_levels, observed=True, sort=False):
        block = block.dropna(axis=1, how="all")
        sizes = block.groupby(level=cell_levels, observed=True, sort=False).size()
        arr = block.to_numpy(np.float64)
        keys = [k if isinstance(k, tuple) else (k,) for k in sizes.index]
        gparts = gkey if isinstance(gkey, tuple) else (gkey,)
        if not np.isnan(arr).any() and sizes.nunique() == 1:
            yield gparts, keys, arr.reshape(len(sizes), int(sizes.iloc[0]), arr.shape[1])
        else:
            bounds = np.cumsum([0, *sizes.to_numpy()])
            yield gparts, keys, [arr[bounds[i] : bounds[i + 1]] for i in range(len(sizes))]


def _clean(matrix: FloatArray) -> FloatArray:
    """Drop all-NaN columns, then rows with any NaN (the rule of :mod:`counterbench.stats.robustness`)."""
    m = matrix[:, ~np.isnan(matrix).all(axis=0)]
    return m[~np.isnan(m).any(axis=1)]


def _upper(corr: FloatArray) -> FloatArray:
    iu, ju = np.triu_indices(corr.shape[-1], 1)
    return np.asarray(corr[..., iu, ju], dtype=np.float64)


def _min_rho(stack: FloatArray) -> FloatArray:
    """Min pairwise ρ between columns, NaN if any pair is undefined (as stats' min_pairwise_spearman)."""
    upper = _upper(pairwise_spearman(stack, axis=0))
    return np.where(np.isnan(upper).any(axis=-1) | (upper.shape[-1] == 0), np.nan,
                    upper.min(axis=-1, initial=np.inf))


def _mean_rho(stack: FloatArray) -> FloatArray:
    """Mean pairwise ρ between columns, undefined pairs ignored (as stats' mean_pairwise_spearman)."""
    upper = _upper(pairwise_spearman(stack, axis=0))
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(np.nanmean(upper, axis=-1) if upper.shape[-1] else np.full(upper.shape[:-1], np.nan))


def _per_cell(wide: pd.DataFrame, statistic: Callable[[FloatArray], FloatArray], min_rows: int, min_cols: int,
              row_name: str, col_name: str) -> pd.DataFrame:
    """``statistic`` over the (rows × columns) matrix of every model × language × use case × axis."""
    records = []
    for (use_case, axis), keys, mats in _cell_matrices(wide, ["use_case", "axis"], ["model", "language"]):
        if isinstance(mats, np.ndarray):
            ok = mats.shape[1] >= min_rows and mats.shape[2] >= min_cols
            values = statistic(mats) if ok else np.full(len(keys), np.nan)
            shapes = [(mats.shape[1], mats.shape[2])] * len(keys)
        else:
            cleaned = [_clean(m) for m in mats]
            shapes = [m.shape for m in cleaned]
            values = np.array([statistic(m[None])[0] if m.shape[0] >= min_rows and m.shape[1] >= min_cols
                               else np.nan for m in cleaned])
        for (model, language), value, (rows, cols) in zip(keys, values, shapes, strict=True):
            records.append((model, language, use_case, axis, float(value), int(cols), int(rows)))
    return pd.DataFrame.from_records(records, columns=[*CELL, "value", col_name, row_name])


def qv_robustness_tables(values: pd.DataFrame, *, n_boot: int, seed: int, threshold: float = 0.85,
                         confidence: float = 0.95) -> dict[str, pd.DataFrame]:
    """``qv_robustness`` (per axis, mean over use cases), ``qv_robustness_model`` and
    ``qv_robustness_by_use_case`` (App. B, Tables 7–8): per setting, identifiers × question variants
    matrix of means over profiles, min pairwise ρ between the variant columns (the definition and
    rules of :func:`counterbench.stats.robustness.question_variant_robustness`, stacked)."""
    means = values.groupby([*CELL, "identifier", "question_variant"], observed=True, sort=True)["value"].mean()
    means = round_significant(means)
    if means.empty:
        return {}
    settings = _per_cell(means.unstack("question_variant"), _min_rho, 3, 2, "n_identifiers", "n_variants")
    settings = settings.rename(columns={"value": "min_rho"})
    if settings["min_rho"].isna().all():
        return {}
    out: dict[str, pd.DataFrame] = {"qv_robustness_by_use_case": settings}
    for name, by, count in (("qv_robustness", ["model", "language", "axis"], "n_use_cases"),
                            ("qv_robustness_model", ["model", "language"], "n_settings")):
        table = grouped_mean(settings, by, "min_rho", n_boot=n_boot, seed=seed, name=name, confidence=confidence)
        table = table.rename(columns={"estimate": "mean_min_rho", "n": count})
        table["robust"] = table["mean_min_rho"] >= threshold
        out[name] = table
    return out


def profile_rank_agreement_table(values: pd.DataFrame, *, n_boot: int, seed: int,
                                 confidence: float = 0.95) -> pd.DataFrame:
    """Mean pairwise ρ between identifier columns (each ranking the profiles, means over question
    variants) per model × use case × language, averaged over axes, CI resampling the axes' values
    (App. D, Fig. 13; the rules of :func:`counterbench.stats.robustness.profile_rank_agreement`)."""
    means = values.groupby([*CELL, "profile_id", "identifier"], observed=True, sort=True)["value"].mean()
    means = round_significant(means)
    if means.empty:
        return pd.DataFrame()
    per_axis = _per_cell(means.unstack("identifier"), _mean_rho, 3, 2, "n_profiles", "n_identifiers")
    table = grouped_mean(per_axis, ["model", "use_case", "language"], "value", n_boot=n_boot, seed=seed,
                         name="profile_rank_agreement", confidence=confidence)
    return table.rename(columns={"estimate": "mean_rho", "n": "n_axes"})


def language_rho(values: pd.DataFrame, profile: AnalysisProfile, first: str, second: str) -> pd.DataFrame:
    """Spearman ρ between ``first`` and ``second`` identifier rankings per model × axis (Fig. 5a),
    from :func:`counterbench.stats.comparisons.language_rank_agreement` (see module docstring)."""
    langs = set(values["language"].astype(str))
    if first not in langs or second not in langs:
        return pd.DataFrame()
    cells = ["model", "axis", "use_case"] if profile.language_rho_per_use_case else ["model", "axis"]
    means = values.groupby([*cells, "identifier", "language"], observed=True, sort=True)["value"].mean()
    per = language_rank_agreement(round_significant(means).reset_index(), cells, languages=(first, second))
    per = per[per["rho"].notna()]
    if per.empty:
        return per
    return per.groupby(["model", "axis"], observed=True, sort=False).agg(
        rho=("rho", "mean"), p_value=("pvalue", _fisher), n_use_cases=("rho", "size")).reset_index()
