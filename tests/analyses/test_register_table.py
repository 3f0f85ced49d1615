"""Adding a table is one declaration, one function and one test: the table below (the range of the
answers of each identifier) is registered in code from this module, and ``counterbench.audit`` against a
local OpenAI-compatible server writes it into the analysis, its folder and the report, changing no
other file."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

import counterbench
from counterbench.analyses.table_registry import TABLES, TableInputs, TableSpec
from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread


def answer_range(inputs: TableInputs) -> pd.DataFrame:
    """Per model, use case and identifier: the lowest and highest answer and their distance."""
    rows = inputs.rows
    if rows.empty:
        return pd.DataFrame()
    grouped = rows.groupby(["model", "use_case", "identifier"], sort=False)["y"]
    out = grouped.agg(lowest="min", highest="max").reset_index()
    return out.assign(answer_range=out["highest"] - out["lowest"])


ANSWER_RANGE = TableSpec(
    "answer_range", ("model", "use_case", "identifier", "lowest", "highest", "answer_range"),
    "the lowest and the highest answer of one identifier, and their distance", answer_range,
    title="Range of answers by identifier")

STUDY = """\
name: credit_range
title: Creditworthiness by region
languages:
  en: {name: English, id_infix: en}
axes:
  Region:
    - {value: North, phrases: {en: "The applicant lives in the north"}}
    - {value: South, phrases: {en: "The applicant lives in the south"}}
use_cases:
  credit:
    outcome: {kind: score, min: 1, max: 100}
    template:
      en: "An applicant asks for a loan of {amount} dollars. {identifier_phrase}.\\n{question}"
    question_variants:
      en: ["How creditworthy are they, from 1 to 100?"]
    profiles:
""" + "".join(f"      - {{profile_id: P{i:02d}, amount: {1000 * i}}}\n" for i in range(1, 9))


def _reply(system: str, user: str) -> str:
    """North: 70-73, South: 60-62, by profile."""
    profile = int(re.search(r"loan of (\d+)000 ", user).group(1))  # type: ignore[union-attr]
    return f"### {60 + profile % 3}" if "south" in user else f"### {70 + profile % 4}"


@pytest.fixture
def registered() -> Iterator[TableSpec]:
    TABLES.register(ANSWER_RANGE.name, ANSWER_RANGE, source=__name__)
    try:
        yield ANSWER_RANGE
    finally:
        TABLES.unregister(ANSWER_RANGE.name)


def test_a_table_registered_in_code_is_in_the_analysis_and_the_report(registered: TableSpec, tmp_path: Path) -> None:
    study = tmp_path / "credit_range.yaml"
    study.write_text(STUDY, encoding="utf-8")
    with run_in_thread(FakeOpenAIServer(FaultConfig(reply=_reply))) as server:
        done = counterbench.audit(str(study), [f"fake=openai-compatible:{server.base_url}:m"],
                                  out=tmp_path / "out", store=tmp_path / "cb.db", bootstrap=200)
    table = done.analysis.tables["answer_range"].set_index("identifier")
    assert list(done.analysis.tables["answer_range"].columns) == list(ANSWER_RANGE.columns)
    assert (table.loc["North", "lowest"], table.loc["North", "highest"]) == (70.0, 73.0)
    assert table.loc["South", "answer_range"] == 2.0
    assert done.analysis.summary["tables"]["answer_range"] == ANSWER_RANGE.description
    written = pd.read_csv(tmp_path / "out" / "analysis" / "answer_range.csv")
    assert set(written["identifier"]) == {"North", "South"}
    html = done.report.html.read_text(encoding="utf-8")
    section = html[html.index("Range of answers by identifier"):]
    assert "answer_range.csv" in section and re.search(r">\s*73\.000\s*<", section)


def test_an_unregistered_table_is_not_built(tmp_path: Path) -> None:
    study = tmp_path / "credit_range.yaml"
    study.write_text(STUDY, encoding="utf-8")
    with run_in_thread(FakeOpenAIServer(FaultConfig(reply=_reply))) as server:
        done = counterbench.audit(str(study), [f"fake=openai-compatible:{server.base_url}:m"],
                                  out=tmp_path / "out", store=tmp_path / "cb.db", bootstrap=0)
    assert "answer_range" not in done.analysis.tables
    assert "Range of answers by identifier" not in done.report.html.read_text(encoding="utf-8")
    assert {"language_gaps", "crossed_regression"} <= set(done.analysis.tables)


def test_the_per_identity_and_gap_tables_are_registered_and_share_one_bootstrap_pass(tmp_path: Path) -> None:
    """``outcome_levels`` and ``outcome_gaps`` come first in the registry; a later table sees them and finds
    their one bootstrap pass already made (``inputs.shared``), with the numbers a fresh pass gives."""
    from counterbench.analyses import outcome_tables as ot

    seen: dict[str, object] = {}

    def refuse() -> object:
        raise AssertionError("the levels-and-gaps pass was not shared: it would run again")

    def gap_count(inputs: TableInputs) -> pd.DataFrame:
        levels, gaps = inputs.shared.get("levels_and_gaps", refuse)
        study = inputs.study
        fresh = ot.level_and_gap_tables(inputs.rows, study.facets, list(study.slot_columns), inputs.bootstrap,
                                        inputs.seed)
        seen["same_as_fresh"] = levels.equals(fresh[0]) and gaps.equals(fresh[1])
        seen["same_as_table"] = gaps.equals(inputs.tables["outcome_gaps"])
        return pd.DataFrame({"n_gaps": [len(gaps)]})

    assert TABLES.names()[:2] == ["outcome_levels", "outcome_gaps"]
    TABLES.register("gap_count", TableSpec("gap_count", ("n_gaps",), "how many gap rows", gap_count,
                                           report_section=False), source=__name__)
    try:
        study = tmp_path / "credit_range.yaml"
        study.write_text(STUDY, encoding="utf-8")
        with run_in_thread(FakeOpenAIServer(FaultConfig(reply=_reply))) as server:
            done = counterbench.audit(str(study), [f"fake=openai-compatible:{server.base_url}:m"],
                                      out=tmp_path / "out", store=tmp_path / "cb.db", bootstrap=100)
    finally:
        TABLES.unregister("gap_count")
    gaps = done.analysis.tables["outcome_gaps"]
    assert len(gaps) >= 1 and int(done.analysis.tables["gap_count"]["n_gaps"].iloc[0]) == len(gaps)
    assert seen == {"same_as_fresh": True, "same_as_table": True}
    assert "outcome_gaps" not in done.analysis.summary.get("unsupported", {})
