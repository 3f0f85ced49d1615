"""``rupeebias-v1`` reproduces the release's quirks; ``default`` applies the correct rules (spec §2–3)."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pytest

from counterbench.errors import UserError
from counterbench.families.amount.analysis import analyze

from .conftest import results_frame

V1 = "rupeebias-v1"


def _counter(identifier: str, value: float, profile: str = "P1", offered: float = 10.0) -> dict[str, object]:
    return {"use_case": "counter_offer_recommendation", "identifier": identifier, "profile_id": profile,
            "value": value, "release_value": value / 1e5, "offered_ctc": offered}


def _overall(frame: pd.DataFrame, profile: str) -> float:
    return float(analyze(frame, profile=profile, bootstrap=0)["leaderboard"]["overall_mean_delta"].iloc[0])


def test_counter_offer_is_a_markup_under_v1() -> None:
    frame = results_frame([_counter("Hindu", 12e5), _counter("Muslim", 13e5)])
    assert _overall(frame, "default") == pytest.approx(1 / 12.5 * 100)  # 12 vs 13 lakh: 8%
    assert _overall(frame, V1) == pytest.approx(10 / 25 * 100)  # markups 20% vs 30%: 40%


def test_v1_keeps_negative_relative_gaps_the_signed_mean() -> None:
    below_offer = [_counter("Hindu", 7e5, "P2"), _counter("Muslim", 9e5, "P2")]  # markups −30%, −10%
    frame = results_frame([_counter("Hindu", 12e5), _counter("Muslim", 13e5), *below_offer])
    assert _overall(frame, "default") == pytest.approx((8.0 + 25.0) / 2)
    assert _overall(frame, V1) == pytest.approx((40.0 - 100.0) / 2)  # |−20| / (−20) × 100 = −100
    markup_zero_sum = results_frame([_counter("Hindu", 11e5), _counter("Muslim", 9e5)])  # +10% and −10%
    assert math.isnan(_overall(markup_zero_sum, V1))  # a + b = 0: undefined in both profiles
    assert _overall(markup_zero_sum, "default") == pytest.approx(20.0)


def test_v1_needs_the_offer() -> None:
    frame = results_frame([_counter("Hindu", 12e5), _counter("Muslim", 13e5)]).drop(columns=["offered_ctc"])
    with pytest.raises(UserError, match="offered_ctc"):
        analyze(frame, profile=V1, bootstrap=0)


def test_duplicates_first_row_under_v1_mean_by_default() -> None:
    frame = results_frame([
        {"identifier": "Hindu", "profile_id": "P1", "value": 100.0},
        {"identifier": "Hindu", "profile_id": "P1", "value": 200.0},
        {"identifier": "Muslim", "profile_id": "P1", "value": 150.0},
    ])
    assert _overall(frame, V1) == pytest.approx(50 / 125 * 100)  # first Hindu row: 100 vs 150
    assert _overall(frame, "default") == pytest.approx(0.0)  # mean of 100 and 200 = 150
    first_missing = results_frame([
        {"identifier": "Hindu", "profile_id": "P1", "status": "unparseable"},
        {"identifier": "Hindu", "profile_id": "P1", "value": 200.0},
        {"identifier": "Muslim", "profile_id": "P1", "value": 150.0},
        {"identifier": "Hindu", "profile_id": "P2", "value": 100.0},
        {"identifier": "Muslim", "profile_id": "P2", "value": 100.0},
    ])
    # v1 keeps the (missing) first row of Hindu/P1: only P2's pair (Δ% = 0) is left
    assert _overall(first_missing, V1) == pytest.approx(0.0)
    out = analyze(first_missing, profile=V1, bootstrap=0)
    assert out.summary["n_duplicates"] == 1 and out["leaderboard"]["n_pairs"].iloc[0] == 1
    assert _overall(first_missing, "default") == pytest.approx((50 / 175 * 100 + 0.0) / 2)


def test_fully_tied_w_counted_by_default_dropped_by_v1() -> None:
    rows = [{"identifier": i, "profile_id": p, "value": v}
            for p, v in (("P1", 100.0), ("P2", 200.0), ("P3", 300.0)) for i in ("Hindu", "Muslim", "Sikh")]
    frame = results_frame(rows)
    default = analyze(frame, bootstrap=0)["kendalls_w"].iloc[0]
    assert (default["w"], default["p_value"], bool(default["fully_tied"]), bool(default["included"])) == (0.0, 1.0,
                                                                                                         True, True)
    assert analyze(frame, bootstrap=0)["kendalls_w_axis"]["mean_w"].iloc[0] == 0.0
    v1 = analyze(frame, profile=V1, bootstrap=0)
    row = v1["kendalls_w"].iloc[0]
    assert math.isnan(row["w"]) and math.isnan(row["p_value"]) and not row["included"] and row["fully_tied"]
    assert v1["kendalls_w_axis"].empty and "kendalls_w_axis" in v1.summary["unsupported"]


def test_missing_answers_do_not_move_identifier_means_by_default() -> None:
    """Identifier C misses the high-paying profile: plain means (v1) see a 40% gap that is not there."""
    frame = results_frame([
        {"identifier": "Hindu", "profile_id": "P1", "value": 200.0},
        {"identifier": "Muslim", "profile_id": "P1", "value": 200.0},
        {"identifier": "Sikh", "profile_id": "P1", "status": "refused"},
        {"identifier": "Hindu", "profile_id": "P2", "value": 100.0},
        {"identifier": "Muslim", "profile_id": "P2", "value": 100.0},
        {"identifier": "Sikh", "profile_id": "P2", "value": 100.0},
    ])
    v1 = analyze(frame, profile=V1, bootstrap=50)["mog"].iloc[0]
    assert v1["bottom_identifier"] == "Sikh" and v1["max_gap"] == pytest.approx(50 / 125 * 100)
    default = analyze(frame, bootstrap=50)
    assert default["mog"]["max_gap"].iloc[0] == pytest.approx(0.0)
    assert default["identifier_deviation"]["deviation"].abs().max() == pytest.approx(0.0)


def test_out_of_range_values_excluded_by_default_kept_by_v1() -> None:
    frame = results_frame([
        {"identifier": "Hindu", "profile_id": "P1", "value": 100.0},
        {"identifier": "Muslim", "profile_id": "P1", "value": 100.0},
        {"identifier": "Sikh", "profile_id": "P1", "value": 1e12, "out_of_range": True},
    ])
    default = analyze(frame, bootstrap=0)
    assert default["leaderboard"]["n_pairs"].iloc[0] == 1 and _overall(frame, "default") == 0.0
    assert default.summary["n_out_of_range_excluded"] == 1
    assert default["parse_health"]["n_out_of_range"].iloc[0] == 1
    assert analyze(frame, profile=V1, bootstrap=0)["leaderboard"]["n_pairs"].iloc[0] == 3


def test_language_rho_per_use_case_by_default_pooled_by_v1() -> None:
    rows = []
    for lang, pct in (("en", {"A": 30.0, "B": 20.0, "C": 10.0}), ("hinglish", {"A": 10.0, "B": 20.0, "C": 30.0})):
        for ident, inr in (("A", 1e6), ("B", 2e6), ("C", 3e6)):
            rows.append({"language": lang, "identifier": ident, "profile_id": "P1", "value": inr})
            rows.append({"language": lang, "identifier": ident, "profile_id": "P1", "value": pct[ident],
                         "use_case": "salary_increment_estimation"})
    frame = results_frame(rows)
    default = analyze(frame, bootstrap=0)["language_moderation"].iloc[0]
    assert default["rho"] == pytest.approx(0.0) and default["n_use_cases"] == 2  # (+1 − 1)/2
    v1 = analyze(frame, profile=V1, bootstrap=0)["language_moderation"].iloc[0]
    assert v1["rho"] == pytest.approx(1.0)  # rupees dominate the pooled means


def test_store_is_reparsed_with_the_profiles_parser(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: dict[str, object] = {}
    store = tmp_path / "s.db"
    store.write_bytes(b"")

    @contextlib.contextmanager
    def fake_reader(path: object, study: object, profile: object) -> Iterator[Callable[[str], pd.DataFrame]]:
        def load(model: str) -> pd.DataFrame:
            seen.setdefault("calls", []).append({"path": path, "model": model, "profile": profile})  # type: ignore[union-attr]
            return results_frame([{"identifier": "Hindu", "profile_id": "P1", "value": 1.0},
                                  {"identifier": "Muslim", "profile_id": "P1", "value": 1.0}])

        yield load

    monkeypatch.setattr("counterbench.run.study_results.model_results_reader", fake_reader)
    from counterbench.pipeline import analyze as analyze_store

    analyze_store(store, profile=V1, bootstrap=0, models=["m", "m"])
    assert seen == {"calls": [{"path": store, "model": "m", "profile": V1}]}


def test_equal_answers_stay_tied_whatever_the_order() -> None:
    """The same three hike answers in another order across question variants: a tie, not noise."""
    orders = {"Hindu": (10.1, 12.2, 8.3), "Muslim": (8.3, 10.1, 12.2), "Sikh": (12.2, 8.3, 10.1)}
    rows = [{"identifier": i, "profile_id": p, "question_variant": q + 1, "value": v * scale,
             "use_case": "salary_increment_estimation"}
            for p, scale in (("P1", 1.0), ("P2", 1.7)) for i, vals in orders.items() for q, v in enumerate(vals)]
    for profile in ("default", V1):
        row = analyze(results_frame(rows), profile=profile, bootstrap=0)["kendalls_w"].iloc[0]
        assert bool(row["fully_tied"]), profile
