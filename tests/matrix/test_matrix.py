"""Every outcome kind × design recovers a planted effect through real HTTP, and a null twin gets no mark.

Each design's study has one use case per kind (``planted.py``); a local OpenAI-compatible server answers
with a rule on the prompt text that plants a known gap for one level (or one group). The audit's
``outcome_gaps`` table must mark the planted comparison with the right sign and an interval covering
the planted value, the finding must name it, and the same study answered without the effect must get
no mark at all. The ``choice`` kind (two applicants per prompt) is a Python study in every design
(``choice_study.py``), audited the same way. (The interval check allows 3 standard errors, so that a
fixed data set does not fail one cell in twenty by chance.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import counterbench
from counterbench.testing._fakecore import FaultConfig, run_in_thread
from counterbench.testing.fake_openai import FakeOpenAIServer
from tests.matrix.choice_study import ChoiceMatrixStudy
from tests.matrix.planted import (
    DESIGNS,
    KINDS,
    PLANTED_GROUP,
    PLANTED_LEVEL,
    Planted,
    reply,
    use_case,
    use_case_words,
    write_study,
)

PLANTED = Planted()


def _audit(tmp: Path, design: str, planted: Planted | None, study: Any = None) -> Any:
    study = study if study is not None else str(write_study(tmp, design))
    with run_in_thread(FakeOpenAIServer(FaultConfig(reply=reply(planted)))) as server:
        return counterbench.audit(study, [f"m=openai-compatible:{server.base_url}:matrix"],
                                  store=tmp / "cb.db", out=tmp / "out", bootstrap=400, concurrency=16)


@pytest.fixture(scope="module", params=DESIGNS)
def audited(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Any, Any]:
    design = str(request.param)
    planted = _audit(tmp_path_factory.mktemp(f"{design}_planted"), design, PLANTED)
    null = _audit(tmp_path_factory.mktemp(f"{design}_null"), design, None)
    return design, planted, null


@pytest.fixture(scope="module", params=DESIGNS)
def choice_audited(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
                   ) -> tuple[str, Any, Any]:
    design = str(request.param)
    planted = _audit(tmp_path_factory.mktemp(f"choice_{design}_planted"), design, PLANTED, ChoiceMatrixStudy(design))
    null = _audit(tmp_path_factory.mktemp(f"choice_{design}_null"), design, None, ChoiceMatrixStudy(design))
    return design, planted, null


def _planted_rows(gaps: pd.DataFrame, design: str, kind: str) -> pd.DataFrame:
    rows = gaps[gaps["use_case"] == use_case(kind)]
    if design == "grouped":
        return rows[(rows["facet_kind"] == "group") & (rows["comparison"] == PLANTED_GROUP)]
    return rows[rows["comparison"] == PLANTED_LEVEL]


def _check_planted_gap(design: str, kind: str, result: Any) -> None:
    gaps = result.analysis.tables["outcome_gaps"]
    rows = _planted_rows(gaps, design, kind)
    mine = gaps[gaps["use_case"] == use_case(kind)]
    assert len(rows) == 1, f"{design}/{kind}: no gap row for the planted level:\n{mine}"
    row = rows.iloc[0]
    truth = PLANTED.truth(kind)
    columns = ("relative_ci_low", "relative_ci_high") if kind == "amount" else ("ci_low", "ci_high")
    low, high = float(row[columns[0]]), float(row[columns[1]])
    assert bool(row["significant"]), f"{design}/{kind}: planted gap not marked:\n{row}"
    assert high < 0, f"{design}/{kind}: wrong sign:\n{row}"
    # the 95% interval widened to 3 standard errors: a fixed data set misses a 95% interval 1 time in 20
    centre, half = (low + high) / 2, (high - low) / 2 * 3 / 1.96
    assert centre - half <= truth <= centre + half, (
        f"{design}/{kind}: interval [{low}, {high}] (3 SE: ±{half:.3g}) misses the planted {truth}")


def _check_finding(design: str, kind: str, result: Any) -> None:
    name = PLANTED_GROUP if design == "grouped" else PLANTED_LEVEL
    findings = [f for f in result.analysis.summary.get("findings", []) if name in f and use_case_words(kind) in f]
    assert findings, f"{design}: no finding names {name}: {result.analysis.summary.get('findings')}"


def _check_null(design: str, kind: str, result: Any) -> None:
    gaps = result.analysis.tables["outcome_gaps"]
    assert not gaps[gaps["use_case"] == use_case(kind)].empty, f"{design}/{kind}: the null twin has no gap rows"
    marked = gaps[(gaps["use_case"] == use_case(kind)) & gaps["significant"].astype(bool)]
    assert marked.empty, f"{design}/{kind}: the null twin has marks:\n{marked}"


@pytest.mark.parametrize("kind", KINDS)
def test_the_planted_gap_is_marked_with_its_sign_and_covered(audited: tuple[str, Any, Any], kind: str) -> None:
    _check_planted_gap(audited[0], kind, audited[1])


@pytest.mark.parametrize("kind", KINDS)
def test_the_finding_names_the_planted_level(audited: tuple[str, Any, Any], kind: str) -> None:
    _check_finding(audited[0], kind, audited[1])


@pytest.mark.parametrize("kind", KINDS)
def test_the_null_twin_gets_no_mark(audited: tuple[str, Any, Any], kind: str) -> None:
    _check_null(audited[0], kind, audited[2])


def test_choice_planted_gap_is_marked_with_its_sign_and_covered(choice_audited: tuple[str, Any, Any]) -> None:
    _check_planted_gap(choice_audited[0], "choice", choice_audited[1])


def test_choice_finding_names_the_planted_level(choice_audited: tuple[str, Any, Any]) -> None:
    _check_finding(choice_audited[0], "choice", choice_audited[1])


def test_choice_null_twin_gets_no_mark(choice_audited: tuple[str, Any, Any]) -> None:
    _check_null(choice_audited[0], "choice", choice_audited[2])
