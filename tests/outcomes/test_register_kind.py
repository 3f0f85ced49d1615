"""Adding an outcome kind is one module and its test: the kind ``docs/extending.md`` defines (a stated
probability, 0-100; its code block, run as it stands) is registered in code, a tiny YAML study uses it,
and ``counterbench.audit`` against a local OpenAI-compatible server finds the planted gap in the generic
tables."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import counterbench
from counterbench.outcomes import KINDS, get_kind, kind_names, spec_from_answer_type
from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread
from tests.conftest import REPO
from tests.test_docs import _python_block


def _guides_kind() -> Any:
    """The kind ``docs/extending.md`` shows (its code block, run as it stands)."""
    scope: dict[str, Any] = {}
    exec(_python_block((REPO / "docs" / "extending.md").read_text(encoding="utf-8"), "## An outcome kind"), scope)
    return scope["KIND"]


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
def probability_kind() -> Iterator[Any]:
    kind = _guides_kind()
    KINDS.register("probability", kind, source=__name__)
    try:
        yield kind
    finally:
        KINDS.unregister("probability")
        spec_from_answer_type.cache_clear()


def test_a_kind_registered_in_code_is_audited_end_to_end(probability_kind: Any, tmp_path: Path) -> None:
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
