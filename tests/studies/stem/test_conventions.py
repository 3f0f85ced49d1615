"""The paper's conventions (``--convention paper``): MAB/MDB equal Eq. 3–4 computed independently."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from counterbench.builtin.stem import analysis as A
from counterbench.builtin.stem.design import StemDesign, build_prompt_table
from counterbench.builtin.stem.results import analyze_results
from counterbench.builtin.stem.simulate import simulate_outcomes
from counterbench.builtin.stem.study import StemStudy
from counterbench.errors import UserError

CELL = ["model", "task", "context", "dataset", "role"]


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    table = build_prompt_table(StemDesign.paper(progressive=(), single_attribute=()))
    return A.outcome_frame(simulate_outcomes(table, "sim:stem", seed=5, profile_sd=0.1))


def eq_3_4(frame: pd.DataFrame) -> dict[tuple[str, ...], tuple[float, float, str, float]]:
    """(MAB, MDB, Table 4's group, its signed Z) per cell × attribute, by plain loops over the rows."""
    rows = frame[frame["y"].notna()]
    out = {}
    for key, cell in rows.groupby(CELL):
        z = np.empty(len(cell))
        y = cell["y"].to_numpy(float)
        subjects = cell["subject"].to_numpy()
        for subject in set(subjects):  # §3.5: normalised within the subgroup (cell) and subject
            hit = subjects == subject
            values = y[hit]
            sd = values.std(ddof=1) if len(values) > 1 else 0.0
            z[hit] = (values - values.mean()) / sd if sd > 0 else 0.0
        for attribute, levels in A.context_attributes(key[2]).items():
            column = cell[attribute].to_numpy()
            scores = {lv: float(np.mean(z[column == lv])) for lv in levels if (column == lv).any()}
            group = max(scores, key=lambda lv: abs(scores[lv]))
            mab = float(np.mean([abs(v) for v in scores.values()]))  # Eq. 3: E_s |Z(m, s)|
            mdb = max(scores.values()) - min(scores.values())  # Eq. 4
            out[(*map(str, key), attribute)] = (mab, mdb, group, scores[group])
    return out


def test_paper_mab_mdb_equal_eq_3_and_4(frame: pd.DataFrame) -> None:
    _, bias = A.bias_tables(frame, convention="paper")
    want = eq_3_4(frame)
    assert len(bias) == len(want) == 3 * (8 + 7)  # (2 ranking roles + generation) × (India 8 + USA 7 attributes)
    worst = 0.0
    for row in bias.to_dict("records"):
        mab, mdb, group, signed = want[(*(str(row[c]) for c in CELL), row["attribute"])]
        worst = max(worst, abs(row["mab_z"] - mab), abs(row["mdb_z"] - mdb), abs(row["extreme_dev_z"] - signed))
        assert row["extreme_level"] == group and row["max_abs_z"] == pytest.approx(abs(signed), abs=1e-12)
    assert worst < 1e-12


def test_the_conventions_differ_where_the_paper_says(frame: pd.DataFrame) -> None:
    _, ours = A.bias_tables(frame)
    _, paper = A.bias_tables(frame, convention="paper")
    keys = [*CELL, "attribute"]
    both = ours.merge(paper, on=keys, suffixes=("_cb", "_paper"))
    assert (both["mab_z_paper"] - both["mab_z_cb"]).abs().max() > 1e-3  # a different reference
    binary = both[both["attribute"].eq("disability")]
    # counterbench's two binary levels tie around their average (the first is named); the paper names the larger |Z|
    assert binary["extreme_level_cb"].eq("Able-bodied").all()
    planted = both[both["task"].eq("generation")].sort_values("mab_z_paper", ascending=False)
    assert set(planted.groupby("context").head(1)["attribute"]) == {"disability"}  # planted: on top either way


def test_the_option_reaches_the_summary_and_the_report(frame: pd.DataFrame) -> None:
    assert StemStudy(convention="paper").convention() == "paper"
    with pytest.raises(UserError, match=r"^convention must be one of counterbench, paper"):
        StemStudy(convention="mine")
    table = build_prompt_table(StemDesign.paper(contexts=("india",), profiles=30, progressive=(), single_attribute=(),
                                                tasks=("generation",)))
    tables, summary = analyze_results(simulate_outcomes(table, "sim:stem"), convention="paper")
    assert summary["stem_convention"] == "paper" and "max_abs_z" in tables["stem_bias"].columns
    from counterbench.report.api import render_report
    from counterbench.report.context import ReportInput

    html, _ = render_report(ReportInput(tables, {**summary, "study": "stem"}))
    assert "Convention: the paper&#39;s" in html or "Convention: the paper's" in html
