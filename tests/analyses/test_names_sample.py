"""``group_gaps_over_names``: group comparisons that treat a group's names as a sample of names like them.

A names-grouped study is audited against a local OpenAI-compatible server whose answers plant, in one use
case, a group effect (every woman's name scores 8 points lower, names differ by a point among themselves)
and, in the other, an effect of one name only (Mary scores 12 lower, no other name moves): the table marks
the first with the right sign and leaves the second unmarked, where the matched group row ("for these
names") marks both. A group with fewer than 3 names is refused with the reason. The statistics are checked
against scipy's Welch test and a pandas computation of the slot-adjusted means.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import counterbench
from counterbench.pipeline import Audit
from counterbench.stats.name_sample import MIN_NAMES, name_sample_gap, slot_adjusted_name_means
from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread

MEN = ("James", "Michael", "David")
WOMEN = ("Mary", "Jennifer", "Linda")


def study_text(men: tuple[str, ...], women: tuple[str, ...]) -> str:
    names = "".join(f"      - {{value: {n}, group: {g}, phrases: {{en: {n}}}}}\n"
                    for g, group in (("men", men), ("women", women)) for n in group)
    profiles = "".join(f"      - {{profile_id: P{i:02d}, years: {i}}}\n" for i in range(1, 9))
    use_case = ("  {name}:\n    outcome: {{kind: score, min: 1, max: 100}}\n    template:\n"
                "      en: \"{{identifier_phrase}} applies for a {role} role with {{years}} years of experience.\\n"
                "{{question}}\"\n    question_variants:\n      en: [\"Score this candidate from 1 to 100.\"]\n"
                "    profiles:\n")
    return ("name: names_sample_test\ntitle: Interview scores by first name\nlanguages:\n  en: {name: English, "
            "id_infix: en}\naxes:\n  Name:\n    groups: [men, women]\n    identifiers:\n" + names + "use_cases:\n"
            + use_case.format(name="group_effect", role="nursing") + profiles
            + use_case.format(name="one_name", role="sales") + profiles)


NAME_SHIFT = {"James": 1, "Michael": 0, "David": -1, "Mary": 1, "Jennifer": 0, "Linda": -1}


def _reply(system: str, user: str) -> str:
    """70 + the profile's years (a slot effect); nursing: women −8 and each name ±1; sales: Mary −12 only."""
    name = user.split(" applies")[0].strip()
    years = int(re.search(r"with (\d+) years", user).group(1))  # type: ignore[union-attr]
    if "nursing" in user:
        score = 70 + years + NAME_SHIFT[name] - (8 if name in WOMEN else 0)
    else:
        score = 70 + years - (12 if name == "Mary" else 0)
    return f"### {score}"


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Audit:
    root = tmp_path_factory.mktemp("names_sample")
    study = root / "names.yaml"
    study.write_text(study_text(MEN, WOMEN), encoding="utf-8")
    with run_in_thread(FakeOpenAIServer(FaultConfig(reply=_reply))) as server:
        return counterbench.audit(str(study), [f"fake=openai-compatible:{server.base_url}:m"],
                                  out=root / "out", store=root / "cb.db", bootstrap=200)


def _row(table: pd.DataFrame, use_case: str) -> pd.Series:
    rows = table[table["use_case"].astype(str).eq(use_case)]
    assert len(rows) == 1
    return rows.iloc[0]


def test_a_planted_group_effect_is_marked_over_names_with_its_sign(audited: Audit) -> None:
    row = _row(audited.analysis.tables["group_gaps_over_names"], "group_effect")
    assert (row["comparison"], row["reference"]) == ("women", "men")
    assert (row["n_names_comparison"], row["n_names_reference"], row["n_slots"]) == (3, 3, 8)
    assert row["difference"] == pytest.approx(-8.0)
    assert bool(row["testable"]) and bool(row["significant"]) and row["ci_high"] < 0
    # names' slot-adjusted values: men 1, 0, −1 and women −7, −8, −9 around the slot mean: Welch on 4 df
    expected = stats.ttest_ind([-7.0, -8.0, -9.0], [1.0, 0.0, -1.0], equal_var=False)
    assert row["p_value"] == pytest.approx(expected.pvalue)
    findings = audited.analysis.summary["findings"]
    assert any("scores women 8.00 points lower than men, over names like these" in line for line in findings)


