"""STEM profiles: contexts, seeded stratified sampling (balanced / paper), characteristic strings, designs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from counterbench.builtin.stem.profiles import (
    characteristic,
    get_context,
    marginal_counts,
    progressive_profiles,
    sample_profiles,
    single_attribute_profiles,
)
from counterbench.errors import UserError

# Table 2 of the paper, level by level in contexts.yaml's order
PAPER_TABLE_2 = {
    "india": {"caste": [29, 25, 26, 20], "college_tier": [26, 26, 24, 24], "location": [39, 24, 37],
              "medium": [63, 37], "board": [46, 22, 32], "gender": [41, 33, 26], "income": [38, 25, 37],
              "disability": [51, 49]},
    "usa": {"race": [14, 16, 22, 19, 12, 17], "college_tier": [66, 8, 9, 11, 6], "location": [8, 9, 83],
            "school_type": [83, 9, 8], "gender": [58, 33, 9], "income": [40, 35, 25], "disability": [37, 63]},
}


def test_contexts_have_the_papers_attributes_and_grid_sizes() -> None:
    india, usa = get_context("india"), get_context("usa")
    assert (len(india.attributes), india.n_combinations) == (8, 5184)
    assert (len(usa.attributes), usa.n_combinations) == (7, 4860)
    with pytest.raises(UserError, match="unknown STEM context"):
        get_context("uk")


@pytest.mark.parametrize("context", ["india", "usa"])
@pytest.mark.parametrize("seed", [0, 7])
def test_paper_mode_reproduces_table_2_exactly(context: str, seed: int) -> None:
    profiles = sample_profiles(context, 100, "paper", seed)
    counts = marginal_counts(profiles, context)
    got = {a: list(part["count"]) for a, part in counts.groupby("attribute", sort=False)}
    assert got == PAPER_TABLE_2[context]
    attrs = list(get_context(context).names)
    assert not profiles.duplicated(subset=attrs).any()
    assert profiles["profile_id"].is_unique


@pytest.mark.parametrize("context", ["india", "usa"])
def test_balanced_mode_is_near_equal_and_every_level_present(context: str) -> None:
    for n in (12, 100):
        counts = marginal_counts(sample_profiles(context, n, "balanced", 3), context)
        spread = counts.groupby("attribute")["count"].agg(lambda c: c.max() - c.min())
        assert (spread <= 1).all() and (counts["count"] > 0).all()


def test_sampling_is_seeded_and_attributes_are_nearly_independent() -> None:
    a, b = sample_profiles("india", 100, "balanced", 5), sample_profiles("india", 100, "balanced", 5)
    pd.testing.assert_frame_equal(a, b)
    assert not sample_profiles("india", 100, "balanced", 6).equals(a)
    # near-orthogonal: every two-way table within 2 of its expected count (independent permutations
    # alone leave deviations of 4-6 counts, which confound one attribute's effect with another's)
    names = list(get_context("india").names)
    for i, x in enumerate(names):
        for y in names[i + 1:]:
            table = pd.crosstab(a[x], a[y]).to_numpy()
            expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / 100
            assert np.abs(table - expected).max() <= 2.0, (x, y)


def test_paper_mode_rescales_other_sizes_and_keeps_levels() -> None:
    counts = marginal_counts(sample_profiles("usa", 30, "paper", 0), "usa")
    assert (counts["count"] > 0).all()
    assert counts.groupby("attribute")["count"].sum().eq(30).all()
    location = counts[counts["attribute"].eq("location")].set_index("level")["count"]
    assert location["Rural"] > location["Urban"] + location["Suburban"]


def test_characteristic_strings_follow_appendix_b_examples() -> None:
    india = {"caste": "General", "college_tier": "IIT", "location": "Metro", "medium": "English", "board": "CBSE",
             "gender": "Male", "income": "Low", "disability": "Able-bodied"}
    assert characteristic(get_context("india"), india) == (
        "Able-bodied General from IIT from Metro area English-medium educated CBSE board Male low-income")
    usa = {"race": "Asian", "college_tier": "Ivy League", "location": "Rural", "school_type": "Public",
           "gender": "Male", "income": "Low", "disability": "Disabled"}
    assert characteristic(get_context("usa"), usa) == (
        "Disabled Asian from Ivy League from Rural area Public school Male low-income")
    assert characteristic(get_context("india"), {"income": "High", "gender": ""}) == "high-income"


def test_user_mistakes_are_one_line_errors() -> None:
    with pytest.raises(UserError, match="at least 4"):
        sample_profiles("india", 3)
    with pytest.raises(UserError, match="sampling mode"):
        sample_profiles("india", 10, "stratified")
    with pytest.raises(UserError, match="only 4860"):
        sample_profiles("usa", 5000)


def test_progressive_and_single_attribute_designs() -> None:
    prog = progressive_profiles("india")
    assert prog.groupby("step").size().tolist() == [3, 9, 36, 144, 288]
    step2 = prog[prog["step"].eq(2)].iloc[0]
    assert step2["characteristic"] == "Male high-income" and step2["caste"] == ""
    ablation = progressive_profiles("india", {"college_tier": "IIT"})
    assert ablation.groupby("step").size().tolist() == [3, 9, 36, 72]
    assert ablation["college_tier"].eq("IIT").all() and ablation["characteristic"].str.contains("from IIT").all()
    single = single_attribute_profiles("usa")
    assert len(single) == 1 + 6 + 5 + 3 + 3 + 3 + 3 + 2
    assert single.iloc[0]["characteristic"] == ""
    row = single[single["profile_id"].eq("US-1-income-Low")].iloc[0]
    assert (row["characteristic"], row["varied"]) == ("low-income", "income")
