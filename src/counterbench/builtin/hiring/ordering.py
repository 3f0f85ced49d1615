"""Group ordering across models and the rationale effect (paper "Small Changes, Big Impact" §4.2–4.3, App. E).

- :func:`group_ordering` — per model, the groups ranked by their outcome (1 = best; average ranks for
  ties), the average rank per group, and the Friedman test over the models × groups table with
  Kendall's W = χ²_F / (m (k − 1)) (models are blocks, groups treatments;
  :func:`counterbench.stats.concordance.friedman_kendall_w`, tie-corrected like scipy).
- :func:`rationale_effect` — per model, Δ = metric with rationale − without, for disparity and
  deviation in each setting; "improved" is Δ < 0, "worsened" Δ > 0, Δ = 0 is left out of the exact
  two-sided sign test (:func:`sign_test`, the binomial test at p = ½); a bootstrap over models (5,000)
  gives CIs of the across-model mean Δ — :func:`counterbench.stats.inference.slot_interval` with the
  models as the units (t with m − 1 df; none with one model).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from counterbench.stats.concordance import friedman_kendall_w
from counterbench.stats.inference import slot_interval
from counterbench.stats.seeding import derive_rng

NEUTRAL = "neutral"


def sign_test(worsened: int, improved: int) -> float:
    """Exact two-sided sign test: P-value of ``worsened`` successes out of ``worsened + improved`` at p = ½."""
    n = int(worsened) + int(improved)
    if n == 0:
        return 1.0
    k = min(int(worsened), int(improved))
    return float(min(1.0, 2.0 * stats.binom.cdf(k, n, 0.5)))


def group_ordering(values: pd.DataFrame, value: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Ranks and the Friedman test per (setting,) prompt variant over models.

    ``values`` has ``model``, ``rationale``, ``group`` and ``value`` (higher is better); neutral rows are
    ignored. Returns ``(ranks, tests)``: ``ranks`` has one row per variant × group with
    ``average_rank`` and ``n_models``; ``tests`` one row per variant with ``chi2``, ``df``, ``p_value``,
    ``kendalls_w``, ``n_models``, ``n_groups`` (NaN with fewer than two models with every group).
    """
    marked = values[~values["group"].eq(NEUTRAL)]
    rank_rows, test_rows = [], []
    for rationale, part in marked.groupby("rationale", sort=False):
        matrix = part.pivot_table(index="model", columns="group", values=value, aggfunc="mean", observed=True)
        matrix = matrix.reindex(columns=list(dict.fromkeys(part["group"])))
        complete = matrix.dropna()
        ranks = complete.rank(axis=1, ascending=False, method="average")
        for group in matrix.columns:
            rank_rows.append({"rationale": bool(rationale), "group": group,
                              "average_rank": float(ranks[group].mean()) if len(ranks) else np.nan,
                              "n_models": len(ranks)})
        if len(complete) >= 2 and complete.shape[1] >= 2:
            res = friedman_kendall_w(complete.to_numpy(np.float64))
            test_rows.append({"rationale": bool(rationale), "chi2": res.statistic, "df": res.n_treatments - 1,
                              "p_value": res.pvalue, "kendalls_w": res.kendalls_w, "n_models": res.n_blocks,
                              "n_groups": res.n_treatments})
        else:
            test_rows.append({"rationale": bool(rationale), "chi2": np.nan, "df": complete.shape[1] - 1,
                              "p_value": np.nan, "kendalls_w": np.nan, "n_models": len(complete),
                              "n_groups": complete.shape[1]})
    return pd.DataFrame(rank_rows), pd.DataFrame(test_rows)


def rationale_effect(summary: pd.DataFrame, *, n_boot: int = 5000, seed: int = 0,
                     confidence: float = 0.95) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-model deltas and, per setting × metric, the sign test and the bootstrap over models.

    ``summary`` is :func:`counterbench.builtin.hiring.metrics.bias_summary`. Returns ``(deltas, tests)``;
    ``tests`` columns: ``setting``, ``metric``, ``n_models``, ``improved``, ``worsened``, ``unchanged``,
    ``p_value``, ``mean_without``, ``mean_with``, ``mean_delta``, ``delta_low``, ``delta_high``,
    ``without_low``, ``without_high``, ``with_low``, ``with_high``.
    """
    wide = summary.pivot_table(index=["setting", "model"], columns="rationale", values=["disparity", "deviation"],
                               aggfunc="mean", observed=True)
    delta_rows, test_rows = [], []
    for metric in ("disparity", "deviation"):
        if (metric, False) not in wide.columns or (metric, True) not in wide.columns:
            continue
        pair = wide[[(metric, False), (metric, True)]].dropna()
        pair.columns = ["without", "with"]
        for key, row in pair.iterrows():
            setting_model: tuple[str, str] = key  # type: ignore[assignment]
            delta_rows.append({"setting": setting_model[0], "model": setting_model[1], "metric": metric,
                               "without": row["without"], "with": row["with"], "delta": row["with"] - row["without"]})
        for setting, part in pair.groupby(level="setting", sort=False):
            without = part["without"].to_numpy(np.float64)
            with_ = part["with"].to_numpy(np.float64)
            delta = with_ - without
            improved, worsened = int((delta < 0).sum()), int((delta > 0).sum())
            rng = derive_rng("hiring", "rationale", setting, metric, base_seed=seed)
            idx = rng.integers(0, len(delta), size=(n_boot, len(delta)))
            ci = {}
            for name, arr in (("delta", delta), ("without", without), ("with", with_)):
                # models are the units: t with m − 1 df on the bootstrap SE, its (m − 1)/m deficit put back
                # (a plain percentile interval over 3 models covered ~80%)
                low, high = slot_interval(arr.mean(), arr[idx].mean(axis=1)[None, :], len(arr), 1, confidence)
                ci[f"{name}_low"], ci[f"{name}_high"] = float(low[0]), float(high[0])
            test_rows.append({"setting": setting, "metric": metric, "n_models": len(delta), "improved": improved,
                              "worsened": worsened, "unchanged": len(delta) - improved - worsened,
                              "p_value": sign_test(worsened, improved), "mean_without": float(without.mean()),
                              "mean_with": float(with_.mean()), "mean_delta": float(delta.mean()), **ci})
    return pd.DataFrame(delta_rows), pd.DataFrame(test_rows)
