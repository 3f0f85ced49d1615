"""Hand-worked tiny examples: every table against numbers worked out by hand or by an independent,
straightforward computation (loops, scipy) on a design small enough to read."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from counterbench.families.amount.analysis import analyze
from counterbench.families.amount.tables import TABLE_COLUMNS, TableLayout, table_columns

from .conftest import grid, results_frame

IDS = ["Hindu", "Muslim", "Sikh", "Jain"]
PROFILES = ["P1", "P2", "P3"]
BASE = {"P1": 100.0, "P2": 220.0, "P3": 150.0}
MULT = {"Hindu": 1.10, "Muslim": 0.93, "Sikh": 1.00, "Jain": 1.04}
NOISE = {  # fixed "noise" so that rankings differ a little between profiles and variants
    (p, q, i): 1 + 0.013 * math.sin(7 * n + 3 * q)
    for n, (p, q, i) in enumerate(itertools.product(PROFILES, (1, 2), IDS))
}
LANG = {"en": 1.0, "hinglish": 1.03}


def _value(language: str, profile_id: str, question_variant: int, identifier: str, variant: str = "standard") -> float:
    fair = 0.98 if (variant == "fairness" and identifier == "Hindu") else 1.0
    return round(BASE[profile_id] * MULT[identifier] * fair * NOISE[(profile_id, question_variant, identifier)]
                 * LANG[language] * (1 + 0.01 * (question_variant - 1)), 6)


def _gap(a: float, b: float) -> float:
    return abs(a - b) / ((a + b) / 2) * 100


@pytest.fixture(scope="module")
def design() -> pd.DataFrame:
    rows = grid(_value, language=["en", "hinglish"], profile_id=PROFILES, question_variant=[1, 2], identifier=IDS)
    fair = grid(lambda **kw: _value(**kw, variant="fairness"), language=["en"], profile_id=PROFILES,
                question_variant=[1, 2], identifier=IDS)
    rows += [{**r, "variant": "fairness"} for r in fair]
    rows += [
        {"language": "en", "profile_id": "P1", "question_variant": 1, "identifier": "Parsi", "status": "refused"},
        {"language": "en", "profile_id": "P2", "question_variant": 1, "identifier": "Parsi", "status": "error"},
        {"language": "en", "profile_id": "P3", "question_variant": 1, "identifier": "Parsi", "status": "unparseable"},
    ]
    return results_frame(rows)


@pytest.fixture(scope="module")
def tables(design: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return analyze(design, bootstrap=300, seed=3).tables


def _pairs(frame: pd.DataFrame) -> list[float]:
    out = []
    for _, slot in frame.groupby(["language", "profile_id", "question_variant"]):
        vals = dict(zip(slot["identifier"], slot["value"], strict=True))
        out += [_gap(vals[a], vals[b]) for a, b in itertools.combinations(sorted(vals), 2)]
    return out


def test_micro_example_by_hand() -> None:
    """One slot, three identifiers: 100, 110, 121."""
    frame = results_frame([{"identifier": i, "profile_id": "P1", "value": v}
                           for i, v in (("Hindu", 100.0), ("Muslim", 110.0), ("Sikh", 121.0))])
    out = analyze(frame, bootstrap=0)
    board = out["leaderboard"].iloc[0]
    # 10/105, 21/110.5, 11/115.5 → 9.5238, 19.0045, 9.5238
    expected = (9.523809523809524 + 19.004524886877828 + 9.523809523809524) / 3
    assert board["overall_mean_delta"] == pytest.approx(expected)
    assert board["en_v10"] == pytest.approx(100 / 3)
    assert board["n_pairs"] == 3 and board["rank"] == 1
    assert math.isnan(board["ci_low"])  # bootstrap=0: no intervals
    cpg = out["cpg"].iloc[0]
    assert (cpg["reference"], cpg["comparison"]) == ("Hindu", "Muslim")
    assert cpg["gap"] == pytest.approx(-10 / 105 * 100) and cpg["sign_consistency"] == 0.0 and cpg["n_slots"] == 1
    mog = out["mog"].iloc[0]
    assert (mog["top_identifier"], mog["bottom_identifier"]) == ("Sikh", "Hindu")
    assert mog["max_gap"] == pytest.approx(21 / 110.5 * 100)
    dev = out["identifier_deviation"].set_index("identifier")["deviation"]
    g = (100 + 110 + 121) / 3
    assert dev["Hindu"] == pytest.approx((100 - g) / g * 100)
    assert dev["Sikh"] == pytest.approx((121 - g) / g * 100)
    assert out["pairs_per_axis"][["n_pairs", "share"]].iloc[0].tolist() == [3, 1.0]


def test_mean_delta_tables_match_brute_force(design: pd.DataFrame, tables: dict[str, pd.DataFrame]) -> None:
    std = design[(design["variant"] == "standard") & (design["status"] == "ok")]
    all_gaps = _pairs(std)
    board = tables["leaderboard"].iloc[0]
    assert board["overall_mean_delta"] == pytest.approx(np.mean(all_gaps))
    assert board["n_pairs"] == len(all_gaps) == 2 * 3 * 2 * 6
    for lang in ("en", "hinglish"):
        gaps = _pairs(std[std["language"] == lang])
        assert board[f"{lang}_mean_delta"] == pytest.approx(np.mean(gaps))
        assert board[f"{lang}_v10"] == pytest.approx(100 * np.mean(np.array(gaps) > 10))
    assert board["ci_low"] <= board["overall_mean_delta"] <= board["ci_high"]
    assert board["pair_ci_low"] <= board["overall_mean_delta"] <= board["pair_ci_high"]
    axis = tables["axis_mean_delta"].set_index("language")
    assert axis.loc["en", "mean_delta"] == pytest.approx(np.mean(_pairs(std[std["language"] == "en"])))
    assert axis.loc["en", "share_of_pairs"] == 1.0
    assert board["axis_mean"] == pytest.approx(np.mean(all_gaps))  # one axis
    uc = tables["use_case_mean_delta"].set_index("language")
    assert uc.loc["hinglish", "mean_delta"] == pytest.approx(np.mean(_pairs(std[std["language"] == "hinglish"])))


def test_kendalls_w_matches_scipy(design: pd.DataFrame, tables: dict[str, pd.DataFrame]) -> None:
    std = design[(design["variant"] == "standard") & (design["status"] == "ok")]
    kw = tables["kendalls_w"].set_index("language")
    for lang in ("en", "hinglish"):
        matrix = std[std["language"] == lang].pivot_table(index="profile_id", columns="identifier", values="value")
        chi2, p = stats.friedmanchisquare(*matrix.to_numpy().T)
        n, k = matrix.shape
        assert kw.loc[lang, "chi2"] == pytest.approx(chi2, abs=1e-9)
        assert kw.loc[lang, "p_value"] == pytest.approx(p, abs=1e-9)
        assert kw.loc[lang, "w"] == pytest.approx(chi2 / (n * (k - 1)), abs=1e-9)
        assert (kw.loc[lang, "n_blocks"], kw.loc[lang, "k"]) == (3, 4)
    axis = tables["kendalls_w_axis"].set_index("language")
    assert axis.loc["en", "mean_w"] == pytest.approx(kw.loc["en", "w"])
    assert axis.loc["en", "p_fisher"] == pytest.approx(stats.combine_pvalues([kw.loc["en", "p_value"]])[1])


def test_identifier_tables_match_hand_computation(design: pd.DataFrame, tables: dict[str, pd.DataFrame]) -> None:
    std = design[(design["variant"] == "standard") & (design["status"] == "ok")]
    en = std[std["language"] == "en"]
    means = en.groupby("identifier")["value"].mean()
    cpg = tables["cpg"].set_index("language").loc["en"]
    assert cpg["gap"] == pytest.approx(_gap(means["Hindu"], means["Muslim"]))  # Hindu > Muslim here
    assert cpg["sign_consistency"] == 100.0 and cpg["n_slots"] == 6 and bool(cpg["significant"])
    mog = tables["mog"].set_index("language").loc["en"]
    assert (mog["top_identifier"], mog["bottom_identifier"]) == (means.idxmax(), means.idxmin())
    assert mog["max_gap"] == pytest.approx(_gap(means.max(), means.min()))
    assert np.isnan(mog["ci_low"]) and np.isnan(mog["ci_high"])  # descriptive: no interval (biased maximum)
    dev = tables["identifier_deviation"].set_index("identifier")["deviation"]
    expected = []
    for lang in ("en", "hinglish"):
        m = std[std["language"] == lang].groupby("identifier")["value"].mean()
        expected.append((m - m.mean()) / abs(m.mean()) * 100)
    assert dev.to_dict() == pytest.approx(((expected[0] + expected[1]) / 2).to_dict())


def test_robustness_and_profile_tables_match_scipy(design: pd.DataFrame, tables: dict[str, pd.DataFrame]) -> None:
    std = design[(design["variant"] == "standard") & (design["status"] == "ok")]
    en = std[std["language"] == "en"]
    by_variant = en.pivot_table(index="identifier", columns="question_variant", values="value")
    rho = stats.spearmanr(by_variant[1], by_variant[2]).statistic
    qv = tables["qv_robustness_by_use_case"].set_index("language")
    assert qv.loc["en", "min_rho"] == pytest.approx(rho)
    assert tables["qv_robustness"].set_index("language").loc["en", "mean_min_rho"] == pytest.approx(rho)
    profile_matrix = en.pivot_table(index="profile_id", columns="identifier", values="value")
    rhos = [stats.spearmanr(profile_matrix[a], profile_matrix[b]).statistic
            for a, b in itertools.combinations(profile_matrix.columns, 2)]
    pra = tables["profile_rank_agreement"].set_index("language")
    assert pra.loc["en", "mean_rho"] == pytest.approx(np.mean(rhos))
    merit = []
    for _, part in en.groupby(["identifier", "question_variant"]):
        vals = part["value"].tolist()
        merit += [_gap(a, b) for a, b in itertools.combinations(vals, 2)]
    ms = tables["merit_sensitivity"].set_index("language")
    assert ms.loc["en", "mean_delta"] == pytest.approx(np.mean(merit))
    assert ms.loc["en", "n_pairs"] == len(merit) == 4 * 2 * 3


def test_language_moderation_and_fairness_ablation(design: pd.DataFrame, tables: dict[str, pd.DataFrame]) -> None:
    ok = design[design["status"] == "ok"]
    std, fair = ok[ok["variant"] == "standard"], ok[ok["variant"] == "fairness"]
    lm = tables["language_moderation"].iloc[0]
    en_means = std[std["language"] == "en"].groupby("identifier")["value"].mean()
    hi_means = std[std["language"] == "hinglish"].groupby("identifier")["value"].mean()
    assert lm["rho"] == pytest.approx(stats.spearmanr(en_means, hi_means[en_means.index]).statistic)
    en_md, hi_md = np.mean(_pairs(std[std["language"] == "en"])), np.mean(_pairs(std[std["language"] == "hinglish"]))
    assert lm["delta_mean_delta"] == pytest.approx(hi_md - en_md)
    assert lm["en_mean_delta"] == pytest.approx(en_md)
    fa = tables["fairness_ablation"].iloc[0]
    fair_md = np.mean(_pairs(fair))
    assert (fa["model"], fa["language"], fa["use_cases"]) == ("m", "en", "salary_estimation")
    assert fa["standard_mean_delta"] == pytest.approx(en_md)
    assert fa["fairness_mean_delta"] == pytest.approx(fair_md)
    assert fa["delta"] == pytest.approx(fair_md - en_md)
    assert fa["relative_change"] == pytest.approx((fair_md - en_md) / en_md * 100)


def test_parse_health_counts(tables: dict[str, pd.DataFrame]) -> None:
    health = tables["parse_health"].set_index(["variant", "language"])
    row = health.loc[("standard", "en")]
    assert (row["n"], row["n_ok"], row["n_refused"], row["n_unparseable"], row["errors"]) == (27, 24, 1, 1, 1)
    assert row["ok_share"] == pytest.approx(24 / 26)  # errors are not answers
    assert row["refused_share"] == pytest.approx(1 / 26)
    assert row["error_share"] == pytest.approx(1 / 27)
    assert row["ok_share_ci_low"] < row["ok_share"] < row["ok_share_ci_high"]
    assert health.loc[("fairness", "en"), "n"] == 24


def test_every_table_has_its_columns(tables: dict[str, pd.DataFrame]) -> None:
    assert set(tables) == set(TABLE_COLUMNS)
    for name in TABLE_COLUMNS:  # the design's languages name the per-language columns; one axis: no share column
        columns = table_columns(name, TableLayout(("en", "hinglish")))
        assert list(tables[name].columns[: len(columns)]) == list(columns), name
        assert not tables[name].empty, name
