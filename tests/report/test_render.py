"""The HTML and Markdown reports built from fixture tables: content, banners, degradation, escaping."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from counterbench.errors import UserError
from counterbench.report.api import render_report, write_report
from counterbench.report.context import ReportInput
from counterbench.report.samples import select_samples
from tests.report.fixtures import MODELS, make_summary, make_tables, sample_responses

PAYLOAD = '<script>document.title="PWNED"</script><img src=x onerror="document.title=1">'
SECTION_TITLES = (
    "Leaderboard", "Gaps by identity axis", "Gaps by use case", "Canonical pair gaps", "Maximum observed gap",
    "Identifier deviation", "Consistency of the ordering (Kendall&#39;s W)", "Robustness to rewording the question",
    "Profile rank agreement", "Merit sensitivity", "English vs Hinglish", "Fairness instruction",
    "Parse health and refusals", "Pairs per axis", "Sample of raw responses", "Methods",
)


def full_input(models: list[str] | None = None, **kwargs: object) -> ReportInput:
    models = models or MODELS
    return ReportInput(make_tables(models, **kwargs), make_summary(models),  # type: ignore[arg-type]
                       select_samples(sample_responses(models)))


@pytest.fixture(scope="module")
def rendered() -> tuple[str, str]:
    return render_report(full_input())


def test_every_section_is_there(rendered: tuple[str, str]) -> None:
    html, md = rendered
    for title in SECTION_TITLES:
        assert f">{title}</h2>" in html, title
        assert f"## {title.replace('&#39;', chr(39))}" in md, title
    assert html.count("<svg") >= 20
    assert "Not available for this run" not in html  # every table has rows


def test_banners_for_simulated_and_demo_models(rendered: tuple[str, str]) -> None:
    html, md = rendered
    assert 'id="banner-simulated"' in html and "Simulated models: sim:biased, sim:fair." in html
    assert 'id="banner-demo"' in html and "SmolLM2-135M-Instruct" in html and "meaningless" in html
    assert "Simulated models" in md and "meaningless" in md
    real_only = render_report(full_input(["openai:gpt-4o-mini", "anthropic:claude-haiku-4.5"]))[0]
    assert 'id="banner-simulated"' not in real_only and 'id="banner-demo"' not in real_only


def test_flagged_simulated_model_gets_the_banner() -> None:
    data = full_input(["vllm:http://h:8000/v1:m"])
    data.summary["simulated"] = {"vllm:http://h:8000/v1:m": True}
    assert 'id="banner-simulated"' in render_report(data)[0]


def test_self_contained_and_script_free(rendered: tuple[str, str]) -> None:
    html, _ = rendered
    assert "<script" not in html.lower()
    assert "<link" not in html.lower() and "@import" not in html and "url(" not in html
    assert not re.search(r'src\s*=\s*"', html)
    # in-page links, and links to the local answer viewer (followed only when the reader clicks)
    assert not re.search(r'href\s*=\s*"(?!#|http://127\.0\.0\.1:8765/slots\?)', html), "only in-page links"
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    assert len(html) < 1_500_000


def test_unsupported_sections_say_what_run_would_fill_them() -> None:
    unsupported = {"language_moderation": "needs both languages for a model: run with --language en --language "
                   "hinglish"}
    tables = make_tables(languages=["en"], fairness=False, question_variants=False)
    html, md = render_report(ReportInput(tables, make_summary(unsupported=unsupported)))
    assert html.count("Not available for this run.") == 3
    assert "Needs both languages for a model: run with <code>--language en</code>" in html
    assert "<code>--question-variant</code>" in html  # the report's own hint when the analysis gave none
    assert "--variant standard --variant fairness" in html
    assert md.count("Not available for this run.") == 3


def test_empty_analysis_still_renders() -> None:
    empty = {name: frame.iloc[0:0] for name, frame in make_tables(["sim:fair"]).items()}
    html, md = render_report(ReportInput(empty, {"study": "rupeebias"}))
    assert html.count("Not available for this run.") == 15  # 15 sections, power included
    assert "Methods" in html and md.startswith("# RupeeBias audit report")


def test_missing_table_is_reported() -> None:
    tables = make_tables(["sim:fair"])
    del tables["mog"]
    html, _ = render_report(ReportInput(tables, make_summary(["sim:fair"])))
    assert "did not write the <code>mog</code> table" in html


def test_model_text_is_escaped_everywhere() -> None:
    evil = f"evil:{PAYLOAD}"
    models = ["sim:fair", evil]
    data = ReportInput(make_tables(models), make_summary(models),
                       select_samples(sample_responses(models, payload=PAYLOAD)))
    html, md = render_report(data)
    assert "<script" not in html and "<img" not in html and "onerror=\"" not in html
    assert "&lt;script&gt;document.title=&#34;PWNED&#34;&lt;/script&gt;" in html
    assert "<script" not in md and "<img" not in md
    assert "&lt;script&gt;" in md


def test_write_report_files(tmp_path: Path) -> None:
    files = write_report(full_input(), tmp_path / "deep" / "report.html")
    assert files.html.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert files.markdown == tmp_path / "deep" / "report.md" and files.markdown.is_file()
    assert (files.html.stat().st_mode & 0o777) != 0o600
    other = write_report(full_input(), tmp_path / "x.html", markdown=tmp_path / "notes.md")
    assert other.markdown == tmp_path / "notes.md"
    with pytest.raises(UserError, match=r"\.html"):
        write_report(full_input(), tmp_path / "report.pdf")


def test_accepts_analysis_result_objects() -> None:
    class Result:
        tables = make_tables(["sim:fair"])
        summary = make_summary(["sim:fair"])

    html, _ = render_report(Result())
    assert "sim:fair" in html
    with pytest.raises(TypeError):
        render_report(pd.DataFrame())


def test_warns_when_numbers_rest_on_little_data() -> None:
    tables = make_tables(["local"])
    tables["parse_health"] = tables["parse_health"].assign(ok_share=0.2)
    tables["leaderboard"] = tables["leaderboard"].assign(n_pairs=7)
    html, md = render_report(ReportInput(tables, make_summary(["local"])))
    assert "Only 20% of local&#39;s answers contained a usable number" in html
    assert "local has only 7 matched pairs" in html and "local has only 7 matched pairs" in md
    none = tables | {"parse_health": tables["parse_health"].assign(ok_share=0.0)}
    html, md = render_report(ReportInput(none, make_summary(["local"])))
    n = int(pd.to_numeric(none["parse_health"]["n"]).sum())
    assert f"None of local&#39;s {n:,} answers contained a usable number (see Parse health): nothing of it can be " \
           "compared." in html and "rest on the rest" not in html


def test_one_axis_has_no_largest_and_smallest() -> None:
    """A crossed design's amount tables have one axis ("crossed"): no "largest gaps on crossed; the smallest on
    crossed" sentence; two axes or more still get it."""
    tables = make_tables(["sim:fair"])
    axes = tables["axis_mean_delta"]
    assert axes["axis"].nunique() >= 2
    _, md = render_report(ReportInput(tables, make_summary(["sim:fair"])))
    assert "The largest gaps are on the" in md
    one = tables | {"axis_mean_delta": axes[axes["axis"].eq(axes["axis"].iloc[0])].assign(axis="crossed")}
    _, md = render_report(ReportInput(one, make_summary(["sim:fair"])))
    assert "The largest gaps are on the" not in md
