"""Ranking robustness and base-profile analyses (paper App. B and App. D).

- **Question-variant robustness** (App. B, Tables 7–8): per setting (model × language × use case ×
  axis) the identifiers are ranked by their mean output under each question variant; the metric is
  the minimum pairwise Spearman ρ between those variant-wise rankings; settings are then averaged
  (e.g. over use cases) with a bootstrap CI resampling the per-setting values, ✓ when ≥ 0.85.
- **Merit sensitivity** (App. D, Fig. 12): Δ% between every pair of profiles within (identifier,
  question variant) — :func:`profile_pair_gaps`, then Mean Δ% with a CI.
- **Profile rank agreement** (App. D, Fig. 13): profiles × identifiers matrix of means over
  question variants; mean pairwise Spearman ρ between the identifier columns (each column ranks
  the profiles), as the paper and spec define it. ``between="profiles"`` gives the transposed
  variant (ρ between profile rows' identifier rankings) for exploration.

Decisions:

- Means are unweighted means of the available values; NaN values are ignored.
- Robustness: identifiers without a value under every variant are dropped from the setting; a
  setting with < 2 variants or < 3 identifiers, or with a constant variant ranking, has min ρ = NaN
  and is left out of the averages (``n_settings`` counts the ones used).
- Profile rank agreement: profiles missing under any identifier are dropped; constant identifier
  columns give undefined ρ, which is ignored in the mean; fewer than 3 profiles → NaN.
- Grouped summaries derive each group's seed with :func:`~counterbench.stats.seeding.stable_seed`
  from the group key and ``seed``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd

from counterbench.stats.bootstrap import bootstrap_mean
from counterbench.stats.cells import cell_means, complete_cells
from counterbench.stats.correlation import mean_pairwise_spearman, min_pairwise_spearman
from counterbench.stats.gaps import Nonpositive, PairGaps, pair_gaps
from counterbench.stats.seeding import stable_seed

__all__ = [
    "grouped_mean_ci",
    "profile_pair_gaps",
    "profile_rank_agreement",
    "question_variant_robustness",
    "robustness_summary",
]


def question_variant_robustness(
    frame: pd.DataFrame,
    setting_cols: Sequence[str],
    variant_col: str = "question_variant",
    identifier_col: str = "identifier",
    value_col: str = "value",
) -> pd.DataFrame:
    """Minimum pairwise Spearman ρ between variant-wise identifier rankings, per setting (App. B).

    Returns one row per setting with ``min_rho``, ``n_variants`` and ``n_identifiers``.
    """
    table = cell_means(frame, setting_cols, identifier_col, variant_col, value_col)
    records = []
    for key, complete in complete_cells(table, setting_cols):
        n_var, n_id = complete.shape[1], complete.shape[0]
        ok = n_var >= 2 and n_id >= 3
        rho = min_pairwise_spearman(complete.to_numpy(dtype=np.float64), axis=0) if ok else float("nan")
        records.append((*key, rho, n_var, n_id))
    return pd.DataFrame.from_records(records, columns=[*setting_cols, "min_rho", "n_variants", "n_identifiers"])


def grouped_mean_ci(
    frame: pd.DataFrame,
    by: Sequence[str],
    value_col: str,
    *,
    n_boot: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    name: str = "mean_ci",
) -> pd.DataFrame:
    """Mean of ``value_col`` per group of ``by`` with a percentile bootstrap CI resampling rows.

    Each group's stream is seeded with ``stable_seed(name, *key, base_seed=seed)``. NaN values are
    ignored. Columns: ``by..., estimate, ci_low, ci_high, se, n, ci_method, n_boot, seed, confidence``.
    """
    records = []
    groups = frame.groupby(list(by), sort=True, observed=True, dropna=False) if by else [((), frame)]
    for key, block in groups:
        key_t = key if isinstance(key, tuple) else (key,)
        res = bootstrap_mean(
            block[value_col].to_numpy(dtype=np.float64),
            n_boot=n_boot,
            seed=stable_seed(name, *key_t, base_seed=seed),
            confidence=confidence,
        )
        records.append({**dict(zip(by, key_t, strict=True)), **res.as_dict()})
    return pd.DataFrame.from_records(records)


def robustness_summary(
    per_setting: pd.DataFrame,
    by: Sequence[str],
    *,
    value_col: str = "min_rho",
    threshold: float = 0.85,
    n_boot: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Mean min ρ over settings per group (e.g. model × language × axis), bootstrap CI, ✓ flag (App. B).

    ``passes`` is True when the mean is ≥ ``threshold`` (0.85 in the paper). ``n`` counts the
    settings with a defined min ρ.
    """
    out = grouped_mean_ci(
        per_setting, by, value_col, n_boot=n_boot, seed=seed, confidence=confidence, name="qv_robustness"
    )
    out["passes"] = out["estimate"] >= threshold
    return out


def profile_pair_gaps(
    frame: pd.DataFrame,
    cell_cols: Sequence[str],
    profile_col: str = "profile_id",
    identifier_col: str = "identifier",
    variant_col: str = "question_variant",
    value_col: str = "value",
    *,
    nonpositive: Nonpositive = "nan",
) -> PairGaps:
    """Merit sensitivity pairs (App. D): Δ% between every pair of profiles within (identifier, variant).

    A slot is ``cell_cols`` (e.g. model × use case × language × axis, and the prompt variant) ×
    identifier × question variant; the pairs are profile pairs. Then use ``mean_gap`` /
    ``bootstrap_mean`` (or ``cluster_bootstrap_mean`` on ``.slot``) for the mean with a CI.
    """
    slot_cols = [*cell_cols, identifier_col, variant_col]
    return pair_gaps(frame, slot_cols, identifier_col=profile_col, value_col=value_col, nonpositive=nonpositive)


def profile_rank_agreement(
    frame: pd.DataFrame,
    cell_cols: Sequence[str],
    profile_col: str = "profile_id",
    identifier_col: str = "identifier",
    value_col: str = "value",
    *,
    between: Literal["identifiers", "profiles"] = "identifiers",
) -> pd.DataFrame:
    """Mean pairwise Spearman ρ of the profiles × identifiers mean matrix, per cell (App. D, Fig. 13).

    ``between="identifiers"`` (paper and spec): correlate identifier columns, each ranking the
    profiles. Values are averaged over question variants (and anything else not in the cell).
    Returns ``cell_cols..., mean_rho, n_profiles, n_identifiers``.
    """
    if between not in ("identifiers", "profiles"):
        raise ValueError(f'between must be "identifiers" or "profiles", got {between!r}')
    table = cell_means(frame, cell_cols, profile_col, identifier_col, value_col)
    records = []
    for key, complete in complete_cells(table, cell_cols):
        n_prof, n_id = complete.shape
        matrix = complete.to_numpy(dtype=np.float64)
        if between == "identifiers":
            ok = n_prof >= 3 and n_id >= 2
            rho = mean_pairwise_spearman(matrix, axis=0) if ok else float("nan")
        else:
            ok = n_id >= 3 and n_prof >= 2
            rho = mean_pairwise_spearman(matrix, axis=1) if ok else float("nan")
        records.append((*key, rho, n_prof, n_id))
    return pd.DataFrame.from_records(records, columns=[*cell_cols, "mean_rho", "n_profiles", "n_identifiers"])
