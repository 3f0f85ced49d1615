"""A use case stored under another name its study declares (``use_case_aliases``) is analysed — and linked by the
viewer — under the study's own name; the core knows no study's names (RupeeBias's release name is its own data)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from counterbench.analyses.prepare import prepare_results, use_case_aliases
from counterbench.analyses.profiles import get_profile
from counterbench.studies.registry import STUDIES, register_study
from counterbench.viewer.server import analysis_aliases
from tests.conftest import REPO


def _results(study: str | None, use_cases: list[str]) -> pd.DataFrame:
    rows = [{"model": "m", "study": study, "use_case": uc, "language": "en", "axis": "a", "identifier": ident,
             "profile_id": f"P{p}", "question_variant": 0, "status": "ok", "value": 10.0 + p}
            for uc in use_cases for ident in ("x", "y") for p in range(3)]
    return pd.DataFrame(rows)


def test_rupeebias_release_name_is_analysed_under_the_study_name() -> None:
    prepared = prepare_results(_results("rupeebias", ["service_pricing_client"]), get_profile("default"))
    assert set(prepared.values["use_case"].astype(str)) == {"service_pricing_customer"}
    assert use_case_aliases(["rupeebias"]) == {"service_pricing_client": "service_pricing_customer"}


def test_without_a_study_declaring_it_a_name_is_kept() -> None:
    for study in (None, "a_study_file_not_registered"):
        prepared = prepare_results(_results(study, ["service_pricing_client"]), get_profile("default"))
        assert set(prepared.values["use_case"].astype(str)) == {"service_pricing_client"}


@pytest.fixture
def third_party(tmp_path: Path) -> Iterator[str]:
    text = (REPO / "examples" / "loan_rate.yaml").read_text(encoding="utf-8")
    path = tmp_path / "loans.yaml"
    declared = text.replace("  loan_rate:\n", "  loan_rate:\n    aliases: [interest_quote]\n", 1)
    path.write_text(declared, encoding="utf-8")
    register_study("loans_third_party", path)
    yield "loans_third_party"
    STUDIES.unregister("loans_third_party")


def test_a_registered_study_declares_its_own_aliases(third_party: str) -> None:
    prepared = prepare_results(_results(third_party, ["interest_quote", "loan_rate"]),
                               get_profile("default"))
    assert set(prepared.values["use_case"].astype(str)) == {"loan_rate"}
    assert analysis_aliases([third_party, "rupeebias"]) == {"use_case": {
        "interest_quote": "loan_rate", "service_pricing_client": "service_pricing_customer"}}
    assert analysis_aliases(["stem"]) == {}
