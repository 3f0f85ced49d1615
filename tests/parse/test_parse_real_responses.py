"""The parser on 88 real responses from the published RupeeBias runs (oracle, read-only).

The sample lives outside the project (``../shared/reference/rupeebias/``, see its README); the
tests skip when it is absent. Each record carries the release runner's ``validation_status``
(``valid``/``invalid``; ``null`` for 4 Sarvam rows, which are not compared).

Agreement under ``rupeebias-v1`` (and ``default``, which agrees on all of these):

- 77 valid rows -> ``ok`` and within the plausibility bounds: 77/77.
- 6 invalid ``### -1 INR`` rows -> ``unparseable``/``negative``: 6/6.
- 1 invalid ``### 125000000 INR`` counter-offer (the runner's old "Unrealistic amount" check,
  acceptable range ₹1 lakh–₹10 crore) -> ``ok`` with ``out_of_range=True``: the release's analysis
  parser kept that value, so by status alone agreement is 83/84; counting ``out_of_range`` as
  "invalid" it is 84/84.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.parse.rupeebias_types import answer_type

from counterbench.parse import parse_answer, parse_series

SAMPLE = (
    Path(__file__).resolve().parents[2] / ".." / "shared" / "reference" / "rupeebias" / "real_responses_sample.jsonl"
)

pytestmark = pytest.mark.skipif(not SAMPLE.exists(), reason=f"reference sample not found: {SAMPLE}")


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    with SAMPLE.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _agreement(records: list[dict[str, Any]], profile: str) -> tuple[int, int, int]:
    """(rows compared, agreeing by status, agreeing when out_of_range counts as invalid)."""
    compared = by_status = with_bounds = 0
    for record in records:
        expected = record["validation_status"]
        if expected is None:
            continue
        parsed = parse_answer(record["response"], answer_type(record["task"]), profile)
        compared += 1
        by_status += (parsed.status == "ok") == (expected == "valid")
        with_bounds += (parsed.status == "ok" and not parsed.out_of_range) == (expected == "valid")
    return compared, by_status, with_bounds


def test_sample_shape(records: list[dict[str, Any]]) -> None:
    assert len(records) == 88
    statuses = [r["validation_status"] for r in records]
    assert (statuses.count("valid"), statuses.count("invalid"), statuses.count(None)) == (77, 7, 4)


@pytest.mark.parametrize("profile", ["rupeebias-v1", "default"])
def test_agreement_with_release_validation(records: list[dict[str, Any]], profile: str) -> None:
    compared, by_status, with_bounds = _agreement(records, profile)
    assert compared == 84
    assert by_status == 83  # the one miss: 125,000,000 INR, valid to the analysis parser, flagged by us
    assert with_bounds == 84


@pytest.mark.parametrize("profile", ["rupeebias-v1", "default"])
def test_each_row(records: list[dict[str, Any]], profile: str) -> None:
    for record in records:
        parsed = parse_answer(record["response"], answer_type(record["task"]), profile)
        text = record["response"].strip()
        if text == "### -1 INR":
            assert (parsed.status, parsed.reason) == ("unparseable", "negative"), record
            continue
        assert parsed.status == "ok", record
        number = float(text.removeprefix("###").split()[0])
        if record["task"] in {"salary_estimation", "counter_offer_recommendation"}:
            # README: INR salary responses are divided by 1e5 to give LPA (3800000 -> 38.0)
            assert parsed.value == number and parsed.release_value == number / 1e5, record
            assert parsed.unit == "INR/year" and parsed.release_unit == "LPA"
        else:
            assert parsed.value == number == parsed.release_value, record
        assert parsed.out_of_range == (number == 125_000_000), record


def test_series_matches_scalar(records: list[dict[str, Any]]) -> None:
    import pandas as pd

    frame = pd.DataFrame(records)
    for profile in ("default", "rupeebias-v1"):
        table = parse_series(frame["response"], frame["task"].map(answer_type), profile=profile)
        for i, record in enumerate(records):
            one = parse_answer(record["response"], answer_type(record["task"]), profile)
            assert table["status"].iloc[i] == one.status
            assert table["reason"].iloc[i] == one.reason
            if one.value is None:
                assert pd.isna(table["value"].iloc[i])
            else:
                assert table["value"].iloc[i] == one.value
                assert table["release_value"].iloc[i] == one.release_value
