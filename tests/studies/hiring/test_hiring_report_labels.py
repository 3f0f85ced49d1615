"""The hiring report's charts show every mark and row label in full (no cut-off asterisk, no "…")."""

from __future__ import annotations

import re

import pandas as pd

import counterbench
from counterbench.builtin.hiring import synthetic as syn
from counterbench.builtin.hiring.analysis import analyze_hiring
from counterbench.builtin.hiring.plan import build_prompts, full_plan, plan_from_mapping
from counterbench.report.api import write_report
from counterbench.report.charts import BarRow, BarValue, hbar_panel
from counterbench.report.svg import CHAR_WIDTH

MODELS = ("openrouter:google/gemini-3-flash-preview", "anthropic:claude-haiku-4.5")


def test_a_marked_value_label_fits_inside_the_chart():
    rows = [BarRow("Chinese Female", [BarValue("m · no rationale", 0.125, "#333", 0.05, 0.2, "*")])]
    svg = str(hbar_panel("Win rate − 0.5", rows, width=680, value_format="{:+.3f}"))
    width = float(re.search(r'viewBox="0 0 ([\d.]+)', svg).group(1))
    label = re.search(r'<text x="([\d.]+)"[^>]*>\+0\.125\*</text>', svg)
    assert label is not None
    assert float(label.group(1)) + len("+0.125*") * CHAR_WIDTH <= width


def test_heatmap_rows_name_setting_and_prompt_in_full_under_their_model(tmp_path):
    plan = plan_from_mapping({"jobs": 6, "settings": ["compare", "score"], "rationale": [False, True],
                              "language_only": False}, base=full_plan())
    design = build_prompts(plan)
    results = pd.concat([syn.answer_texts(design, m, syn.Planted(compare_effects={"Malay": 0.3}), seed=i)
                         for i, m in enumerate(MODELS)], ignore_index=True)
    tables, unsupported = analyze_hiring(results, bootstrap=200)
    summary = {"study": "hiring", "title": "Hiring markers", "unsupported": unsupported,
               "models": {m: {} for m in MODELS}}
    files = write_report(counterbench.report.context.ReportInput(tables, summary), tmp_path / "r.html")
    html = files.html.read_text(encoding="utf-8") if hasattr(files, "html") else (tmp_path / "r.html").read_text()
    heatmap = html[html.index("Relative advantage (%)"):]
    heatmap = heatmap[:heatmap.index("</svg>")]
    for label in ("compare · no rationale", "compare · with rationale", "score · no rationale",
                  "score · with rationale", *MODELS):
        assert f">{label}</text>" in heatmap, label
    assert "…" not in heatmap
