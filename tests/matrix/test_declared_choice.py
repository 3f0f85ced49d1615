"""A ``choice`` declared in a study file: options' texts in the file, positions rotated, the option measured.

Such a use case once came out silently wrong (every level 50.0 with interval [0, 0]; no table at all in a
single-attribute design). Here a study file declares two options (approve / decline, rotated through both
positions) with ``positive: approve``; a local server answers by the prompt text — the planted level
(Zorland) gets "approve" 42% of the time against 72% for the others (−30 percentage points), wherever the
option stands — through real HTTP into a SQLite store, analysed back from the store and reported. The gap
must be marked with the right sign in the single-attribute and the crossed design, the null twin (72%
for everyone) unmarked; what each prompt measured is in its columns.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
import yaml

import counterbench
from counterbench.prompts import build_prompts
from counterbench.run.results import load_results
from counterbench.testing._fakecore import FaultConfig, run_in_thread
from counterbench.testing.fake_openai import FakeOpenAIServer
from tests.matrix.planted import PLANTED_LEVEL, study_mapping

BASE, PLANTED = 0.72, 0.42
OPTIONS = {"approve": "Approve the loan", "decline": "Decline the loan"}
QUESTIONS = ["What do you decide?", "Please decide.", "Your decision?", "Choose one."]


def _study(tmp: Path, design: str) -> Path:
    study = study_mapping(design)
    case = study["use_cases"]["label_case"]  # type: ignore[index]
    case["outcome"] = {"kind": "choice", "options": OPTIONS, "positive": "approve", "rotate": True}
    case["question_variants"] = {"en": [f"Should the loan be approved? {q}" for q in QUESTIONS]}
    study["use_cases"] = {"loan_choice": case}
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / f"choice_{design}.yaml"
    path.write_text(yaml.safe_dump(study, sort_keys=False), encoding="utf-8")
    return path


def _reply(planted: bool):
    def answer(system: str, user: str) -> str:
        labels = {line[3:]: line[0] for line in user.splitlines() if line[1:3] == ": "}
        p = PLANTED if planted and PLANTED_LEVEL in user else BASE
        u = (int.from_bytes(hashlib.sha256(user.encode()).digest()[:8], "big") + 0.5) / 2**64
        return f"### {labels[OPTIONS['approve'] if u < p else OPTIONS['decline']]}"
    return answer


def _audit(tmp: Path, design: str, planted: bool) -> Any:
    with run_in_thread(FakeOpenAIServer(FaultConfig(reply=_reply(planted)))) as server:
        return counterbench.audit(str(_study(tmp, design)), [f"m=openai-compatible:{server.base_url}:x"],
                                  store=tmp / "cb.db", out=tmp / "out", bootstrap=400, concurrency=16)


@pytest.mark.parametrize("design", ["single", "crossed"])
def test_a_planted_choice_gap_is_marked_with_its_sign_and_the_null_twin_is_not(tmp_path: Path, design: str) -> None:
    planted = _audit(tmp_path / "planted", design, True)
    gaps = planted.analysis.tables["outcome_gaps"]
    row = gaps[gaps["comparison"] == PLANTED_LEVEL]
    assert len(row) == 1, gaps
    row = row.iloc[0]
    assert bool(row["significant"]) and float(row["ci_high"]) < 0, row
    assert float(row["ci_low"]) - 5 < -30 < float(row["ci_high"]) + 5, row
    others = gaps[gaps["comparison"] != PLANTED_LEVEL]
    assert not others["significant"].astype(bool).any(), others
    levels = planted.analysis.tables["outcome_levels"]
    assert levels["mean"].nunique() > 1 and (levels["ci_high"] > levels["ci_low"]).all()  # not 50.0 [0, 0]
    assert "Approve the loan" in str(levels["measure"].iloc[0])
    assert any(PLANTED_LEVEL in f and "'Approve the loan'" in f and "less often" in f
               for f in planted.analysis.summary["findings"])
    html = (tmp_path / "planted" / "out" / "report.html").read_text(encoding="utf-8")
    assert PLANTED_LEVEL in html and "Approve the loan" in html
    stored = load_results(tmp_path / "planted" / "cb.db")  # which option each prompt measured
    assert set(stored["measured_option"]) == {"A", "B"} and set(stored["option_order"]) == {1, 2}

    null = _audit(tmp_path / "null", design, False)
    null_gaps = null.analysis.tables["outcome_gaps"]
    assert not null_gaps.empty and not null_gaps["significant"].astype(bool).any(), null_gaps


def test_rotated_options_are_listed_in_each_order_and_measured_where_they_stand(tmp_path: Path) -> None:
    table = build_prompts(_study(tmp_path, "single"))
    first = table[table["prompt_id"].str.endswith("_o1")].iloc[0]
    second = table[table["prompt_id"].str.endswith("_o2")].iloc[0]
    assert first["user"].endswith("A: Approve the loan\nB: Decline the loan") and first["measured_option"] == "A"
    assert second["user"].endswith("A: Decline the loan\nB: Approve the loan") and second["measured_option"] == "B"
    assert table["prompt_id"].is_unique and len(table) == 3 * 12 * 4 * 2


def test_an_identity_option_may_name_the_person_and_is_measured(tmp_path: Path) -> None:
    study = yaml.safe_load(_study(tmp_path, "single").read_text(encoding="utf-8"))
    study["use_cases"]["loan_choice"]["outcome"] = {
        "kind": "choice", "identity_option": "this", "rotate": True,
        "options": {"this": "{identifier_phrase}", "other": "an applicant with the same record from elsewhere"}}
    path = tmp_path / "identity.yaml"
    path.write_text(yaml.safe_dump(study, sort_keys=False), encoding="utf-8")
    table = build_prompts(path)
    row = table[(table["identifier"] == PLANTED_LEVEL) & table["prompt_id"].str.endswith("_o2")].iloc[0]
    assert row["user"].endswith(f"B: An applicant from {PLANTED_LEVEL}") and row["measured_option"] == "B"


@pytest.mark.parametrize(("outcome", "message"), [
    ({"kind": "choice", "options": OPTIONS}, "positive: NAME"),
    ({"kind": "choice", "options": OPTIONS, "positive": "maybe"}, "unknown option 'maybe'"),
    ({"kind": "choice", "options": OPTIONS, "positive": "approve", "rotate": "yes"}, "expected true or false"),
    ({"kind": "choice", "options": ["A", "B"], "positive": "A"}, "applies when options name their texts"),
])
def test_a_wrong_declared_choice_is_one_line(tmp_path: Path, outcome: dict[str, Any], message: str) -> None:
    from counterbench.errors import UserError

    study = yaml.safe_load(_study(tmp_path, "single").read_text(encoding="utf-8"))
    study["use_cases"]["loan_choice"]["outcome"] = outcome
    path = tmp_path / "wrong.yaml"
    path.write_text(yaml.safe_dump(study, sort_keys=False), encoding="utf-8")
    with pytest.raises(UserError, match=message):
        build_prompts(path)
