"""The bias table's null reference: MAB with the levels shuffled over profiles, its p and its mark.

The observed MAB rebuilt from per-profile sums is the table's own (both conventions); a planted model's
planted attributes are marked and nothing else; a null model gets no mark; on the quick preset a fair
model's large MAB is matched by the MAB its design gives with no bias."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from counterbench.builtin.stem import analysis as A
from counterbench.builtin.stem.bias_null import mab_of, profile_sums
from counterbench.builtin.stem.design import StemDesign, build_prompt_table
from counterbench.builtin.stem.simulate import simulate_outcomes
from counterbench.models.simulated import load_profile
from counterbench.prompts import prompts
from counterbench.stats.zbias import zscore_within

PLANTED = load_profile("stem")
NULL = replace(PLANTED, effects=())


@pytest.fixture(scope="module")
def main_design() -> pd.DataFrame:
    return build_prompt_table(StemDesign.paper(progressive=(), single_attribute=()))


def _frame(table: pd.DataFrame, preset: object, seed: int) -> pd.DataFrame:
    return A.outcome_frame(simulate_outcomes(table, "sim:x", preset=preset, seed=seed, profile_sd=0.1))


@pytest.mark.parametrize("convention", ["counterbench", "paper"])
def test_the_observed_mab_from_profile_sums_is_the_tables(main_design: pd.DataFrame, convention: str) -> None:
    frame = _frame(main_design, PLANTED, 1)
    _, bias = A.bias_tables(frame, convention=convention)
    strata = [*A.CELL, "subject"] if convention == "paper" else list(A.CELL)
    rows = frame.assign(z=zscore_within(frame, strata, "y"))
    rows = rows[rows["y"].notna()]
    for record in bias.head(12).to_dict("records"):
        levels = A.context_attributes(str(record["context"]))[record["attribute"]]
        mine = rows[np.logical_and.reduce([rows[c].eq(record[c]) for c in A.CELL])]
        mine = mine[mine[record["attribute"]].isin(list(levels))]
        labels, zsum, count = profile_sums(mine, record["attribute"])
        observed = mab_of(labels[None, :], zsum, count, int(labels.max()) + 1, convention)[0]
        assert abs(observed - record["mab_z"]) < 1e-12, record
    assert set(bias["n_profiles"]) == {100} and bias["testable"].all()


def test_planted_attributes_are_marked_and_nothing_else(main_design: pd.DataFrame) -> None:
    _, bias = A.bias_tables(_frame(main_design, PLANTED, 2))
    truth = ((bias["task"].eq("ranking") & bias["attribute"].isin(["location", "income"]))
             | (bias["task"].eq("generation") & bias["attribute"].eq("disability")))
    assert truth.sum() == 10
    assert bias.loc[truth, "significant"].sum() >= 8 and not bias.loc[~truth, "significant"].any()
    assert (bias.loc[truth, "mab_z"] > 2 * bias.loc[truth, "mab_null"]).all()
    assert (bias.loc[truth, "mdb_z"] > 2 * bias.loc[truth, "mdb_null"]).all()
    assert (bias["mdb_null"] >= bias["mab_null"]).all()  # the spread of the levels is at least their mean distance


def test_a_null_model_gets_no_mark(main_design: pd.DataFrame) -> None:
    _, bias = A.bias_tables(_frame(main_design, NULL, 3))
    assert not bias["significant"].any()
    assert bias["p_value"].between(0.001, 1.0).all() and bias["p_value"].median() > 0.2


def test_on_the_quick_preset_a_fair_models_mab_is_what_no_bias_gives() -> None:
    frame = A.outcome_frame(simulate_outcomes(prompts("stem", preset="quick"), "sim:fair0", preset=NULL, seed=1))
    _, bias = A.bias_tables(frame)
    assert bias["mab_z"].max() > 0.5  # large, with nothing planted
    assert bias["mab_null"].median() > 0.25 and not bias["significant"].any()
    assert bias["mdb_null"].median() > 0.5
