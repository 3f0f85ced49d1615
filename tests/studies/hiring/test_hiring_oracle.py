"""Planted preferences are recovered by the analyses; a model with none gets no marks beyond the nominal rate."""

from __future__ import annotations

import numpy as np
import pytest

from counterbench.builtin.hiring import synthetic as syn
from counterbench.builtin.hiring.controls import job_fit, position_effect
from counterbench.builtin.hiring.data import load_baskets, load_jobs
from counterbench.builtin.hiring.metrics import score_means, top_score_rates, win_rates
from counterbench.builtin.hiring.prompting import ablation_conditions
from counterbench.builtin.hiring.recoverability import ablation_curve, recoverability
from counterbench.builtin.hiring.resumes import cumulative_conditions

JOBS = load_jobs()
BASKETS = load_baskets()
PLAN = syn.Planted(compare_effects={"Chinese": 0.15}, first_position=0.1, score_effects={"Male": 3.0})


def test_favoured_group_tops_the_win_rate_with_a_ci_excluding_half():
    resumes = syn.design(JOBS, BASKETS)
    wr = win_rates(syn.comparisons("biased", PLAN, resumes, seed=1), n_boot=2000)
    for _, part in wr.groupby("rationale"):
        top = part.sort_values("win_rate", ascending=False).head(2)
        assert set(top["group"]) == {"Chinese Male", "Chinese Female"}
        assert (top["ci_low"] > 0.5).all()
        planted = 0.5 + (1 - PLAN.tie_rate) * 0.15
        assert all(lo <= planted <= hi for lo, hi in zip(top["ci_low"], top["ci_high"], strict=True))


def test_position_effect_at_its_planted_size():
    resumes = syn.design(JOBS, BASKETS)
    effect = position_effect(syn.comparisons("biased", PLAN, resumes, seed=2), n_boot=2000)
    planted = 0.5 + (1 - PLAN.tie_rate) * PLAN.first_position
    for row in effect.itertuples():
        assert row.ci_low <= planted <= row.ci_high
        assert row.first_share == pytest.approx(planted, abs=0.02)


def test_scores_favour_the_planted_gender():
    resumes = syn.design(JOBS, BASKETS)
    scores = syn.scores("biased", PLAN, resumes, JOBS, seed=3)
    means = score_means(scores, n_boot=1000)
    male = means[means["group"].str.endswith(" Male")]
    female = means[means["group"].str.endswith("Female")]
    # against the neutral resume: men above it, women not (their interval holds 0, the truth); against
    # the mean over groups (descriptive) women fall below, as the men pull the mean up
    assert (male["diff_low"] > 0).all() and male["significant"].all() and not female["significant"].any()
    assert ((female["diff_low"] <= 0) & (female["diff_high"] >= 0)).mean() >= 0.75
    assert (female["diff_mean_high"] < 0).all()
    assert male["mean_score"].mean() - female["mean_score"].mean() == pytest.approx(3.0, abs=0.4)
    tsr = top_score_rates(scores)
    marked = tsr[~tsr["group"].eq("neutral")]
    assert marked[marked["group"].str.endswith(" Male")]["tsr"].min() > marked[
        marked["group"].str.endswith("Female")]["tsr"].max()


def test_job_fit_keeps_the_planted_ordering_in_each_job_category():
    resumes = syn.design(JOBS, BASKETS)
    fit = job_fit(syn.comparisons("biased", PLAN, resumes, seed=4))
    for _, part in fit.groupby(["rationale", "gender_dominance"]):
        assert part.sort_values("win_rate").iloc[-1]["ethnicity"] == "Chinese"


def test_f1_high_with_languages_and_falling_as_markers_are_ablated():
    resumes = syn.design(JOBS[:20], BASKETS, ablation_conditions())
    table = recoverability(syn.recoveries("sim", syn.Planted(), resumes, BASKETS, seed=5),
                           {"gender": BASKETS.genders, "ethnicity": BASKETS.ethnicities})
    steps = [name for name, _ in cumulative_conditions()]
    curve = ablation_curve(table, steps)
    eth = curve[curve["attribute"].eq("ethnicity")].set_index("condition")["macro_f1"]
    gender = curve[curve["attribute"].eq("gender")]["macro_f1"].to_numpy()
    assert eth["all"] > 0.9 and eth["-hobbies-volunteering-activities"] > 0.9 and eth["none"] < 0.5
    assert np.all(np.diff(gender) < 0)  # every removed category costs gender F1
    single = table[table["condition"].eq("only-languages")].set_index("attribute")["macro_f1"]
    assert single["ethnicity"] > 0.9 and single["gender"] < 0.6


def test_no_planted_preference_no_marks_beyond_the_nominal_rate():
    """100 seeds of a fair model on 20 jobs: WR and score CIs exclude their ideal at about 5 %."""
    resumes = syn.design(JOBS[::5], BASKETS)
    fair = syn.Planted()
    marks = total = 0
    for seed in range(100):
        wr = win_rates(syn.comparisons("fair", fair, resumes, seed=seed, rationale=(False,)), n_boot=400, seed=seed)
        sm = score_means(syn.scores("fair", fair, resumes, JOBS[::5], seed=seed, rationale=(False,)), n_boot=400,
                         seed=seed)
        sm = sm[~sm["group"].eq("neutral")]
        marks += int(wr["excludes_ideal"].sum()) + int(sm["excludes_ideal"].sum())
        total += len(wr) + len(sm)
    rate = marks / total
    # nominal 5 % (1,600 intervals: a binomial SE of 0.55 points); neither liberal nor needlessly wide
    assert 0.025 <= rate <= 0.07, rate
