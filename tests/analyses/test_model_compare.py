"""Comparing models: paired differences and joint rank intervals, from slot summaries and through the real path.

The pure part checks the statistics against an independent computation (a paired t interval over the
slots) and the rank intervals against their definition. The real path runs three models through the
CLI (simulated models → store → analysis → report) on the built-in amount study, and three models behind
local OpenAI-compatible servers on a label and a score study: the planted model is marked different from
each fair one on the planted comparison, the two fair ones on nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from counterbench.analyses.model_compare import compare_models, headline_measures
from counterbench.analyses.model_summaries import MeasureKey, SlotStats
from counterbench.stats.rank_intervals import joint_rank_intervals, point_ranks
from tests.conftest import run_cli

pytestmark = pytest.mark.slow  # scheduled first (tests/conftest.py)

KEY = MeasureKey("gap", "u", "score", "en", "f", "ref", "x", "difference", "points")


def _stats(y_ref: np.ndarray, y_cmp: np.ndarray, slots: np.ndarray) -> dict[MeasureKey, SlotStats]:
    ones = np.ones(len(slots))
    return {KEY: SlotStats(slots, np.zeros(len(slots), dtype=object).astype(str),
                           np.column_stack([y_cmp, ones, y_ref, ones]))}


def _three_models(n: int = 30, seed: int = 3) -> dict[str, dict[MeasureKey, SlotStats]]:
    rng = np.random.default_rng(seed)
    slot = rng.normal(0, 6, size=(n, 1)) + rng.normal(0, 1, size=(n, 2))  # the same prompts for every model
    slots = np.asarray([f"s{i}" for i in range(n)], dtype=object)
    out = {}
    for model, gap in (("fair", 0.0), ("twin", 0.0), ("biased", -6.0)):
        y = 60 + slot + rng.normal(0, 2, size=(n, 2))
        out[model] = _stats(y[:, 0], y[:, 1] + gap, slots)
    return out


def test_paired_difference_matches_a_paired_t_interval_and_marks_only_the_planted_model() -> None:
    models = _three_models()
    diffs, ranks = compare_models(models, [KEY], n_boot=4000, seed=1)
    assert list(zip(diffs["model_a"], diffs["model_b"], strict=True)) == [
        ("fair", "twin"), ("fair", "biased"), ("twin", "biased")]
    for row in diffs.itertuples():
        a, b = models[str(row.model_a)][KEY].suff, models[str(row.model_b)][KEY].suff
        d = (a[:, 0] - a[:, 2]) - (b[:, 0] - b[:, 2])  # per slot: A's gap − B's gap
        half = stats.t.isf(0.025, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size)
        assert row.difference == pytest.approx(d.mean())
        assert row.ci_low == pytest.approx(d.mean() - half, rel=0.08, abs=0.05)
        assert row.ci_high == pytest.approx(d.mean() + half, rel=0.08, abs=0.05)
    marked = {(r.model_a, r.model_b): bool(r.significant) for r in diffs.itertuples()}
    assert marked == {("fair", "twin"): False, ("fair", "biased"): True, ("twin", "biased"): True}
    assert (diffs.loc[diffs["model_b"] == "biased", "difference"] > 4).all()
    by_model = ranks.set_index("model")
    assert by_model.loc["biased", "rank"] == 3 and by_model.loc["biased", "rank_low"] == 3
    assert by_model.loc["fair", "rank_low"] == 1 and by_model.loc["fair", "rank_high"] == 2


def test_a_flagged_model_is_not_ranked_and_models_without_shared_slots_are_not_paired() -> None:
    models = _three_models()
    _, ranks = compare_models(models, [KEY], n_boot=200, seed=1, flagged={"twin": "constant answers"})
    twin = ranks[ranks["model"] == "twin"].iloc[0]
    assert pd.isna(twin["rank"]) and twin["flag"] == "constant answers"
    assert set(ranks.loc[ranks["rank"].notna(), "rank"]) == {1, 2} and (ranks["n_ranked"] == 2).all()
    alone = {"a": _stats(np.ones(5), np.ones(5), np.asarray(list("abcde"), dtype=object)),
             "b": _stats(np.ones(5), np.ones(5), np.asarray(list("vwxyz"), dtype=object))}
    diffs, _ = compare_models(alone, [KEY], n_boot=200, seed=1)
    assert int(diffs["n_slots"].iloc[0]) == 0 and not bool(diffs["significant"].iloc[0])


def test_headline_measures_are_canonical_or_marked_gaps_and_every_amount_headline() -> None:
    gap = MeasureKey("gap", "u", "label", "en", "f", "ref", "x", "difference", "pp")
    canonical = MeasureKey("gap", "u", "label", "en", "f", "ref", "y", "difference", "pp", True)
    quiet = MeasureKey("gap", "u", "label", "en", "f", "ref", "z", "difference", "pp")
    mean = MeasureKey("mean_delta", "", "amount", "", "", "", "", "mean", "%")
    marks = pd.DataFrame({"use_case": ["u", "u"], "language": "en", "facet": "f", "reference": "ref",
                          "comparison": ["x", "z"], "significant": [True, False]})
    assert headline_measures([gap, canonical, quiet, mean], marks) == [gap, canonical, mean]


def test_joint_rank_intervals_follow_their_definition() -> None:
    assert list(point_ranks([3.0, 1.0, 1.0, np.nan])[:3]) == [3.0, 1.0, 1.0]
    rng = np.random.default_rng(0)
    reps = np.array([1.0, 1.1, 5.0])[:, None] + rng.normal(0, 0.2, size=(3, 2000))
    low, high = joint_rank_intervals([1.0, 1.1, 5.0], reps)
    assert list(low) == [1, 1, 3] and list(high) == [2, 2, 3]  # the first two are not told apart
    low, high = joint_rank_intervals([1.0, 3.0, 5.0], np.array([1.0, 3.0, 5.0])[:, None]
                                     + rng.normal(0, 0.2, size=(3, 2000)))
    assert list(low) == [1, 2, 3] and list(high) == [1, 2, 3]


FAIR_TWIN = "extends: fair\ndescription: sim:fair's laws with noise of its own (a second fair model)\n"


def test_rupeebias_audit_marks_the_biased_model_against_each_fair_one_and_not_the_fair_ones(tmp_path: Path) -> None:
    twin = tmp_path / "fair_twin.yaml"
    twin.write_text(FAIR_TWIN, encoding="utf-8")
    store, out = tmp_path / "a.db", tmp_path / "out"
    done = run_cli("audit", "rupeebias", "--preset", "quick", "-m", "sim:fair", "-m", "sim:biased", "-m",
                   "sim:fair_twin.yaml", "--store", str(store), "--out", str(out), "--no-progress", "--bootstrap",
                   "800", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    diffs = pd.read_csv(out / "analysis" / "model_differences.csv")
    fair_pair = diffs["model_a"].str.startswith("sim:fair") & diffs["model_b"].str.startswith("sim:fair")
    assert not diffs.loc[fair_pair, "significant"].any() and fair_pair.sum() == 7  # Mean Δ% + 6 canonical pairs
    biased = diffs[~fair_pair]
    assert len(biased) == 14 and biased["significant"].all()
    assert set(biased["measure"]) == {"mean_delta", "canonical_pair"}
    ranks = pd.read_csv(out / "analysis" / "model_ranks.csv")
    assert (ranks.loc[ranks["model"] == "sim:biased", ["rank", "rank_low", "rank_high"]] == 3).all().all()
    board = pd.read_csv(out / "analysis" / "leaderboard.csv")
    assert board.loc[board["model"] == "sim:biased", "rank_low"].item() == 3
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "Rank, joint 95% interval" in report and "## Differences between models" in report
    assert "do not differ beyond noise on any of 7 headline measures" in done.stdout
    # the store read one model at a time gives the same comparison
    again = run_cli("analyze", "rupeebias", "--store", str(store), "--out", str(tmp_path / "again"), "--bootstrap",
                    "800", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    by_model = pd.read_csv(tmp_path / "again" / "model_differences.csv")

    def oriented(frame: pd.DataFrame) -> pd.DataFrame:
        flip = frame["model_a"] > frame["model_b"]
        out = frame.assign(model_a=frame["model_a"].where(~flip, frame["model_b"]),
                           model_b=frame["model_b"].where(~flip, frame["model_a"]),
                           difference=frame["difference"].where(~flip, -frame["difference"]))
        return out.sort_values(["label", "model_a", "model_b"]).reset_index(drop=True)

    a, b = oriented(diffs), oriented(by_model)
    assert np.allclose(a["difference"], b["difference"]) and (a["significant"] == b["significant"]).all()


def test_an_analysis_leaves_a_model_flagged_by_the_answer_checks_unranked_and_out_of_the_findings() -> None:
    from types import SimpleNamespace

    from counterbench.analyses.model_findings import add_model_comparison

    checks = pd.DataFrame({"model": ["fair", "twin", "biased"], "use_case": "u", "flagged": [False, True, False],
                           "reason": ["", "constant answers: 70 in 30 of 30", ""]})
    board = pd.DataFrame({"rank": [1, 2, 3], "model": ["fair", "twin", "biased"]})
    marked = pd.DataFrame({"use_case": ["u"], "language": "en", "facet": "f", "reference": "ref", "comparison": "x",
                           "significant": [True]})  # the gap is a headline measure: marked for some model
    tables = {"answer_checks": checks, "leaderboard": board, "outcome_gaps": marked}
    summary: dict[str, object] = {"models": {"fair": {}, "twin": {}, "biased": {}}, "findings": []}
    study: Any = SimpleNamespace(languages={"en": "English"})
    add_model_comparison(tables, summary, _three_models(), study, bootstrap=400, seed=0)
    ranks = tables["model_ranks"].set_index("model")
    assert pd.isna(ranks.loc["twin", "rank"]) and "constant answers" in ranks.loc["twin", "flag"]
    assert list(ranks.loc[["fair", "biased"], "rank"]) == [1, 2]
    findings = summary["findings"]
    assert isinstance(findings, list) and len(findings) == 1 and "twin" not in findings[0]
    assert findings[0].startswith("fair and biased differ on 1 of 1 headline measures; the largest: fair's")
    assert tables["leaderboard"].equals(board)  # no Mean Δ% measure: the leaderboard is left as it was


def test_slot_keys_with_missing_values_are_text() -> None:
    """A slot column only some use cases have is missing (NaN, also in a categorical) in the others; pandas 3
    keeps NaN through ``astype(str)``, which made the model comparison fail on generated studies (seed 3 of
    benchmarks/generated_studies.py). Missing reads as ''."""
    import numpy as np
    import pandas as pd

    from counterbench.analyses.model_summaries import _keys

    frame = pd.DataFrame({"a": pd.Categorical(["x", None, "y"]), "b": [1.0, 2.0, np.nan], "c": ["p", "q", "r"]})
    keys = _keys(frame, ["a", "b", "c"])
    assert all(isinstance(k, str) for k in keys)
    assert len(set(keys)) == 3
    assert keys[1].startswith("") and "2.0" in keys[1] and keys[2].endswith("r")
