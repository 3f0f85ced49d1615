"""Language moderation and fairness-instruction ablation helpers (paper §6 Fig. 5, App. E Fig. 14).

- :func:`language_rank_agreement`: Spearman ρ between the identifier rankings in two languages
  (identifier means), per cell. The spec computes it per use case and then averages over use cases
  (the release pooled rupees with percentages, which the spec rejects).
- :func:`mean_gap_shift`: ΔMean Δ% between two arms of pairs — second language − first, or fair −
  standard — with the raw means, the relative change and two bootstrap CIs: the paper-style pair
  bootstrap (arms resampled independently) and a paired cluster bootstrap over matched slots.

Decisions:

- Identifier means are unweighted means of available values; identifiers missing in either language
  are dropped from that cell's ρ; fewer than 3 common identifiers → ρ = NaN.
- Relative change = Δ / Mean Δ%_control × 100 (NaN when the control mean is 0).
- Slots of the two arms are matched on ``match_cols`` (the slot key columns that identify the same
  design cell in both arms, i.e. the slot columns without the language or prompt-variant column).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from counterbench.stats.bootstrap import BootstrapResult, bootstrap_mean_difference
from counterbench.stats.cells import cell_means, iter_cells
from counterbench.stats.cluster_bootstrap import cluster_bootstrap_mean_difference
from counterbench.stats.correlation import spearman
from counterbench.stats.gaps import PairGaps, mean_gap
from counterbench.stats.seeding import stable_seed

__all__ = ["GapShift", "language_rank_agreement", "mean_gap_shift"]


def language_rank_agreement(
    frame: pd.DataFrame,
    cell_cols: Sequence[str],
    language_col: str = "language",
    identifier_col: str = "identifier",
    value_col: str = "value",
    *,
    languages: tuple[str, str],
) -> pd.DataFrame:
    """Spearman ρ (and p) between two languages' identifier rankings per cell (paper §6, Fig. 5a).

    ``cell_cols`` e.g. ``["model", "use_case", "axis"]``. Returns ``cell_cols..., rho, pvalue,
    n_identifiers``; average ``rho`` over use cases afterwards as the spec asks.
    """
    rows = frame.loc[frame[language_col].isin(languages)] if language_col in frame.columns else frame
    table = cell_means(rows, cell_cols, identifier_col, language_col, value_col, where="language_rank_agreement")
    for lang in languages:
        if lang not in table.columns:
            table[lang] = np.nan
    table = table[list(languages)].dropna()
    records = []
    for key, block in iter_cells(table, cell_cols):
        n = len(block)
        rho, p = spearman(block[languages[0]], block[languages[1]]) if n >= 3 else (float("nan"), float("nan"))
        records.append((*key, rho, p, n))
    return pd.DataFrame.from_records(records, columns=[*cell_cols, "rho", "pvalue", "n_identifiers"])


@dataclass(frozen=True)
class GapShift:
    """Change in Mean Δ% from a control arm to a treatment arm, with two CIs (App. E, §6)."""

    mean_control: float
    mean_treatment: float
    delta: float
    relative_change: float
    pairs: BootstrapResult
    slots: BootstrapResult

    def as_dict(self) -> dict[str, object]:
        """Flat dict for a results table."""
        return {
            "mean_control": self.mean_control,
            "mean_treatment": self.mean_treatment,
            "delta": self.delta,
            "relative_change": self.relative_change,
            **self.pairs.as_dict("pairs_"),
            **self.slots.as_dict("slots_"),
        }


def _matched_slot_codes(
    treatment: PairGaps, control: PairGaps, match_cols: Sequence[str]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Joint codes of the two arms' slots on ``match_cols``, mapped to every pair."""
    cols = list(match_cols)
    keys = pd.concat([treatment.slot_keys[cols], control.slot_keys[cols]], ignore_index=True)
    codes = keys.groupby(cols, sort=True, observed=True, dropna=False).ngroup().to_numpy().astype(np.int64)
    n_t = treatment.n_slots
    return codes[:n_t][treatment.slot], codes[n_t:][control.slot]


def mean_gap_shift(
    treatment: PairGaps,
    control: PairGaps,
    match_cols: Sequence[str],
    *,
    n_boot: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    name: str = "mean_gap_shift",
) -> GapShift:
    """ΔMean Δ% = Mean Δ%(treatment) − Mean Δ%(control) with pair and paired-slot bootstrap CIs.

    Language moderation: treatment = the second language's pairs, control = the first's (paper §6, Fig. 5b).
    Fairness ablation: treatment = fair-prompt pairs, control = standard pairs (App. E, Fig. 14).
    ``match_cols`` are the slot columns shared by both arms (e.g. ``["use_case", "axis",
    "profile_id", "question_variant"]``). Seeds: ``stable_seed(name, "pairs"|"slots", base_seed=seed)``.
    """
    t_codes, c_codes = _matched_slot_codes(treatment, control, match_cols)
    pairs = bootstrap_mean_difference(
        treatment.gap,
        control.gap,
        n_boot=n_boot,
        seed=stable_seed(name, "pairs", base_seed=seed),
        confidence=confidence,
    )
    slots = cluster_bootstrap_mean_difference(
        treatment.gap,
        t_codes,
        control.gap,
        c_codes,
        n_boot=n_boot,
        seed=stable_seed(name, "slots", base_seed=seed),
        confidence=confidence,
    )
    m_t, m_c = mean_gap(treatment.gap), mean_gap(control.gap)
    delta = m_t - m_c
    return GapShift(
        mean_control=m_c,
        mean_treatment=m_t,
        delta=delta,
        relative_change=delta / m_c * 100.0 if m_c != 0 else float("nan"),
        pairs=pairs,
        slots=slots,
    )
