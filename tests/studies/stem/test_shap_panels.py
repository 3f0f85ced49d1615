"""The SHAP strip charts: the cells with the strongest attribution come first (a planted model's before
a null one's, whatever their names), and each strip has a legend naming its levels' colours."""

from __future__ import annotations

import re
from dataclasses import replace

import pandas as pd

from counterbench.builtin.stem.design import StemDesign, build_prompt_table
from counterbench.builtin.stem.results import analyze_results
from counterbench.builtin.stem.simulate import simulate_outcomes
from counterbench.models.simulated import load_profile
from counterbench.report.api import render_report
from counterbench.report.context import ReportInput


def test_the_planted_models_panels_come_first_with_a_legend() -> None:
    table = build_prompt_table(StemDesign.paper(contexts=("india",), tasks=("generation",)))
    null = replace(load_profile("stem"), effects=())
    results = pd.concat([simulate_outcomes(table, "sim:a-null", preset=null, seed=1),
                         simulate_outcomes(table, "sim:z-planted", seed=2)], ignore_index=True)
    tables, summary = analyze_results(results)
    html, _ = render_report(ReportInput(tables, {**summary, "study": "stem"}))
    start = html.index('<section id="stem_shap"')
    section = html[start:html.index("</section>", start)]
    titles = list(dict.fromkeys(re.findall(r"(sim:[a-z-]+) · generation · india · teacher", section)))
    assert titles == ["sim:z-planted", "sim:a-null"], titles
    assert "every cell with the largest mean |SHAP| of an attribute first" in html
    assert "rest on fewer than 10 answers" not in html  # the paper's design: no small-design warning
    for level in ("Disabled", "Able-bodied", "Hindi/Regional"):  # legend entries, as text in the charts
        assert f">{level}</text>" in html, level
