"""Adding an outcome kind is one module and its test: a kind defined here (a stated probability, 0-100)
is registered in code, a tiny YAML study uses it, and ``counterbench.audit`` against a local
OpenAI-compatible server finds the planted gap in the generic tables."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import counterbench
from counterbench.outcomes import KINDS, get_kind, kind_names, spec_from_answer_type
from counterbench.outcomes.base import Constraint, OutcomeSpec
from counterbench.outcomes.common import check_keys
from counterbench.parse.result import ParsedAnswer
from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread

_ANSWER = re.compile(r"###\s*(\d{1,3})\b")


class ProbabilityKind:
    """A probability the model states, 0 to 100; two groups differ in percentage points."""

    name, keys, difference_unit = "probability", (), "percentage points"
    usable_answer = "a probability from 0 to 100"

    def describe(self, spec: OutcomeSpec) -> str:
        return "mean stated probability (%)"

    def spec(self, raw: Mapping[str, Any], fail: Any) -> OutcomeSpec:
        check_keys(raw, self.keys, fail)
        return OutcomeSpec("probability")

    def decode(self, text: str) -> OutcomeSpec:
        return OutcomeSpec("probability")

    def instruction(self, spec: OutcomeSpec) -> str:
        return "Answer with one probability from 0 to 100 as: ### <NUMBER>"

    def constraint(self, spec: OutcomeSpec) -> Constraint:
        return Constraint("probability", r"^### (100|[1-9]?[0-9])$", 'root ::= "### " [0-9] [0-9]?\n')

    def parse(self, spec: OutcomeSpec, text: str | None, profile: str) -> ParsedAnswer:
        found = _ANSWER.search(text or "")
        if found is None or int(found.group(1)) > 100:
            return ParsedAnswer("unparseable", reason="no_probability")
        return ParsedAnswer("ok", value=float(found.group(1)), unit="%")

    def simulate(self, spec: OutcomeSpec, latent: float, u: float) -> str:
        return f"### {min(max(round(latent), 0), 100)}"

    def measure(self, spec: OutcomeSpec, values: pd.DataFrame) -> np.ndarray:
        return pd.to_numeric(values["value"], errors="coerce").to_numpy(np.float64)


STUDY = """\
name: approval_probability
title: Stated approval probability
languages:
  en: {name: English, id_infix: en}
axes:
  Region:
    - {value: North, phrases: {en: "The applicant lives in the north"}}
    - {value: South, phrases: {en: "The applicant lives in the south"}}
use_cases:
  approval:
    outcome: {kind: probability}
    template:
      en: "An applicant asks for a loan of {amount} dollars. {identifier_phrase}.\\n{question}"
    question_variants:
      en:
        - "How likely, from 0 to 100, is this loan to be approved?"
        - "Give the chance, 0 to 100, that the loan is approved."
    profiles:
"""
PROFILES = "".join(f"      - {{profile_id: P{i:02d}, amount: {1000 * i}}}\n" for i in range(1, 13))


def _reply(system: str, user: str) -> str:
    """About 70 for the north and 60 for the south (a planted -10 points), with a wobble per profile."""
    profile = int(re.search(r"loan of (\d+)000 ", user).group(1))  # type: ignore[union-attr]
    return f"### {60 + profile % 3}" if "south" in user else f"### {70 + profile % 4}"


@pytest.fixture
def probability_kind() -> Iterator[ProbabilityKind]:
    kind = ProbabilityKind()
    KINDS.register("probability", kind, source=__name__)
    try:
        yield kind
    finally:
        KINDS.unregister("probability")
        spec_from_answer_type.cache_clear()


def test_a_kind_registered_in_code_is_audited_end_to_end(probability_kind: ProbabilityKind, tmp_path: Path) -> None:
    assert "probability" in kind_names() and get_kind("probability") is probability_kind
    study = tmp_path / "approval_probability.yaml"
    study.write_text(STUDY + PROFILES, encoding="utf-8")
    with run_in_thread(FakeOpenAIServer(FaultConfig(reply=_reply))) as server:
        done = counterbench.audit(str(study), [f"fake=openai-compatible:{server.base_url}:m"],
                                  out=tmp_path / "out", store=tmp_path / "cb.db", bootstrap=300)
    assert done.run.complete and done.run.totals["ok"] == 48
    levels = done.analysis.tables["outcome_levels"].set_index("level")
    assert levels.loc["North", "mean"] == pytest.approx(71.5) and levels.loc["South", "mean"] == pytest.approx(61.0)
    south = done.analysis.tables["outcome_gaps"].set_index("comparison").loc["South"]
    assert south["reference"] == "North" and south["difference"] == pytest.approx(-10.5)
    assert south["ci_low"] < -10.5 < south["ci_high"]
    assert south["difference_unit"] == "percentage points" and bool(south["significant"])
    assert (tmp_path / "out" / "analysis" / "outcome_gaps.csv").is_file()
    assert "Stated approval probability" in done.report.html.read_text(encoding="utf-8")


def test_an_unregistered_kind_is_refused_with_the_known_names() -> None:
    with pytest.raises(counterbench.UserError, match=r"unknown outcome kind 'probability' \(one of: amount, "):
        get_kind("probability")
