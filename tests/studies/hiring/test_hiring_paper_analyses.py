"""The paper's remaining analyses (App. K.1, K.2, Figs. 3, 5, 13, Table 14, App. F, App. L), each recomputed
here independently from the raw answers."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import confusion_matrix as sk_confusion
from sklearn.metrics import f1_score

from counterbench.builtin.hiring import synthetic as syn
from counterbench.builtin.hiring.analysis import analyze_hiring
from counterbench.builtin.hiring.plan import build_prompts, full_plan, plan_from_mapping
from counterbench.builtin.hiring.recoverability import CANNOT

ETHNICITIES = ["Chinese", "Malay", "Indian", "Caucasian"]
GENDERS = ["Male", "Female"]


def _final_line(text: str) -> str:
    """The answer on the last ``###`` line (the test's own reading, not the study's parser)."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip().startswith("###")]
    return re.sub(r"^###\s*", "", lines[-1]).strip() if lines else ""


@pytest.fixture(scope="module")
def recover_results() -> pd.DataFrame:
    plan = plan_from_mapping({"jobs": 1, "settings": ["recover"], "recover_jobs": 4, "rationale": [False]},
                             base=full_plan())
    design = build_prompts(plan).drop(columns=["system", "user"])
    return pd.concat([syn.answer_texts(design, "sim:a", syn.Planted(), hostile_rate=0.1),
                      syn.answer_texts(design, "sim:b", syn.Planted(p_ethnicity_languages=0.6), seed=3)],
                     ignore_index=True)


def test_per_class_recoverability_and_confusion_matrix_from_the_raw_answers(recover_results):
    tables, _ = analyze_hiring(recover_results, bootstrap=50)
    classes, confusion = tables["hiring_recovery_classes"], tables["hiring_confusion"]
    macro = tables["hiring_recoverability"].set_index(["model", "attribute", "condition"])["macro_f1"]
    checked = 0
    for (model, attribute, condition), part in recover_results.groupby(["model", "attribute", "condition"]):
        labels = GENDERS if attribute == "gender" else ETHNICITIES
        answer = part["response"].map(_final_line)
        answer = answer.where(answer.isin([*labels, CANNOT]), "Unparsed")
        truth = part["truth"].astype(str)
        mine = classes[(classes["model"] == model) & (classes["attribute"] == attribute)
                       & (classes["condition"] == condition)].set_index("truth")
        f1 = f1_score(truth, answer, labels=labels, average=None, zero_division=0)
        assert mine.loc[labels, "f1"].to_numpy() == pytest.approx(f1, abs=1e-12)
        assert mine["f1"].mean() == pytest.approx(macro[(model, attribute, condition)], abs=1e-12)
        for cls in labels:
            rows = truth.eq(cls)
            assert mine.loc[cls, "n"] == rows.sum()
            assert mine.loc[cls, "recall"] == pytest.approx((answer[rows] == cls).mean(), abs=1e-12)
            assert mine.loc[cls, "cannot_share"] == pytest.approx((answer[rows] == CANNOT).mean(), abs=1e-12)
            named = answer.eq(cls)
            if named.any():
                assert mine.loc[cls, "precision"] == pytest.approx((truth[named] == cls).mean(), abs=1e-12)
        columns = [*labels, CANNOT, "Unparsed"]
        matrix = sk_confusion(truth, answer, labels=columns)[: len(labels)]
        cell = confusion[(confusion["model"] == model) & (confusion["attribute"] == attribute)
                         & (confusion["condition"] == condition)]
        got = cell.pivot(index="truth", columns="predicted", values="count").loc[labels, columns].to_numpy()
        assert (got == matrix).all()
        shares = cell.groupby("truth")["share"].sum()
        assert shares.to_numpy() == pytest.approx(np.ones(len(labels)))
        checked += 1
    assert checked == 2 * 2 * 8  # two models × two attributes × 8 marker conditions
    hostile = confusion[confusion["model"].eq("sim:a") & confusion["predicted"].eq("Unparsed")]["count"].sum()
    assert hostile > 0  # hostile answers are counted, as Unparsed, not read as a label


