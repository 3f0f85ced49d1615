"""A country is data: a hiring study declared from files by a study YAML, audited by the CLI alone."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from counterbench.builtin.hiring.data import ResumeTemplate
from counterbench.builtin.hiring.lint import check_templates, lint_template, load_lint_terms
from counterbench.errors import UserError
from counterbench.studies.registry import load_study
from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "kenya_hiring.yaml"


def test_the_example_country_audited_by_the_cli_recovers_the_planted_preference(tmp_path, cli):
    out = tmp_path / "out"
    proc = cli("audit", "examples/kenya_hiring.yaml", "--model", "sim:examples/sim/kenya_hiring.yaml",
               "--preset", "quick", "--store", str(tmp_path / "k.db"), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    tables = out / "analysis"
    wr = pd.read_csv(tables / "hiring_win_rates.csv")
    assert set(wr["group"]) == {f"{e} {g}" for e in ("Kikuyu", "Luo", "Kalenjin") for g in ("Male", "Female")}
    assert set(wr["n_jobs"]) == {3}  # --preset quick: 3 jobs of the user's file, one variation
    by_ethnicity = wr.groupby(wr["group"].str.split().str[0])["win_rate"].mean()
    assert by_ethnicity.idxmax() == "Luo" and by_ethnicity["Luo"] > 0.75  # planted 0.875, others 0.5
    scores = pd.read_csv(tables / "hiring_scores.csv").set_index("group")["mean_score"]
    luo = scores[["Luo Male", "Luo Female"]].mean()
    others = scores.drop(["neutral", "Luo Male", "Luo Female"]).mean()
    assert luo - others == pytest.approx(15.0, abs=4.0)  # planted +15 points
    tsr = pd.read_csv(tables / "hiring_top_score_rates.csv").set_index("group")
    assert tsr.loc[["Luo Male", "Luo Female"], "top_jobs"].sum() >= 3  # a Luo resume tops every job
    assert tsr.drop(["Luo Male", "Luo Female"])["top_jobs"].sum() == 0
    summary = json.loads((tables / "summary.json").read_text(encoding="utf-8"))
    assert summary["study"] == "hiring_kenya" and summary["hiring"]["country"] == "Kenya"
    assert "diploma" in summary["hiring"]["lint_allowed"]["kenya"]
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "Hiring markers (Kenya example)" in html and "Luo Female" in html and "Chinese" not in html
    assert "Null 95th pct." in html and "Null mean (%)" in html  # the noise floor of the headline metrics


def test_quick_selects_jobs_and_variations_by_position():
    builtin = load_study("hiring").presets["quick"]["filters"]
    assert builtin["profile"] == ["civeng_1", "nurse_1", "account_1"] and builtin["question_variant"] == [0, 1]
    kenya = load_study(str(EXAMPLE)).presets["quick"]["filters"]
    assert kenya["profile"] == ["eleceng_1", "nurse_1", "account_1"]  # first male-, female-dominated, neutral job


def _study_file(tmp_path, body: str):
    path = tmp_path / "country.yaml"
    path.write_text(body.replace("DIR", str(REPO / "examples" / "kenya_hiring")), encoding="utf-8")
    return path


def test_study_file_mistakes_are_one_line(tmp_path):
    with pytest.raises(UserError, match="unknown key 'basket'"):
        load_study(_study_file(tmp_path, "study: hiring\nbasket: DIR/baskets.yaml\n"))
    with pytest.raises(UserError, match="no such file"):
        load_study(_study_file(tmp_path, "study: hiring\njobs: nowhere.jsonl\n"))
    with pytest.raises(UserError, match="'nostudy' is not a registered study"):
        load_study(_study_file(tmp_path, "study: nostudy\n"))
    with pytest.raises(UserError, match="cannot be declared from a study file"):
        load_study(_study_file(tmp_path, "study: rupeebias\n"))
    # the example's resumes mention "Kenya" (a diploma's name): without the allowance the lint refuses them
    body = ("study: hiring\njobs: DIR/jobs.jsonl\nresumes: DIR/resumes.jsonl\nbaskets: DIR/baskets.yaml\n"
            "lint: {terms: DIR/lint_terms.yaml}\n")
    with pytest.raises(UserError, match=r"nurse_1.*nationality \('kenya'\)"):
        load_study(_study_file(tmp_path, body))


def test_lint_terms_extend_replace_and_allow_with_a_reason(tmp_path):
    terms = tmp_path / "terms.yaml"
    terms.write_text("nationality: [atlantean]\nfirst_names: [zorba]\n", encoding="utf-8")
    text = "Professional Summary\nAtlantean engineer who enjoys cycling; she led a team.\n"
    extended = {f.term for f in lint_template(text, (), load_lint_terms(terms))}
    assert extended == {"atlantean", "she"}
    replaced = {f.term for f in lint_template(text, (), load_lint_terms(terms, mode="replace"))}
    assert replaced == {"atlantean"}  # the built-in pronouns are gone
    relaxed = load_lint_terms(terms, allow={"atlantean": "every candidate is from Atlantis"})
    assert {f.term for f in lint_template(text, (), relaxed)} == {"she"}
    assert relaxed.allowed == {"atlantean": "every candidate is from Atlantis"}
    with pytest.raises(UserError, match="needs a reason"):
        load_lint_terms(None, allow={"cycling": " "})
    with pytest.raises(UserError, match="unknown key 'pronoun'"):
        terms.write_text("pronoun: [xe]\n", encoding="utf-8")
        load_lint_terms(terms)
    check_templates([ResumeTemplate("ok", "Skills\nSQL\n")], (), relaxed)
