"""``--repeats``: the amount tables average a prompt's repeats first (as if each prompt had been answered once with
that mean), count them neither as duplicates nor as generation configs; a run without repeats is untouched."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from counterbench.analyses.prepare import prepare_results
from counterbench.analyses.profiles import get_profile
from counterbench.analyses.study import analyze_study
from counterbench.prompts import prompts
from counterbench.run.results import load_results
from counterbench.run.runner import run_prompts


@pytest.fixture(scope="module")
def repeated(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    store = tmp_path_factory.mktemp("rep") / "cb.db"
    table = prompts("rupeebias", preset="quick", use_case=["salary_estimation", "service_pricing_vendor"])
    run_prompts(table, ["sim:biased"], store=store, repeats=3, temperature=0.7)
    return load_results(store)


def _collapsed(results: pd.DataFrame) -> pd.DataFrame:
    """One row per prompt: the mean of its ok repeats' values (its first row where none is ok)."""
    ok = results[results["status"].eq("ok")]
    means = ok.groupby("prompt_id")["value"].mean()
    first = results.sort_values("repeat", kind="stable").drop_duplicates("prompt_id").sort_index().set_index(
        "prompt_id")
    first.loc[means.index, "value"] = means
    first.loc[means.index, "status"] = "ok"
    return first.reset_index().drop(columns=["repeat"])


def test_amount_tables_average_the_repeats_first(repeated: pd.DataFrame) -> None:
    assert sorted(repeated["repeat"].unique()) == [0, 1, 2]
    prepared = prepare_results(repeated, get_profile("default"))
    assert prepared.counts["n_duplicates"] == 0 and prepared.configs_per_model == {"sim:biased": 1}
    assert prepared.counts["n_values"] == repeated["prompt_id"].nunique() - (
        ~repeated.groupby("prompt_id")["status"].agg(lambda s: s.eq("ok").any())).sum()
    with_repeats = analyze_study(repeated, "rupeebias", bootstrap=200)
    once = analyze_study(_collapsed(repeated), "rupeebias", bootstrap=200)
    for name in ("cpg", "cpg_overall", "outcome_gaps", "outcome_levels"):
        a, b = with_repeats.tables[name], once.tables[name]
        assert len(a) == len(b) and len(a) > 0, name
        exact = [c for c in a.columns if c in ("mean", "n", "n_slots", "reference_mean", "comparison_mean",
                                                 "difference", "gap", "mean_reference", "mean_comparison",
                                                 "sign_consistency", "n_agree")]
        assert len(exact) >= 3, (name, exact)
        assert np.allclose(a[exact].to_numpy(float), b[exact].to_numpy(float), equal_nan=True), name
        # intervals and p: the same up to which bootstrap draw lands on which slot (a prompt's row stands where its
        # lowest usable repeat does)
        for low in [c for c in a.columns if c.startswith("ci_")]:
            assert np.allclose(a[low].to_numpy(float), b[low].to_numpy(float), rtol=0.05, atol=0.5,
                               equal_nan=True), (name, low)
    assert "noise_decomposition" in with_repeats.tables and "noise_decomposition" not in once.tables
    assert with_repeats.summary["models"]["sim:biased"]["generation_configs"] == 1


def test_the_release_profile_averages_the_first_answer_of_each_repeat(repeated: pd.DataFrame) -> None:
    prepared = prepare_results(repeated, get_profile("rupeebias-v1"))
    ok = repeated[repeated["status"].eq("ok") & (repeated["value"] > 0)]
    means = ok.groupby("identifier", observed=True)["value"].mean()
    got = prepared.values.groupby("identifier", observed=True)["value"].mean()
    assert len(prepared.values) == ok["prompt_id"].nunique()
    assert np.allclose(got.loc[means.index], ok.groupby(["identifier", "prompt_id"], observed=True)["value"].mean()
                       .groupby("identifier", observed=True).mean().loc[means.index])


def test_without_repeats_nothing_changes(tmp_path: Path) -> None:
    table = prompts("rupeebias", preset="quick", use_case=["salary_estimation"])
    run_prompts(table, ["sim:biased"], store=tmp_path / "cb.db")
    results = load_results(tmp_path / "cb.db")
    assert "repeat" not in results.columns
    assert "noise_decomposition" not in analyze_study(results, "rupeebias", bootstrap=50).tables