def _report(tables, unsupported, tmp_path, models=("sim:a", "sim:b")) -> str:
    import counterbench
    from counterbench.report.api import write_report

    summary = {"study": "hiring", "title": "Hiring markers", "unsupported": unsupported,
               "models": {m: {"simulated": True} for m in models}}
    files = write_report(counterbench.report.context.ReportInput(tables, summary), tmp_path / "r.html")
    return files.html.read_text(encoding="utf-8")


def test_the_report_shows_the_confusion_matrices_and_class_trends(recover_results, tmp_path):
    tables, unsupported = analyze_hiring(recover_results, bootstrap=50)
    html = _report(tables, unsupported, tmp_path)
    assert "Which groups can the model recognise?" in html
    assert "sim:a · ethnicity (markers: all), % of each true class" in html
    assert "sim:b: % of each class recovered as markers are removed" in html
    assert "Share of the class" in html and "Precision" in html


def _repeated_scores() -> pd.DataFrame:
    """Score & Shortlist on 3 jobs, repeated: T = 0 three times with the same answers, T = 1 four times with
    different ones (another seed per repeat), one repeat with an unparseable answer."""
    plan = plan_from_mapping({"jobs": 3, "settings": ["score"], "rationale": [False], "recover_jobs": 0},
                             base=full_plan())
    design = build_prompts(plan).drop(columns=["system", "user"])
    parts = []
    for temperature, seeds, same in ((0.0, (7, 3, 5), True), (1.0, (4, 2, 9, 8), False)):
        for seed in seeds:
            answers = syn.answer_texts(design, "sim:a", syn.Planted(noise_sd=3.0 if same else 6.0),
                                       seed=0 if same else seed)
            parts.append(answers.assign(temperature=temperature, seed=seed, config_fp=f"cfg-{temperature}-{seed}"))
    results = pd.concat(parts, ignore_index=True)
    results.loc[results.index[5], "response"] = "### ninety"
    return results


def test_temperature_repeat_stability_from_the_raw_answers():
    results = _repeated_scores()
    tables, _ = analyze_hiring(results, bootstrap=50)
    table = tables["hiring_stability"].set_index(["temperature", "repeats"])
    results = results.assign(number=pd.to_numeric(results["response"].map(_final_line), errors="coerce"))
    neutral = results[results["group"].eq("neutral")]
    for temperature, seeds in ((0.0, (3, 5, 7)), (1.0, (2, 4, 8, 9))):  # repeats in seed order
        for n in range(1, len(seeds) + 1):
            kept = neutral[neutral["temperature"].eq(temperature) & neutral["seed"].isin(seeds[:n])]
            row = table.loc[(temperature, n)]
            assert row["mean_score"] == pytest.approx(kept["number"].mean(), abs=1e-12)
            last = kept[kept["seed"].eq(seeds[n - 1])]["number"]
            assert row["repeat_mean"] == pytest.approx(last.mean(), abs=1e-12)
            per_resume = kept.groupby("prompt_id")["number"].var(ddof=1).dropna()
            if n == 1:
                assert np.isnan(row["avg_variance"])
            else:
                assert row["avg_variance"] == pytest.approx(per_resume.mean(), abs=1e-12)
            assert row["resume_set"] == "neutral" and row["resumes"] == 3
    assert table.loc[(0.0, 3), "avg_variance"] == 0.0  # identical repeats: no variance
    assert table.loc[(1.0, 4), "avg_variance"] > 10.0


def test_stability_needs_repeats_and_is_reported(tmp_path):
    results = _repeated_scores()
    single = results[results["config_fp"].eq("cfg-0.0-7")]
    tables, unsupported = analyze_hiring(single, bootstrap=50)
    assert tables["hiring_stability"].empty and "--generation-seed" in unsupported["hiring_stability"]
    tables, unsupported = analyze_hiring(results, bootstrap=50)
    html = _report(tables, unsupported, tmp_path, models=("sim:a",))
    assert "Are the scores stable across repeats and temperatures?" in html
    assert "Average across-resume variance (all repeats)" in html and "T = 0.5" not in html and "T = 1" in html
