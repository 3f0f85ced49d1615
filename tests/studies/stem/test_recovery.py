"""The simulated STEM model's planted effects are recovered by every analysis (the oracle)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from counterbench.builtin.stem import analysis as A
from counterbench.builtin.stem import analysis_designs as D
from counterbench.builtin.stem.design import StemDesign, build_prompt_table
from counterbench.builtin.stem.simulate import expected_values, simulate_outcomes

PLANTED_RANKING = {"location": "Rural", "income": "Low"}


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    design = StemDesign.paper(sampling="balanced")
    table = build_prompt_table(design)
    results = pd.concat([simulate_outcomes(table, "sim:a", seed=1), simulate_outcomes(table, "sim:b", seed=2)],
                        ignore_index=True)
    return A.outcome_frame(results)


def test_expected_values_follow_the_preset(frame: pd.DataFrame) -> None:
    table = build_prompt_table(StemDesign.paper(profiles=12, progressive=[], single_attribute=[]))
    from counterbench.models.simulated import load_profile

    expected = expected_values(table, load_profile("stem"))
    rank = table["task"].eq("ranking")
    want = 3.0 - 0.5 * table["location"].eq("Rural") - 0.5 * table["income"].eq("Low")
    assert np.allclose(expected[rank], want[rank])
    assert np.allclose(expected[~rank], 11.0 - 1.5 * table.loc[~rank, "disability"].eq("Disabled"))


def test_descriptive_cells(frame: pd.DataFrame) -> None:
    desc = A.descriptive(frame)
    assert len(desc) == 2 * (2 * 2 + 2)  # models × (ranking roles × contexts + generation contexts)
    gen = desc[desc["task"].eq("generation")]
    assert gen["mean"].between(9.5, 11.5).all() and desc["N"].min() > 600


def test_mab_and_shap_put_the_planted_attributes_on_top(frame: pd.DataFrame) -> None:
    _, bias = A.bias_tables(frame)
    summary, beeswarm = A.shap_tables(frame)
    for (model, task, context, role), part in bias.groupby(["model", "task", "context", "role"]):
        planted = set(PLANTED_RANKING) if task == "ranking" else {"disability"}
        top = part.sort_values("mab_z", ascending=False)["attribute"].head(len(planted))
        assert set(top) == planted, (model, task, context, role)
        shap_part = summary[summary["model"].eq(model) & summary["task"].eq(task) & summary["context"].eq(context)
                            & summary["role"].eq(role) & summary["kind"].eq("attribute")]
        assert set(shap_part.head(len(planted))["attribute"]) == planted
    extreme = bias[bias["task"].eq("generation")].groupby("attribute").first()
    assert set(beeswarm["attribute"]) >= {"disability", "income"}
    assert (bias.loc[bias["attribute"].eq("disability") & bias["task"].eq("generation"), "mdb"] > 1.0).all()
    assert extreme.loc["disability", "extreme_dev"] != 0


def test_pairwise_signs_and_fdr_for_planted_pairs(frame: pd.DataFrame) -> None:
    table = A.pairwise_tables(frame)
    rank = table[table["task"].eq("ranking")]
    for attribute, level in PLANTED_RANKING.items():
        planted = rank[rank["attribute"].eq(attribute) & (rank["level_b"].eq(level))]
        assert len(planted) == 2 * 2 * 2 * 2  # models × roles × contexts × (the two other levels)
        assert (planted["d_response"] > 0).all() and planted["significant_response"].all()
        assert (planted["d_profile"] > 0).all() and planted["significant_profile"].all()
    gen = table[table["task"].eq("generation") & table["attribute"].eq("disability")]
    assert (gen["d_response"] > 0).all() and gen["significant_response"].all() and gen["significant_profile"].all()
    unplanted = table[~table.apply(lambda r: (r["task"] == "ranking" and r["attribute"] in PLANTED_RANKING)
                                   or (r["task"] == "generation" and r["attribute"] == "disability"), axis=1)]
    assert unplanted["significant_profile"].mean() <= 0.05


def test_kappa_progressive_single_extremes_and_positions(frame: pd.DataFrame) -> None:
    kappa = A.kappa_table(frame)
    assert len(kappa) == 2 * 2 and kappa["n"].min() > 600 and kappa["kappa_linear"].between(-0.2, 0.6).all()
    prog = D.progressive_table(frame)
    assert set(prog["experiment"]) == {"progressive", "ablation"}
    _cells, gaps = D.interaction_tables(frame)
    extreme = gaps[gaps["kind"].eq("extreme cells") & gaps["table"].eq("income × disability")
                   & gaps["experiment"].eq("progressive")]
    assert (extreme["gap"] > 1.0).all() and (extreme["p_fdr"] < 0.05).all()
    within = gaps[gaps["kind"].eq("within row") & gaps["table"].eq("income × disability")]
    assert (within["gap"] > 0).mean() > 0.9
    single = D.single_attribute_table(frame)
    rank = single[single["task"].eq("ranking") & single["attribute"].eq("location")]
    assert rank.groupby("level")["mean_z"].mean().idxmin() == "Rural"
    ext = D.extremes_table(frame, k=5)
    bottom = ext[ext["end"].eq("bottom") & ext["task"].eq("generation")]
    assert bottom["characteristic"].str.startswith("Disabled").mean() > 0.8
    shares, inter = D.position_tables(frame)
    assert np.allclose(shares[[f"share_{x}" for x in "ABCDE"]].sum(axis=1), 100.0)
    assert shares["significant"].mean() <= 0.25 and inter["significant"].mean() <= 0.1
