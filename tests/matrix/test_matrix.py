"""Every outcome kind × design recovers a planted effect through real HTTP, and a null twin gets no mark.

Each design's study has one use case per kind (``planted.py``); a local OpenAI-compatible server answers
with a rule on the prompt text that plants a known gap for one level (or one group). The audit's
``outcome_gaps`` table must mark the planted comparison with the right sign and an interval covering
the planted value, the finding must name it, and the same study answered without the effect must get
no mark at all. (The interval check allows 3 standard errors, so that a fixed data set does not fail
one cell in twenty by chance.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import counterbench
from counterbench.testing._fakecore import FaultConfig, run_in_thread
from counterbench.testing.fake_openai import FakeOpenAIServer
from tests.matrix.planted import DESIGNS, KINDS, PLANTED_GROUP, PLANTED_LEVEL, Planted, reply, use_case, write_study

PLANTED = Planted()


def _audit(tmp: Path, design: str, planted: Planted | None) -> Any:
    study = write_study(tmp, design)
    with run_in_thread(FakeOpenAIServer(FaultConfig(reply=reply(planted)))) as server:
        return counterbench.audit(str(study), [f"m=openai-compatible:{server.base_url}:matrix"],
                                  store=tmp / "cb.db", out=tmp / "out", bootstrap=400, concurrency=16)


@pytest.fixture(scope="module", params=DESIGNS)
def audited(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Any, Any]:
    design = str(request.param)
    planted = _audit(tmp_path_factory.mktemp(f"{design}_planted"), design, PLANTED)
    null = _audit(tmp_path_factory.mktemp(f"{design}_null"), design, None)
    return design, planted, null


def _planted_rows(gaps: pd.DataFrame, design: str, kind: str) -> pd.DataFrame:
    rows = gaps[gaps["use_case"] == use_case(kind)]
    if design == "grouped":
        return rows[(rows["facet_kind"] == "group") & (rows["comparison"] == PLANTED_GROUP)]
    return rows[rows["comparison"] == PLANTED_LEVEL]


@pytest.mark.parametrize("kind", KINDS)
def test_the_planted_gap_is_marked_with_its_sign_and_covered(audited: tuple[str, Any, Any], kind: str) -> None:
    design, planted, _ = audited
    gaps = planted.analysis.tables["outcome_gaps"]
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


@pytest.mark.parametrize("kind", KINDS)
def test_the_finding_names_the_planted_level(audited: tuple[str, Any, Any], kind: str) -> None:
    design, planted, _ = audited
    name = PLANTED_GROUP if design == "grouped" else PLANTED_LEVEL
    findings = [f for f in planted.analysis.summary.get("findings", []) if name in f and use_case(kind) in f]
    assert findings, f"{design}: no finding names {name}: {planted.analysis.summary.get('findings')}"


@pytest.mark.parametrize("kind", KINDS)
def test_the_null_twin_gets_no_mark(audited: tuple[str, Any, Any], kind: str) -> None:
    design, _, null = audited
    gaps = null.analysis.tables["outcome_gaps"]
    marked = gaps[(gaps["use_case"] == use_case(kind)) & gaps["significant"].astype(bool)]
    assert marked.empty, f"{design}/{kind}: the null twin has marks:\n{marked}"
