"""A crossed design with an amount use case and canonical pairs runs to a report through real HTTP.

Such a study once crashed after the whole run (``KeyError: 'model'`` in the power table): the amount
analysis's values carry the combination of levels as the identifier, not the pair's attribute column.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import yaml

import counterbench
from counterbench.testing._fakecore import FaultConfig, run_in_thread
from counterbench.testing.fake_openai import FakeOpenAIServer
from tests.matrix.planted import PLANTED_LEVEL, Planted, reply, study_mapping, use_case


def _audit(tmp: Path) -> Any:
    study = study_mapping("crossed")
    study["use_cases"] = {use_case("amount"): study["use_cases"][use_case("amount")]}  # type: ignore[index]
    study["canonical_pairs"] = {"origin": ["Avaland", PLANTED_LEVEL], "age": ["30", "50"]}
    path = tmp / "crossed_amount.yaml"
    path.write_text(yaml.safe_dump(study, sort_keys=False), encoding="utf-8")
    with run_in_thread(FakeOpenAIServer(FaultConfig(reply=reply(Planted())))) as server:
        return counterbench.audit(str(path), [f"m=openai-compatible:{server.base_url}:matrix"],
                                  store=tmp / "cb.db", out=tmp / "out", bootstrap=200, concurrency=8)


def test_crossed_amount_study_with_canonical_pairs_reports(tmp_path: Path) -> None:
    result = _audit(tmp_path)
    assert (tmp_path / "out" / "report.html").is_file()
    gaps = result.analysis.tables["outcome_gaps"]
    planted = gaps[gaps["comparison"] == PLANTED_LEVEL].iloc[0]
    assert bool(planted["significant"]) and float(planted["relative_ci_high"]) < 0
    # ... and said in words: the canonical pairs here are attribute levels, which the amount analysis's pair
    # finding (pairs of identifiers) does not compare, so the generic finding speaks for the amount use case
    # (its findings were empty)
    said = [line for line in result.analysis.summary["findings"] if "less than Avaland" in line]
    assert said and PLANTED_LEVEL in said[0] and "origin" in said[0], result.analysis.summary["findings"]
    power = result.analysis.tables["power"]
    origin = power[(power["axis"] == "origin") & power["use_case"].notna()]
    assert len(origin) == 1 and set(power["axis"]) == {"origin", "age"}
    row = origin.iloc[0]
    assert (row["reference"], row["comparison"]) == ("Avaland", PLANTED_LEVEL)
    assert 0.02 < float(row["noise_sd"]) < 0.04  # the planted noise: 3% of the answer (log scale)
    assert int(row["n_slots"]) == 24 and 0 < float(row["mde"]) < 10


def test_power_of_pairs_no_answer_matches_is_empty_not_a_crash() -> None:
    from counterbench.analyses.power import power_table

    values = pd.DataFrame({"model": ["m"] * 4, "language": "en", "use_case": "u", "axis": "crossed",
                           "identifier": ["a · 1", "b · 1", "a · 2", "b · 2"], "profile_id": "P1",
                           "question_variant": 1, "value": [1.0, 2.0, 1.5, 2.5]})
    assert power_table(values, {"race": ("white", "Black")}).empty
