"""SHAP is never silently meaningless: unidentified or constant cells are refused with a reason, no chart."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from counterbench.builtin.stem import analysis as A
from counterbench.builtin.stem.design import StemDesign, build_prompt_table
from counterbench.builtin.stem.results import analyze_results
from counterbench.builtin.stem.simulate import simulate_outcomes
from counterbench.models.simulated import load_profile
from counterbench.prompts import prompts
from counterbench.stats.shap_linear import one_hot


@pytest.fixture(scope="module")
def quick() -> pd.DataFrame:
    return A.outcome_frame(simulate_outcomes(prompts("stem", preset="quick"), "sim:stem", seed=1))


def test_the_quick_preset_is_refused_for_its_rank(quick: pd.DataFrame) -> None:
    refused = A.shap_refusals(quick)
    assert len(refused) == 6  # every cell: 2 contexts × (2 ranking roles + generation)
    assert (refused["rank"] <= 8).all() and refused["parameters"].isin([17, 19]).all()
    assert refused["reason"].str.contains("not identified: the one-hot design has rank").all()
    summary, points = A.shap_tables(quick)
    assert summary.empty and points.empty


def test_the_refusal_is_warranted_two_exact_fits_disagree(quick: pd.DataFrame) -> None:
    part = quick[quick["task"].eq("generation") & quick["context"].eq("india") & quick["y"].notna()]
    x, attribute_of = one_hot(part, list(A.context_attributes("india")))
    design = np.column_stack([np.ones(len(x)), x.to_numpy()])
    y = part["y"].to_numpy()
    first = np.linalg.pinv(design) @ y
    null = np.linalg.svd(design)[2][-1]  # a direction the data cannot see
    assert np.allclose(design @ null, 0, atol=1e-9)
    second = first + 3.0 * null
    assert np.allclose(design @ first, design @ second)  # both fit the data exactly as well
    centred = x.to_numpy() - x.to_numpy().mean(axis=0)
    shap = [pd.DataFrame(centred * c[1:], columns=x.columns).T.groupby(pd.Series(attribute_of)).sum().T.abs().mean()
            for c in (first, second)]
    assert float((shap[0] - shap[1]).abs().max()) > 0.1


def test_a_constant_outcome_is_refused_and_a_full_design_is_not() -> None:
    table = build_prompt_table(StemDesign.paper(sampling="balanced", progressive=(), single_attribute=(),
                                                tasks=("generation",)))
    constant = replace(load_profile("stem"), noise_sd=0.0, effects=(), refusal_rate=0.0, malformed_rate=0.0)
    frame = A.outcome_frame(simulate_outcomes(table, "sim:flat", preset=constant))
    refused = A.shap_refusals(frame)
    assert len(refused) == 2 and refused["reason"].str.contains("does not vary").all()
    planted = A.outcome_frame(simulate_outcomes(table, "sim:stem", seed=2))
    assert A.shap_refusals(planted).empty
    assert set(A.shap_tables(planted)[0]["context"]) == {"india", "usa"}


def test_the_report_says_why_and_draws_no_chart(quick: pd.DataFrame) -> None:
    from counterbench.report.api import render_report
    from counterbench.report.context import ReportInput

    tables, summary = analyze_results(simulate_outcomes(prompts("stem", preset="quick"), "sim:stem", seed=1))
    assert not tables["stem_shap_refused"].empty and tables["stem_shap_points"].empty
    html, _ = render_report(ReportInput(tables, {**summary, "study": "stem"}))
    assert "Why no attribution" in html and "not identified: the one-hot design has rank" in html
    assert "SHAP values per response" not in html
    # nor is MAB drawn on this design without saying it is mostly noise
    start = html.index('<section id="stem_bias"')
    bias = html[start:html.index("</section>", start)]
    assert "attribute levels rest on fewer than 10 answers" in bias and "smoke test, not a finding" in bias
    assert "MAB with no bias (z)" in bias and "MDB with no bias (z)" in bias and "shuffled over whole profiles" in bias
