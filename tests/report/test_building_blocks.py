"""Formatting, the SVG writer's escaping, chart panels, samples and the analysis-folder loader."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from counterbench.errors import UserError
from counterbench.report import tables as t
from counterbench.report.charts import (
    BarRow,
    BarValue,
    Cell,
    bar_domain,
    hbar_panel,
    heatmap_panel,
    radar_panel,
    stacked_panel,
)
from counterbench.report.context import build_context, load_analysis_dir
from counterbench.report.document import readable_hint
from counterbench.report.html import inline_code
from counterbench.report.markdown import md_escape, md_inline
from counterbench.report.samples import select_samples
from counterbench.report.svg import Svg, nice_ceiling, nice_ticks
from tests.report.fixtures import make_summary, make_tables, sample_responses, write_analysis_dir

PAYLOAD = '<script>alert(1)</script><img src=x onerror="alert(2)">'


def test_number_formats() -> None:
    assert t.fmt_num(3.14159) == "3.14"
    assert t.fmt_num(2.5, 1, signed=True) == "+2.5"
    assert t.fmt_num(float("nan")) == t.DASH
    assert t.fmt_num(None) == t.DASH
    assert t.fmt_num(pd.NA) == t.DASH
    assert t.fmt_int(1234567.0) == "1,234,567"
    assert t.fmt_share(0.8312) == "83.1%"
    assert t.fmt_ci(1, 2.345) == "[1.00, 2.35]"
    assert t.fmt_ci(1, float("nan")) == t.DASH
    assert t.fmt_p(0.0001) == "<0.001"
    assert t.fmt_p(0.0456) == "0.046"
    assert [t.stars(q) for q in (0.0005, 0.005, 0.04, 0.2, float("nan"))] == ["***", "**", "*", "", ""]
    assert t.fmt_flag(True) == "✓" and t.fmt_flag(False) == "✗" and t.fmt_flag("True") == "✓"
    assert t.fmt_flag(None) == t.DASH


def test_table_view_skips_missing_columns_and_collapses_long_tables() -> None:
    frame = pd.DataFrame({"model": [f"m{i}" for i in range(30)], "mean_delta": np.arange(30.0)})
    view = t.table_view(frame, [t.text("model", "Model"), t.num("mean_delta", "Mean"), t.ci()])
    assert view.columns == ["Model", "Mean"]  # the CI spec needs ci_low/ci_high, which are absent
    assert view.collapsed and view.total_rows == 30
    capped = t.table_view(frame, [t.text("model", "Model")], max_rows=5, source="x.csv")
    assert len(capped.rows) == 5 and "x.csv" in capped.notes[0]


def test_pivot_view_orders_rows_and_columns() -> None:
    frame = pd.DataFrame({"model": ["b", "a", "a"], "axis": ["Caste", "Caste", "Religion"], "v": [1.0, 2.0, 3.0]})
    view = t.pivot_view(frame, index="model", columns="axis", index_order=["a", "b"],
                        column_order=["Religion", "Caste", "Gender"], cell=lambda r: f"{r['v']:.0f}",
                        index_label="Model")
    assert view.columns == ["Model", "Religion", "Caste"]
    assert view.rows == [["a", "3", "2"], ["b", t.DASH, "1"]]


def test_svg_escapes_text_and_attributes() -> None:
    svg = Svg(100, 50, label=PAYLOAD)
    svg.text(1, 2, PAYLOAD, title=PAYLOAD)
    svg.rect(0, 0, 5, 5, fill='red" onload="alert(3)', title=PAYLOAD)
    out = str(svg.render())
    assert "<script" not in out and "<img" not in out and 'onload="' not in out
    assert "&lt;script&gt;" in out and "&#34;" in out


def test_chart_panels_escape_labels_and_survive_missing_values() -> None:
    rows = [BarRow(PAYLOAD, [BarValue("en", 3.0, "#000000", 2.0, 4.0), BarValue("hi", math.nan, "#111111")],
                   dots=[(PAYLOAD, 1.0)])]
    panels = [
        hbar_panel(PAYLOAD, rows),
        heatmap_panel(PAYLOAD, [PAYLOAD], [PAYLOAD], [[Cell(math.nan)]], row_groups=[PAYLOAD]),
        heatmap_panel("t", ["a", "b"], ["x"], [[Cell(-2.0, "-2")], [Cell(5.0, "5")]], scale="diverging"),
        radar_panel(PAYLOAD, ["A", "B", "C"], [(PAYLOAD, "#000000", [1.0, math.nan, 3.0])], rmax=4),
        stacked_panel(PAYLOAD, [(PAYLOAD, [(PAYLOAD, 0.5, "#000000"), ("b", 0.5, "#ffffff")])]),
    ]
    for panel in panels:
        text = str(panel)
        assert text.startswith("<svg") and text.endswith("</svg>")
        assert "<script" not in text and "<img" not in text
    assert "no data" in str(panels[0])


def test_nice_numbers() -> None:
    assert nice_ceiling(44.05) == 50
    assert nice_ceiling(7.2) == 8
    assert nice_ceiling(0) == 1.0
    assert nice_ticks(0, 10, 5) == [0, 2, 4, 6, 8, 10]


def test_escaping_helpers() -> None:
    assert str(inline_code("run `a <b>` now <i>")) == "run <code>a &lt;b&gt;</code> now &lt;i&gt;"
    assert md_escape("a|b <script> *x* [l](javascript:x)") == r"a\|b &lt;script&gt; *x* \[l\](javascript:x)"
    assert md_escape("[3.37, 3.38]  0.41***") == "[3.37, 3.38] 0.41***"
    assert md_escape("a\\|b") == "a\\\\\\|b"  # a backslash cannot un-escape the pipe
    assert md_inline("run `--x <y>` then") == "run `--x <y>` then"
    assert readable_hint("needs both languages: run with --language en --language hinglish").startswith(
        "Needs both languages: run with `--language en`")


def test_samples_are_deterministic_and_cover_outcomes() -> None:
    results = sample_responses(payload=PAYLOAD)
    picked = select_samples(results)
    assert picked.equals(select_samples(results.sample(frac=1.0, random_state=3)))
    assert set(picked["status"]) == {"ok", "refused", "unparseable", "error"}
    assert (picked.loc[picked["status"] == "error", "response"] == "HTTP 500").all()
    long = results.assign(response="x" * 5000)
    assert select_samples(long, max_chars=100)["response"].str.len().max() == 100
    assert select_samples(pd.DataFrame()).empty


def test_a_sample_shows_the_option_or_label_read_and_what_it_stands_for() -> None:
    from counterbench.report.api import report_title
    from counterbench.report.context import ReportInput
    from counterbench.report.methods import samples_section

    results = pd.DataFrame({
        "model": ["m"] * 5, "prompt_id": ["p1", "p2", "p3", "p4", "p5"],
        "use_case": ["rank", "rank", "pay", "approve", "approve"],
        "language": ["en"] * 5, "identifier": ["s1", "s2", "s3", "s4", "s5"], "status": ["ok"] * 5,
        "value": [4.0, 0.0, 1200.0, 0.0, 1.0], "unit": ["E", "A", "INR", "yes", "no"], "parse_reason": [None] * 5,
        "response": ["### E", "### A", "### 1200 INR", "### yes", "### no"],
        "answer_type": ["choice:A|B|C|D|E", "choice:A|B|C|D|E", "inr_annual", "label:yes|no", "label:yes|no"],
        "option_A": ["2", "Emily", None, None, None], "option_E": ["3", None, None, None, None],
    })
    picked = select_samples(results, per_status={"ok": 5}).set_index("prompt_id")
    assert picked.loc["p1", "stands_for"] == "3" and picked.loc["p2", "stands_for"] == "Emily"
    assert pd.isna(picked.loc["p3", "stands_for"])
    ctx = build_context(ReportInput(tables={}, summary={}, samples=select_samples(results, per_status={"ok": 5})))
    section = samples_section(ctx)
    assert section is not None
    cells = [row[5] for row in section.tables[0].rows]  # the Parsed column: a label read, not "0 yes"
    assert sorted(cells) == ["1,200 INR", "A → Emily", "E → 3", "no", "yes"]
    assert report_title("Loan rates") == "Loan rates audit report"
    assert report_title("STEM explanations audit: student profiles") == "STEM explanations audit: student profiles"
    assert report_title("Auditory tests") == "Auditory tests audit report"


def test_load_analysis_dir_reads_parquet_or_csv(tmp_path: Path) -> None:
    tables, summary = make_tables(), make_summary()
    folder = write_analysis_dir(tmp_path / "a", tables, summary)
    data = load_analysis_dir(folder)
    assert set(tables) <= set(data.tables) and data.summary["study"] == "rupeebias"
    pd.testing.assert_frame_equal(data.tables["leaderboard"], tables["leaderboard"])
    for parquet in folder.glob("*.parquet"):
        parquet.unlink()
    again = load_analysis_dir(folder)
    assert len(again.tables["cpg"]) == len(tables["cpg"])
    (folder / "fairness_ablation.csv").write_text("", encoding="utf-8")
    assert load_analysis_dir(folder).tables["fairness_ablation"].empty


def test_load_analysis_dir_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist"):
        load_analysis_dir(tmp_path / "missing")
    with pytest.raises(UserError, match=r"summary\.json"):
        load_analysis_dir(tmp_path)
    (tmp_path / "summary.json").write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(UserError, match="not a JSON object"):
        load_analysis_dir(tmp_path)
    (tmp_path / "summary.json").write_text("{oops", encoding="utf-8")
    with pytest.raises(UserError, match="cannot read"):
        load_analysis_dir(tmp_path)


def test_context_orders_and_kinds(tmp_path: Path) -> None:
    tables = make_tables(["sim:biased", "local", "openai:gpt-4o-mini"])
    summary = make_summary(["sim:biased", "local", "openai:gpt-4o-mini"])
    summary["axes"] = ["Caste", "Religion"]  # the analysis's own order comes first
    (tmp_path / "s.json").write_text(json.dumps(summary), encoding="utf-8")
    from counterbench.report.context import ReportInput

    ctx = build_context(ReportInput(tables, summary))
    board = tables["leaderboard"].sort_values("overall_mean_delta")
    assert ctx.models == list(board["model"])
    assert ctx.kinds == {"sim:biased": "simulated", "local": "demo", "openai:gpt-4o-mini": "real"}
    assert ctx.axes[:2] == ["Caste", "Religion"] and len(ctx.axes) == 6
    assert ctx.languages == ["en", "hinglish"]


def test_a_bar_past_a_readable_scale_is_cut_at_the_edge_and_said() -> None:
    """A 76-million-% gap beside gaps of tens of % (nonsense answers kept): the scale stays readable, the bar is
    cut at the plot's edge with a chevron, its value written beside it, and a line under the plot says so."""
    import re

    rows = [BarRow("Region: Tamil − Gujarati", [BarValue("m", 76_083_139.0, "#3b4a6b", 1e6, 1.5e8)]),
            BarRow("Caste: Dalit − Brahmin", [BarValue("m", 12.0, "#3b4a6b", -30.0, 50.0)]),
            BarRow("Gender: Female − Male", [BarValue("m", -20.0, "#3b4a6b", -60.0, 20.0)])]
    lo, hi = bar_domain(rows)
    assert -70 < lo < -60 and 50 < hi < 60  # the readable values' range, not the outlier's
    svg = str(hbar_panel("Gaps", rows, domain=(lo, hi)))
    width = float(re.search(r'viewBox="0 0 ([\d.]+)', svg).group(1))  # type: ignore[union-attr]
    for x, w in re.findall(r'<rect x="([-\d.]+)" y="[-\d.]+" width="([\d.]+)"', svg):
        assert float(x) >= 0 and float(x) + float(w) <= width
    assert "»" in svg and "76083139.0" in svg and "3 values past the scale: cut at its edge" in svg
    plain = str(hbar_panel("Gaps", rows[1:], domain=bar_domain(rows[1:])))
    assert "past the scale" not in plain and "»" not in plain
    assert bar_domain(rows[1:]) == bar_domain(rows[1:], include_zero=True)


def test_bars_of_several_models_in_one_row_are_named() -> None:
    rows = [BarRow("Group A", [BarValue("sim:fair", 0.12, "#3b4a6b", mark="*"),
                               BarValue("sim:biased", -0.3, "#d1495b")])]
    named = str(hbar_panel("Win rate", rows, name_bars=True, value_format="{:+.2f}"))
    assert ">+0.12* · sim:fair</text>" in named and ">-0.30 · sim:biased</text>" in named
    plain = str(hbar_panel("Win rate", rows, value_format="{:+.2f}"))
    assert ">+0.12*</text>" in plain and "· sim:fair</text>" not in plain
