"""Relative pair gaps, Mean Δ%, Violation@τ (paper §4.2 Eq. 1–2)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from counterbench.stats import (
    mean_gap,
    pair_gaps,
    relative_gap,
    slot_sums,
    summarise_gaps,
    violation_rate,
)

from .helpers import SLOT, brute_force_pairs, design, with_values


def test_relative_gap_hand_worked() -> None:
    # |110 - 90| / ((110 + 90) / 2) * 100 = 20 / 100 * 100 = 20
    # |100 - 50| / 75 * 100 = 66.666...
    # 0 and 0: a + b = 0 -> NaN; -5 and 3: a + b = -2 <= 0 -> NaN
    got = relative_gap([110.0, 100.0, 0.0, -5.0], [90.0, 50.0, 0.0, 3.0])
    np.testing.assert_allclose(got[:2], [20.0, 200.0 / 3.0], rtol=0, atol=1e-12)
    assert np.isnan(got[2:]).all()
    # signed: (90 - 110) / 100 * 100 = -20
    assert relative_gap(90.0, 110.0, signed=True) == pytest.approx(-20.0, abs=1e-12)
    # keep: (-5 - 3) / ((-5 + 3) / 2) * 100 = -8 / -1 * 100 = 800 (signed); only a + b = 0 is NaN
    assert relative_gap(-5.0, 3.0, signed=True, nonpositive="keep") == pytest.approx(800.0)
    assert np.isnan(relative_gap(-3.0, 3.0, nonpositive="keep"))
    assert np.isnan(relative_gap(np.nan, 3.0))


def test_pair_gaps_hand_worked() -> None:
    # slot s1: A=100, B=120, C=80  -> (A,B) 20/110*100 = 18.1818..., (A,C) 20/90*100 = 22.2222...,
    #                                 (B,C) 40/100*100 = 40
    # slot s2: A=100, B=NaN, C=100 -> only (A,C) = 0 (B's pairs are removed, nothing imputed)
    frame = pd.DataFrame(
        {
            "slot": ["s1", "s1", "s1", "s2", "s2", "s2"],
            "identifier": ["A", "B", "C", "A", "B", "C"],
            "value": [100.0, 120.0, 80.0, 100.0, np.nan, 100.0],
        }
    )
    pairs = pair_gaps(frame, ["slot"], signed=True, include_values=True)
    expected = [2000 / 110, 2000 / 90, 40.0, 0.0]
    np.testing.assert_allclose(pairs.gap, expected, rtol=0, atol=1e-12)
    assert pairs.n_pairs == 4 and pairs.n_slots == 2
    assert list(pairs.slot) == [0, 0, 0, 1]
    assert [pairs.identifiers[i] for i in pairs.first] == ["A", "A", "B", "A"]
    assert [pairs.identifiers[i] for i in pairs.second] == ["B", "C", "C", "C"]
    # signed = first - second: A - B < 0, A - C > 0, B - C > 0
    np.testing.assert_allclose(pairs.signed, [-2000 / 110, 2000 / 90, 40.0, 0.0], atol=1e-12)
    # Mean Δ% = (18.1818 + 22.2222 + 40 + 0) / 4 = 20.1010...
    assert mean_gap(pairs.gap) == pytest.approx(sum(expected) / 4, abs=1e-12)
    # Violation@20: 22.22 and 40 exceed 20 -> 2 of 4 = 50 %; Violation@40 is strict -> 0 %
    assert violation_rate(pairs.gap, 20.0) == pytest.approx(50.0)
    assert violation_rate(pairs.gap, 40.0) == 0.0
    frame_out = pairs.to_frame()
    assert list(frame_out["identifier_a"].astype(str)) == ["A", "A", "B", "A"]
    assert list(frame_out["slot"]) == [0, 0, 0, 1]


def test_pair_gaps_match_brute_force_with_missing_values() -> None:
    frame = with_values(
        design(use_cases={"salary_estimation": (3, 2), "service_pricing_vendor": (2, 2)}), seed=1, missing=0.15
    )
    frame.loc[frame.index[:7], "value"] = 0.0  # some a + b = 0 pairs -> NaN gaps
    pairs = pair_gaps(frame, SLOT, signed=True)
    got = pairs.to_frame()
    expected = brute_force_pairs(frame, SLOT)
    assert len(got) == len(expected)
    key = [*SLOT, "identifier_a", "identifier_b"]
    got = got.astype({c: str for c in key}).sort_values(key).reset_index(drop=True)
    expected = expected.astype({c: str for c in key}).sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(got[key], expected[key])
    np.testing.assert_allclose(got["gap"], expected["gap"], rtol=1e-12, atol=1e-9, equal_nan=True)
    np.testing.assert_allclose(got["signed_gap"], expected["signed_gap"], rtol=1e-12, atol=1e-9, equal_nan=True)
    assert np.isnan(got["gap"]).any()
    finite = expected["gap"].dropna()
    assert mean_gap(pairs.gap) == pytest.approx(finite.mean(), abs=1e-9)
    assert violation_rate(pairs.gap) == pytest.approx((finite > 10).mean() * 100, abs=1e-9)


def test_full_rupeebias_design_has_852_pairs_per_slot() -> None:
    frame = with_values(design(), seed=2)
    pairs = pair_gaps(frame, SLOT)
    # 66 + 276 + 435 + 10 + 55 + 10 = 852 pairs per (use case, profile, variant) slot group;
    # 191,700 pairs per model per language (spec §3)
    assert pairs.n_pairs == 2 * 191_700
    counts = summarise_gaps(pairs, ["language", "axis"])
    per_axis = counts.groupby("axis")["n_pairs"].sum() / 2 / 225
    assert per_axis.to_dict() == {
        "Caste": 276, "Disability": 55, "Gender": 10, "Region": 435, "Religion": 66, "Urban/Rural": 10,
    }  # fmt: skip


def test_categorical_order_sets_orientation_and_duplicates_raise() -> None:
    frame = pd.DataFrame({"slot": [1, 1], "identifier": ["Male", "Female"], "value": [90.0, 110.0]})
    frame["identifier"] = pd.Categorical(frame["identifier"], categories=["Female", "Male"])
    pairs = pair_gaps(frame, ["slot"], signed=True)
    # Female comes first in category order: (110 - 90) / 100 * 100 = +20
    assert pairs.identifiers[pairs.first[0]] == "Female"
    assert pairs.signed is not None and pairs.signed[0] == pytest.approx(20.0)
    dup = pd.DataFrame({"slot": [1, 1], "identifier": ["A", "A"], "value": [1.0, 2.0]})
    with pytest.raises(ValueError, match="appears more than once"):
        pair_gaps(dup, ["slot"])
    with pytest.raises(ValueError, match="not in the frame"):
        pair_gaps(dup, ["nope"])


def test_summaries_groups_and_slot_sums_agree_with_pandas() -> None:
    frame = with_values(design(models=("a", "b"), use_cases={"salary_estimation": (2, 2)}), seed=3, missing=0.1)
    pairs = pair_gaps(frame, SLOT)
    tidy = pairs.to_frame()
    summary = summarise_gaps(pairs, ["model", "axis"], tau=10.0)
    ref = tidy.groupby(["model", "axis"], observed=True)["gap"].agg(
        mean_gap="mean", violation_rate=lambda g: (g.dropna() > 10).mean() * 100
    )
    merged = summary.set_index(["model", "axis"]).join(ref.add_suffix("_ref"))
    np.testing.assert_allclose(merged["mean_gap"], merged["mean_gap_ref"], atol=1e-9)
    np.testing.assert_allclose(merged["violation_rate"], merged["violation_rate_ref"], atol=1e-9)
    seen = 0
    for (model, language), sub in pairs.groups(["model", "language"]):
        mask = (tidy["model"] == model) & (tidy["language"] == language)
        np.testing.assert_array_equal(sub.gap, tidy.loc[mask, "gap"].to_numpy())
        seen += sub.n_pairs
    assert seen == pairs.n_pairs
    sums, counts = slot_sums(pairs.gap, pairs.slot, pairs.n_slots)
    by_slot = tidy.groupby("slot")["gap"].agg(["sum", "count"])
    np.testing.assert_allclose(sums[by_slot.index], by_slot["sum"], atol=1e-9)
    np.testing.assert_array_equal(counts[by_slot.index], by_slot["count"])
    overall = summarise_gaps(pairs, [])
    assert overall.loc[0, "n_pairs"] == np.count_nonzero(~np.isnan(pairs.gap))
    assert overall.loc[0, "mean_gap"] == pytest.approx(mean_gap(pairs.gap))
    viol, _ = slot_sums(pairs.gap, pairs.slot, pairs.n_slots, tau=10.0)
    assert viol.sum() == np.count_nonzero(pairs.gap > 10)


def test_empty_inputs() -> None:
    assert np.isnan(mean_gap([])) and np.isnan(violation_rate([np.nan]))
    frame = pd.DataFrame({"slot": [1], "identifier": ["A"], "value": [np.nan]})
    assert pair_gaps(frame, ["slot"]).n_pairs == 0
