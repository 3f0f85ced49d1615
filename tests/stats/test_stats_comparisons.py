"""Language moderation and fairness ablation helpers (paper §6 Fig. 5, App. E Fig. 14)."""

from __future__ import annotations

import pandas as pd
import pytest
from scipy import stats

from counterbench.stats import language_rank_agreement, mean_gap, mean_gap_shift, pair_gaps

from .helpers import SLOT, design, with_values


def test_language_rank_agreement_matches_scipy() -> None:
    frame = with_values(design(use_cases={"salary_estimation": (3, 2), "service_pricing_vendor": (2, 2)}), seed=9)
    cell = ["model", "use_case", "axis"]
    out = language_rank_agreement(frame, cell, languages=("en", "hinglish")).set_index(cell)
    for key, block in frame.groupby(cell):
        table = block.pivot_table(index="identifier", columns="language", values="value", aggfunc="mean")
        ref = stats.spearmanr(table["en"], table["hinglish"])
        assert (out.loc[key, "rho"], out.loc[key, "pvalue"]) == pytest.approx((ref.statistic, ref.pvalue), abs=1e-12)
        assert out.loc[key, "n_identifiers"] == len(table)


def test_language_rank_agreement_hand_worked() -> None:
    # EN means A < B < C, Hinglish C < B < A: ρ = −1
    frame = pd.DataFrame(
        {
            "cell": 1,
            "language": ["en"] * 3 + ["hinglish"] * 3,
            "identifier": list("ABCABC"),
            "value": [1, 2, 3, 3, 2, 1],
        }
    )
    out = language_rank_agreement(frame, ["cell"], languages=("en", "hinglish"))
    assert out.loc[0, "rho"] == -1.0 and out.loc[0, "n_identifiers"] == 3


def test_mean_gap_shift_recovers_a_known_change() -> None:
    base = with_values(design(use_cases={"salary_estimation": (6, 3)}, languages=("en",)), seed=10)
    standard = base.assign(variant="standard")
    # fairness prompt halves every deviation from the slot mean → gaps shrink by about half
    slot_mean = base.groupby(SLOT)["value"].transform("mean")
    fair = base.assign(variant="fair", value=slot_mean + 0.5 * (base["value"] - slot_mean))
    std_pairs = pair_gaps(standard, [*SLOT, "variant"])
    fair_pairs = pair_gaps(fair, [*SLOT, "variant"])
    shift = mean_gap_shift(fair_pairs, std_pairs, SLOT, n_boot=1000, seed=3)
    assert shift.mean_control == pytest.approx(mean_gap(std_pairs.gap))
    assert shift.delta == pytest.approx(mean_gap(fair_pairs.gap) - mean_gap(std_pairs.gap))
    assert shift.relative_change == pytest.approx(shift.delta / shift.mean_control * 100)
    assert shift.relative_change == pytest.approx(-50.0, abs=1.0)
    assert shift.pairs.high < 0 and shift.slots.high < 0
    assert shift.slots.low < shift.delta < shift.slots.high
    same = mean_gap_shift(std_pairs, std_pairs, SLOT, n_boot=200, seed=3)
    assert same.delta == 0.0 and same.slots.low == same.slots.high == 0.0
    row = shift.as_dict()
    assert {"delta", "pairs_ci_low", "slots_ci_high", "slots_ci_method"} <= set(row)
