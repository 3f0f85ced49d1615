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
