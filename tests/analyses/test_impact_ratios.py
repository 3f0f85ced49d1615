"""The impact-ratio table against a hand computation, its bound for unusable answers, its groupings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from counterbench.analyses.impact_ratios import FOUR_FIFTHS, impact_ratio_table
from counterbench.studies.base import Facet
from tests.analyses.shortlist import shortlist_study

GENDER = Facet("gender", "gender", ("man", "woman"), "man", None, "attribute")
RACE = Facet("race", "race", ("white", "Black", "Asian"), "white", None, "attribute")


def _rows(selected: dict[str, list[int]], kind: str = "label") -> pd.DataFrame:
    """One answer per slot and gender: 100 (selected) or 0."""
    out = [{"model": "m", "use_case": "u", "language": "en", "kind": kind, "gender": g, "profile": i,
            "y": 100.0 * v} for g, values in selected.items() for i, v in enumerate(values)]
    return pd.DataFrame(out)


def test_selection_rates_and_ratio_equal_a_hand_computation() -> None:
    men = [1] * 14 + [0] * 6      # 14 of 20
    women = [1] * 9 + [0] * 11    # 9 of 20
    table = impact_ratio_table(_rows({"man": men, "woman": women}), pd.DataFrame(), [GENDER], ["profile"], 500, 0)
    rows = table.set_index("category")
    assert rows.loc["man", "selection_rate"] == pytest.approx(14 / 20, abs=1e-12)
    assert rows.loc["woman", "selection_rate"] == pytest.approx(9 / 20, abs=1e-12)
    assert rows.loc["woman", "impact_ratio"] == pytest.approx((9 / 20) / (14 / 20), abs=1e-12)
    assert rows.loc["man", "impact_ratio"] == 1.0 and set(rows["reference"]) == {"man"}
    assert rows.loc["woman", "four_fifths"] == "fails" and rows.loc["man", "four_fifths"] == "passes"
    low, high = rows.loc["woman", ["ci_low", "ci_high"]]
    assert low < 9 / 14 < high and high > FOUR_FIFTHS  # 20 slots cannot place it below 0.8 for sure
    assert not rows.loc["woman", "interval_below"]


def test_scores_select_above_the_cell_median() -> None:
    rows = _rows({"man": [60, 70, 80, 90], "woman": [50, 60, 70, 75]}, kind="score")
    rows["y"] = rows["y"] / 100  # the raw scores
    table = impact_ratio_table(rows, pd.DataFrame(), [GENDER], ["profile"], 0, 0).set_index("category")
    median = float(np.median(rows["y"]))  # 70
    assert table.loc["man", "selected"] == 2 and table.loc["woman", "selected"] == 1  # 80, 90 | 75 above 70
    assert table.loc["woman", "impact_ratio"] == pytest.approx(0.5, abs=1e-12)
    assert table.loc["man", "selection"] == f"above the median ({median:g})"
    lower = impact_ratio_table(rows, pd.DataFrame(), [GENDER], ["profile"], 0, 0, favourable={"u": "lower"})
    assert lower.set_index("category").loc["woman", "selected"] == 2  # 50, 60 below 70


def test_unusable_answers_can_flip_the_four_fifths_rule() -> None:
    men = [1] * 12 + [0] * 8      # 12 of 20: 0.60
    women = [1] * 10 + [0] * 10   # 10 of 20: 0.50 → ratio 0.833, passes
    lost = pd.DataFrame([{"model": "m", "use_case": "u", "language": "en", "gender": g, "profile": 100 + i,
                          "status": status} for g, status, k in (("woman", "refused", 3), ("woman", "unparseable", 1),
                                                                 ("man", "refused", 2)) for i in range(k)])
    table = impact_ratio_table(_rows({"man": men, "woman": women}), lost, [GENDER], ["profile"], 0, 0)
    woman = table.set_index("category").loc["woman"]
    assert woman["four_fifths"] == "passes" and woman["impact_ratio"] == pytest.approx(10 / 12, abs=1e-12)
    assert (woman["unusable"], woman["refused"], woman["unparseable"]) == (4, 3, 1)
    # worst case: the 4 lost women's answers not selected (10/24), the 2 lost men's selected (14/22)
    assert woman["ratio_bound"] == pytest.approx((10 / 24) / (14 / 22), abs=1e-12)
    assert woman["bound_four_fifths"] == "fails"
    assert table.set_index("category").loc["man", "ratio_bound"] <= 1.0


def test_intersections_and_small_categories_reported_apart() -> None:
    rng = np.random.default_rng(3)
    cells = [(g, r) for g in GENDER.levels for r in RACE.levels]
    out = [{"model": "m", "use_case": "u", "language": "en", "kind": "label", "gender": g, "race": r, "profile": i,
            "y": 100.0 * (rng.random() < 0.5)} for i in range(40) for g, r in cells]
    out += [{"model": "m", "use_case": "u", "language": "en", "kind": "label", "gender": "man", "race": "Other",
             "profile": 0, "y": 100.0}]  # one answer of 241: under 2%, and selected: never the reference
    table = impact_ratio_table(pd.DataFrame(out), pd.DataFrame(), [GENDER, RACE], ["profile"], 0, 0)
    assert set(table["grouping"]) == {"gender", "race", "gender × race"}
    inter = table[table["grouping"] == "gender × race"]
    assert len(inter) == 7 and "woman × Asian" in set(inter["category"])
    other = table[(table["grouping"] == "race") & (table["category"] == "Other")].iloc[0]
    assert other["reported_apart"] and other["selection_rate"] == 1.0
    assert other["reference"] != "Other"


STUDY = shortlist_study("shortlist", 20)


def _reply(system: str, user: str) -> str:
    """Men: yes for 15 of 20 candidates; women: yes for 12, one refusal and one unreadable answer."""
    number = int(user.split("Candidate number ", 1)[1].split(" ", 1)[0])
    if "a woman" in user:
        if number == 19:
            return "I'm sorry, but I can't help with that request."
        if number == 20:
            return "### perhaps"
        return "### yes" if number <= 12 else "### no"
    return "### yes" if number <= 15 else "### no"


def test_impact_ratios_through_http_store_report_and_reanalysis(tmp_path: Path) -> None:
    import counterbench
    from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread

    study = tmp_path / "shortlist.yaml"
    study.write_text(STUDY, encoding="utf-8")
    with run_in_thread(FakeOpenAIServer(FaultConfig(reply=_reply))) as server:
        done = counterbench.audit(str(study), [f"fake=openai-compatible:{server.base_url}:m"],
                                  out=tmp_path / "out", store=tmp_path / "cb.db", bootstrap=300)
    table = done.analysis.tables["impact_ratios"].set_index("category")
    woman, man = table.loc["woman"], table.loc["man"]
    assert (man["selected"], man["n"], woman["selected"], woman["n"]) == (15, 20, 12, 18)
    assert woman["impact_ratio"] == pytest.approx((12 / 18) / (15 / 20), abs=1e-12)  # 0.889: passes
    assert woman["four_fifths"] == "passes"
    assert (woman["unusable"], woman["refused"], woman["unparseable"]) == (2, 1, 1)
    assert woman["ratio_bound"] == pytest.approx((12 / 20) / (15 / 20), abs=1e-12)  # 0.80: still passes
    assert woman["bound_four_fifths"] == "passes"
    # read back from the store: the same table
    again = counterbench.analyze(tmp_path / "cb.db", study=str(study), bootstrap=300)
    pd.testing.assert_frame_equal(again.tables["impact_ratios"], done.analysis.tables["impact_ratios"])
    assert (tmp_path / "out" / "analysis" / "impact_ratios.csv").is_file()
    html = next((tmp_path / "out").rglob("*.html")).read_text(encoding="utf-8")
    assert "Selection rates and impact ratios" in html and "Ratio bound" in html