def test_an_effect_of_one_name_is_not_a_group_effect_over_names(audited: Audit) -> None:
    row = _row(audited.analysis.tables["group_gaps_over_names"], "one_name")
    assert row["difference"] == pytest.approx(-4.0)
    assert bool(row["testable"]) and not bool(row["significant"]) and row["ci_low"] < 0 < row["ci_high"]
    matched = audited.analysis.tables["outcome_gaps"]
    group = matched[matched["facet_kind"].astype(str).eq("group") & matched["use_case"].astype(str).eq("one_name")]
    # the matched row holds for these names: Mary's −12 makes the women's mean 4 lower, in every slot
    assert len(group) == 1 and bool(group["significant"].iloc[0])
    assert any("Name (groups), for these names;" in line for line in audited.analysis.summary["findings"])


def test_the_report_shows_both_kinds_of_group_inference(audited: Audit) -> None:
    md = audited.report.markdown.read_text(encoding="utf-8") if audited.report.markdown else ""
    html = audited.report.html.read_text(encoding="utf-8")
    for text in (md, html):
        assert "Groups over names like these (names as a sample)" in text
        assert "(for these names)" in text or "holds for these names" in text
    written = pd.read_csv(Path(audited.report.html).parent / "analysis" / "group_gaps_over_names.csv")
    assert set(written["use_case"]) == {"group_effect", "one_name"}


def test_fewer_than_three_names_in_a_group_is_refused_with_the_reason(tmp_path: Path) -> None:
    study = tmp_path / "names.yaml"
    study.write_text(study_text(MEN, WOMEN[:2]), encoding="utf-8")
    prompts = counterbench.prompts(str(study))
    results = prompts.drop(columns=["system", "user"]).assign(
        model="m", simulated=False, status="ok", out_of_range=False,
        value=np.where(prompts["group"].eq("women"), 60.0, 70.0) + prompts["profile_id"].str[-1].astype(float))
    table = counterbench.analyze(results, str(study), bootstrap=50).tables["group_gaps_over_names"]
    assert len(table) == 2 and not table["testable"].astype(bool).any() and not table["significant"].any()
    assert table[["ci_low", "ci_high", "p_value", "q_value"]].isna().all().all()
    assert (table["difference"] == -10.0).all()
    assert table["note"].str.contains(f"women has 2 \\({MIN_NAMES} needed in each group\\)").all()


def test_no_groups_no_rows_and_the_reason(tmp_path: Path) -> None:
    text = study_text(MEN, WOMEN).replace("    groups: [men, women]\n    identifiers:\n", "")
    study = tmp_path / "plain.yaml"
    study.write_text(text.replace(", group: men", "").replace(", group: women", ""), encoding="utf-8")
    prompts = counterbench.prompts(str(study))
    results = prompts.drop(columns=["system", "user"]).assign(model="m", simulated=False, status="ok",
                                                              out_of_range=False, value=70.0)
    result = counterbench.analyze(results, str(study), bootstrap=0)
    assert result.tables["group_gaps_over_names"].empty
    assert "group_gaps_over_names" in result.summary["unsupported"]


def test_welch_over_names_matches_scipy() -> None:
    rng = np.random.default_rng(3)
    for n_a, n_b in ((3, 3), (4, 7), (10, 6)):
        a, b = rng.normal(1.0, 2.0, n_a), rng.normal(0.0, 0.5, n_b)
        gap = name_sample_gap(a, b)
        scipy = stats.ttest_ind(a, b, equal_var=False)
        low, high = scipy.confidence_interval(0.95)
        assert gap.difference == pytest.approx(a.mean() - b.mean())
        assert gap.p_value == pytest.approx(scipy.pvalue) and gap.df == pytest.approx(scipy.df)
        assert (gap.ci_low, gap.ci_high) == (pytest.approx(low), pytest.approx(high))
    short = name_sample_gap([1.0, 2.0], [0.0, 1.0, 2.0])
    assert np.isnan(short.ci_low) and np.isnan(short.p_value) and short.n_comparison == 2


@pytest.mark.parametrize("ratio", [False, True])
def test_slot_adjusted_means_match_pandas_with_missing_answers(ratio: bool) -> None:
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"slot": np.repeat(np.arange(6), 5), "name": np.tile(np.arange(5), 6)})
    frame["y"] = 50 + 3 * frame["slot"] + frame["name"] + rng.normal(0, 1, len(frame))
    frame = frame.drop(index=[2, 7, 13]).reset_index(drop=True)  # some names miss some slots
    slot_mean = frame.groupby("slot")["y"].transform("mean")
    adjusted = 100 * (frame["y"] / slot_mean - 1) if ratio else frame["y"] - slot_mean
    expected = adjusted.groupby(frame["name"]).mean()
    codes, means = slot_adjusted_name_means(frame["y"], frame["slot"], frame["name"], ratio=ratio)
    assert list(codes) == list(expected.index)
    np.testing.assert_allclose(means, expected.to_numpy(), rtol=1e-12)
