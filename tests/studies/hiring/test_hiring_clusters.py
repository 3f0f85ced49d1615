"""Occupations are the independent unit: near-duplicate jobs add no evidence to an interval or a mark."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from counterbench.builtin.hiring import metrics, noise_floor
from counterbench.builtin.hiring import synthetic as syn
from counterbench.builtin.hiring.data import load_baskets, load_jobs
from counterbench.builtin.hiring.plan import select_jobs


@pytest.fixture(scope="module")
def answers() -> tuple[pd.DataFrame, pd.DataFrame]:
    jobs = select_jobs(load_jobs(), 20)  # one job of each of the 20 occupations
    assert len({j.occupation for j in jobs}) == 20
    resumes = syn.design(jobs, load_baskets())
    plan = syn.Planted(compare_effects={"Malay": 0.06}, score_effects={"Indian": 1.5}, compare_job_sd=0.05)
    return (syn.comparisons("m", plan, resumes, seed=2, rationale=(False,)),
            syn.scores("m", plan, resumes, jobs, seed=2, rationale=(False,)))


def _copies(frame: pd.DataFrame, n: int) -> pd.DataFrame:
    """Each job ``n`` times under new job ids, in its occupation: answered exactly alike."""
    return pd.concat([frame.assign(job_id=frame["job_id"] + f"#{k}") for k in range(n)], ignore_index=True)


def test_copies_of_a_job_leave_intervals_and_marks_unchanged(answers):
    comp, sc = answers
    for table, frame, copied in ((metrics.win_rates, comp, _copies(comp, 5)),
                                 (metrics.score_means, sc, _copies(sc, 5))):
        once, five = table(frame, n_boot=400, seed=1), table(copied, n_boot=400, seed=1)
        assert (five["n_jobs"] == 5 * once["n_jobs"]).all() and (five["n_clusters"] == once["n_clusters"]).all()
        for column in ("ci_low", "ci_high", "diff_low", "diff_high", "p_value") if "ci_low" in once else (
                "diff", "diff_low", "diff_high", "p_value"):
            np.testing.assert_allclose(five[column], once[column], atol=1e-12, equal_nan=True, err_msg=column)
        # with every job its own unit, the copies would count as fivefold evidence
        by_job = table(copied.drop(columns="occupation"), n_boot=400, seed=1)
        marked = ~once["group"].eq("neutral")
        assert (by_job.loc[marked, "p_value"] < once.loc[marked, "p_value"]).mean() > 0.7
        assert (by_job["n_clusters"] == 5 * once["n_clusters"]).all()


def test_the_noise_floor_resamples_and_swaps_occupations(answers):
    comp, sc = answers
    once = noise_floor.win_rate_floor(comp, n_boot=400, seed=1)
    five = noise_floor.win_rate_floor(_copies(comp, 5), n_boot=400, seed=1)
    pd.testing.assert_frame_equal(once, five, atol=1e-12)
    tsr_once, groups_once = noise_floor.top_score_floor(sc, n_boot=400, seed=1)
    tsr_five, groups_five = noise_floor.top_score_floor(_copies(sc, 5), n_boot=400, seed=1)
    # the copies share their occupation's shuffle, so the permutation null is the same draw for draw
    pd.testing.assert_frame_equal(tsr_once, tsr_five, atol=1e-12)
    pd.testing.assert_frame_equal(groups_once, groups_five, atol=1e-12)


def test_five_occupations_are_too_few_to_test_however_many_jobs():
    jobs = [j for j in load_jobs() if j.occupation in {"Civil Engineer", "Registered Nurse", "Accountant",
                                                       "Data Analyst", "Pharmacist"}]
    resumes = syn.design(jobs, load_baskets())
    comp = syn.comparisons("m", syn.Planted(compare_effects={"Chinese": 0.3}), resumes, seed=0, rationale=(False,))
    wr = metrics.win_rates(comp, n_boot=200, seed=0)
    assert set(wr["n_jobs"]) == {25} and set(wr["n_clusters"]) == {5}
    assert not wr["testable"].any() and not wr["significant"].any()
