"""The hiring study through the real pipeline: registry, run engine with sim models, store, analysis, report."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import counterbench
from counterbench.builtin.hiring import synthetic as syn
from counterbench.builtin.hiring.analysis import analyze_hiring
from counterbench.builtin.hiring.plan import build_prompts, full_plan, plan_from_mapping
from counterbench.builtin.hiring.study import HiringStudy
from counterbench.report.api import write_report
from counterbench.studies.registry import load_study


def test_registered_as_a_built_in_python_study():
    study = load_study("hiring")
    assert study.name == "hiring" and study.title == "Hiring markers"
    assert {spec.kind for spec in study.outcomes.values()} == {"choice", "score", "label"}
    assert set(study.presets) == {"quick", "paper"}


def test_planted_preferences_recovered_through_the_engine_and_store(tmp_path):
    jobs = [f"{occ}_{k}" for occ in ("civeng", "nurse", "account", "dataan", "sales") for k in (1, 2, 3, 4)]
    table = counterbench.prompts("hiring", use_case=["compare", "score", "recover_ethnicity"], profile=jobs,
                                 axis=["all", "none"])
    store = tmp_path / "h.db"
    counterbench.run_prompts(table, ["sim:hiring-biased"], store=str(store))
    result = counterbench.analyze(str(store), "hiring", bootstrap=1000)
    wr = result.tables["hiring_win_rates"]
    top = wr.sort_values("win_rate", ascending=False).head(2)
    assert set(top["group"]) == {"Chinese Male", "Chinese Female"} and (top["ci_low"] > 0.5).all()
    position = result.tables["hiring_position_effect"].iloc[0]
    assert position["ci_low"] <= 0.575 <= position["ci_high"]  # the planted first-position share
    scores = result.tables["hiring_scores"]
    male = scores[scores["group"].str.endswith(" Male")]["mean_score"].mean()
    female = scores[scores["group"].str.endswith("Female")]["mean_score"].mean()
    assert male - female == pytest.approx(3.0, abs=1.0)
    f1 = result.tables["hiring_recoverability"].set_index("condition")["macro_f1"]
    assert f1["all"] > 0.85 and f1["none"] < 0.4
    assert result.summary["study"] == "hiring" and "outcome_gaps" not in result.tables


def test_audit_quick_by_the_cli_reports_what_it_cannot_support(tmp_path, cli):
    out = tmp_path / "out"
    proc = cli("audit", "hiring", "--model", "sim:hiring-biased", "--preset", "quick", "--store",
               str(tmp_path / "q.db"), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "Hiring markers audit report" in html
    for title in ("Direct Comparison: win rate per group", "Score &amp; Shortlist: Top-Score Rate",
                  "Can the model read gender and ethnicity", "Controls: position"):
        assert title in html
    assert "needs both prompt variants" in html.lower()  # the rationale effect: not supported by quick
    assert "RupeeBias" not in html and "INR" not in html
    summary = json.loads((out / "analysis" / "summary.json").read_text(encoding="utf-8"))
    assert summary["study"] == "hiring" and "hiring_friedman" in summary["unsupported"]
    # every limit of the quick preset is said in the report: one model, one prompt variant, all markers only,
    # no language-only comparisons, 3 jobs
    for table in ("hiring_friedman", "hiring_rationale_tests", "hiring_ablation", "hiring_language_only"):
        assert table in summary["unsupported"], table
    assert "No ablation curve" in html and "Only 3 occupation(s)" in html and "No Friedman test" in html
    assert "too few occupations to test (n = 3)" in html  # 3 jobs of 3 occupations: the marks' unit
    assert "Every 95% interval resamples occupations" in html and "each pair's gap" not in html  # the study's methods


def test_a_sample_whose_scores_hold_only_the_neutral_resume_makes_every_table(tmp_path, cli):
    """``--sample-slots 2 --sample-seed 0`` keeps one score slot, the neutral resume's: no marked group to state
    a disparity of. The bias summary used to fail (a maximum of no values) after every request was answered."""
    out = tmp_path / "out"
    proc = cli("audit", "hiring", "--model", "sim:hiring-biased", "--preset", "quick", "--sample-slots", "2",
               "--sample-seed", "0", "--bootstrap", "50", "--store", str(tmp_path / "s.db"), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "analysis" / "summary.json").read_text(encoding="utf-8"))
    assert "failed_tables" not in summary
    tsr = pd.read_parquet(out / "analysis" / "hiring_top_score_rates.parquet")
    assert set(tsr["group"]) == {"neutral"}  # the sample this test is about
    bias = pd.read_parquet(out / "analysis" / "hiring_bias_summary.parquet")
    assert "score" not in set(bias["setting"])  # no marked group to compare in the score setting: no row


def test_hostile_text_and_user_group_names_are_escaped_in_the_report(tmp_path):
    plan = plan_from_mapping({"jobs": 3, "settings": ["compare", "score"], "rationale": [False],
                              "language_only": False}, base=full_plan())
    design = build_prompts(plan).drop(columns=["system", "user"])
    evil = "<script>alert(1)</script> Male"
    design["group"] = design["group"].replace("Chinese Male", evil)
    results = syn.answer_texts(design, "<img src=x onerror=alert(2)>", syn.Planted(), hostile_rate=0.2)
    tables, unsupported = analyze_hiring(results, bootstrap=100)
    summary = {"study": "hiring", "title": "Hiring markers", "unsupported": unsupported, "models": {}}
    data = counterbench.report.context.ReportInput(tables, summary)
    files = write_report(data, tmp_path / "r.html", samples=results[["prompt_id", "model", "response"]].head(20))
    html = files.html.read_text(encoding="utf-8") if hasattr(files, "html") else (tmp_path / "r.html").read_text()
    assert "<script>alert(1)</script>" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; Male" in html


def test_user_baskets_for_another_country(tmp_path):
    rows = [{"ethnicity": e, "gender": g, "variation": v, "languages": f"English, {lang}",
             "activities": f"{e} heritage club", "volunteering": "Food bank", "hobbies": f"{g} league {v}"}
            for e, lang in (("Yoruba", "Yoruba"), ("Igbo", "Igbo"), ("Hausa", "Hausa")) for g in ("Man", "Woman")
            for v in (1, 2)]
    path = tmp_path / "nigeria.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    study = HiringStudy(plan_from_mapping({"baskets_file": str(path), "jobs": 2, "recover_jobs": 1},
                                          base=full_plan()))
    table = study.expand()
    assert set(table["ethnicity"]) - {"neutral"} == {"Yoruba", "Igbo", "Hausa"}
    assert study.outcomes["recover_ethnicity"].labels == ("Yoruba", "Igbo", "Hausa", "Cannot determine")
    assert isinstance(table, pd.DataFrame) and table["prompt_id"].is_unique


def test_the_true_label_never_reaches_a_model_through_the_constraint_or_the_prompt():
    from counterbench.outcomes import constraint_for

    table = counterbench.prompts("hiring", use_case=["recover_ethnicity"], profile=["civeng_1"], axis=["all"])
    constraints = {(c.regex, c.gbnf) for c in map(constraint_for, table["answer_type"].unique())}
    assert len(constraints) == 1  # every truth-first ordering gives the same grammar / regex / schema
    options = table["user"].str.extract(r"Choose one of: (.*)\.")[0]
    assert options.nunique() == 1 and options.iloc[0] == "Chinese, Malay, Indian, Caucasian, Cannot determine"


@pytest.mark.browser
def test_hiring_report_in_headless_chromium_with_a_planted_payload(tmp_path):
    from tests.report.chromium import CHROMIUM, load, root_tag, with_probe

    if CHROMIUM is None:
        pytest.skip("headless chromium (Debian package `chromium`) is not installed")
    plan = plan_from_mapping({"jobs": 4, "recover_jobs": 1, "rationale": [False]}, base=full_plan())
    design = build_prompts(plan).drop(columns=["system", "user"])
    payload = "<script>document.documentElement.setAttribute('data-pwned','x')</script>"
    results = pd.concat([syn.answer_texts(design, "sim:a", syn.Planted(compare_effects={"Chinese": 0.2})),
                         syn.answer_texts(design, "sim:b", syn.Planted(), hostile_rate=0.1)], ignore_index=True)
    results["response"] = results["response"].where(results.index % 7 != 0, payload + "\n### A")
    tables, unsupported = analyze_hiring(results, bootstrap=200)
    summary = {"study": "hiring", "title": "Hiring markers", "unsupported": unsupported,
               "models": {"sim:a": {"simulated": True}, "sim:b": {"simulated": True}}}
    from counterbench.report.samples import select_samples

    samples = select_samples(results.assign(status="ok"))
    html = write_report(counterbench.report.context.ReportInput(tables, summary, samples), tmp_path / "r.html").html
    page = tmp_path / "probed.html"
    page.write_text(with_probe(html.read_text(encoding="utf-8")), encoding="utf-8")
    result = load(page, tmp_path)
    root = root_tag(result.dom)
    assert 'data-probe="ready"' in root and "data-probe-errors" not in root and "data-pwned" not in root
    assert result.console == []
    assert "Direct Comparison: win rate per group" in result.dom and "<svg" in result.dom


def test_one_preferred_group_is_the_only_one_marked_against_the_neutral_resume(tmp_path):
    """Issue 30: one group scored +8 points and nothing else. Against the mean over the groups the seven
    others would all sit about a point below; against their jobs' neutral resumes they sit at 0, so only
    the preferred group is marked (simulated model → run engine → store → analysis read from the store)."""
    sim = tmp_path / "one-group.yaml"
    sim.write_text("extends: hiring-fair\nrefusal_rate: 0\nmalformed_rate: 0\n"
                   "description: hiring, Chinese Male resumes +8 points\n"
                   "planted: Score & Shortlist - Chinese Male resumes +8 points, nothing else.\n"
                   "effects:\n  - match: {use_case: [score], group: Chinese Male}\n    add: 8\n", encoding="utf-8")
    occupations = ("civeng", "electech", "softeng", "logsup", "mecheng", "nurse", "preschool", "hrexec",
                   "admin", "dental")
    table = counterbench.prompts("hiring", use_case=["score"], profile=[f"{occ}_1" for occ in occupations])
    assert table["occupation"].nunique() == 10  # 10 occupations: an exact swap test can reach p = 2/1024
    store = tmp_path / "h.db"
    counterbench.run_prompts(table, [f"sim:{sim}"], store=str(store))
    scores = counterbench.analyze(str(store), "hiring", bootstrap=1000).tables["hiring_scores"]
    groups = scores[~scores["group"].eq("neutral")].set_index("group")
    assert groups["significant"].astype(bool).to_dict() == {g: g == "Chinese Male" for g in groups.index}
    assert groups.loc["Chinese Male", "diff"] == pytest.approx(8.0, abs=1.5)
    others = groups.drop(index="Chinese Male")
    assert (others["diff_low"] <= 0).all() and (others["diff_high"] >= 0).all()  # their truth, 0, covered
    assert (others["diff_mean"] < 0).all()  # the descriptive contrast with the mean: everyone else "below"
