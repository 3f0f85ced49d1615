"""Explanations cut at the token limit are scored on the text received (the paper's rule) by default.

The oracle: a simulated model writes longer explanations for Low-income students (planted: 1.6× the
tokens, and harder prose runs longer), so theirs hit a 512-token limit far more often; income has no
effect on the grade level. Scored as received, the income gap equals the unlimited-budget gap within
its interval; dropping the cut ones removes Low-income students' hardest texts and shows a gap that
is not there.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from counterbench.builtin.stem import analysis as A
from counterbench.builtin.stem.design import StemDesign, build_prompt_table
from counterbench.builtin.stem.results import analyze_results
from counterbench.builtin.stem.simulate import cut_at_limit, simulate_outcomes
from counterbench.builtin.stem.study import StemStudy
from counterbench.errors import UserError

LONGER = {"income": ["Low"]}


@pytest.fixture(scope="module")
def runs() -> tuple[pd.DataFrame, pd.DataFrame]:
    table = build_prompt_table(StemDesign.paper(contexts=("india",), tasks=("generation",), progressive=(),
                                                single_attribute=()))
    unlimited = simulate_outcomes(table, "sim:stem", seed=3)
    return unlimited, cut_at_limit(unlimited, 512, longer=LONGER, seed=3)


def income_gap(frame: pd.DataFrame) -> tuple[float, float]:
    """High − Low income MGL over profile means, with its Welch 95% half-width."""
    profiles = A.profile_means(frame)
    a = profiles.loc[profiles["income"].eq("High"), "y"].to_numpy()
    b = profiles.loc[profiles["income"].eq("Low"), "y"].to_numpy()
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    return float(a.mean() - b.mean()), float(stats.t.ppf(0.975, df) * np.sqrt(va + vb))


def test_the_planted_group_is_cut_more_often(runs: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    _, limited = runs
    cut = limited["status"].eq("truncated")
    low = limited["income"].eq("Low")
    assert cut[low].mean() > 0.6 and cut[~low].mean() < 0.3
    assert limited.loc[cut, "value"].isna().all() and limited.loc[cut, "response"].str.len().gt(0).all()


def test_scored_as_received_the_gap_matches_the_unlimited_budget(runs: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    unlimited, limited = runs
    truth, half = income_gap(A.outcome_frame(unlimited))
    scored = A.outcome_frame(limited)  # the default: truncated = "score"
    assert scored["truncated"].sum() == limited["status"].eq("truncated").sum()
    gap, _ = income_gap(scored)
    assert abs(gap - truth) < half
    dropped, _ = income_gap(A.outcome_frame(limited, truncated="drop"))
    assert dropped - truth > 2 * half  # dropping the cut explanations shows a bias that is not there


def test_tables_show_the_share_per_level_and_the_gaps_both_ways(runs: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    _, limited = runs
    tables, summary = analyze_results(limited)
    health = tables["parse_health"]
    assert int(health.loc[health["use_case"].eq("generation"), "n_truncated"].sum()) == \
        int(limited["status"].eq("truncated").sum())
    shares = tables["stem_truncation"].set_index(["attribute", "level"])["share"]
    assert shares["income", "Low"] > 2 * shares["income", "High"]
    sens = tables["stem_truncation_sensitivity"].set_index("attribute")
    assert sens.loc["income", "mdb_dropped"] > sens.loc["income", "mdb_scored"] + 0.5
    assert summary["truncated_explanations"] == "score" and "text received" in summary["methods"]
    dropped_tables, dropped_summary = analyze_results(limited, truncated="drop")
    assert "left out" in dropped_summary["methods"]
    n_scored = tables["stem_descriptive"]["N"].sum()
    assert n_scored - dropped_tables["stem_descriptive"]["N"].sum() == limited["status"].eq("truncated").sum()


def test_without_cut_explanations_the_tables_say_why() -> None:
    table = build_prompt_table(StemDesign.paper(contexts=("india",), profiles=12, tasks=("generation",),
                                                progressive=(), single_attribute=()))
    tables, summary = analyze_results(simulate_outcomes(table, "sim:stem"))
    assert tables["stem_truncation"].empty
    assert "token limit" in summary["unsupported"]["stem_truncation"]


def test_the_option_is_checked() -> None:
    assert StemStudy(truncated="drop").truncated() == "drop"
    assert StemStudy().truncated() == "score"
    with pytest.raises(UserError, match="truncated must be one of"):
        StemStudy(truncated="maybe")


def test_the_report_states_the_share_and_the_gap_both_ways(runs: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    from counterbench.report.api import render_report
    from counterbench.report.context import ReportInput

    tables, summary = analyze_results(runs[1])
    html, markdown = render_report(ReportInput(tables, {**summary, "study": "stem"}))
    assert "Explanations cut at the token limit" in html
    line = next(x for x in markdown.splitlines() if "explanations (" in x and "hit the token limit" in x)
    assert "income: Low" in line and "with them dropped" in line
