"""The main tables use one run per model × use case; the stability table uses every repeat (App. K.2)."""

from __future__ import annotations

import pandas as pd
import pytest

import counterbench
from counterbench.builtin.hiring.analysis import frames
from counterbench.builtin.hiring.stability import primary_run


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """Two stores: the primary run alone, and the same run plus Score & Shortlist repeats at T = 0 and a
    whole rerun at T = 1 (other answers: the simulated model's answers depend on the generation seed)."""
    root = tmp_path_factory.mktemp("primary")
    jobs = ["civeng_1", "nurse_1", "account_1", "dataan_1", "sales_1", "civeng_2", "nurse_2", "account_2"]
    table = counterbench.prompts("hiring", use_case=["compare", "score"], profile=jobs, axis=["all"])
    alone, pooled = root / "alone.db", root / "pooled.db"
    for store in (alone, pooled):
        counterbench.run_prompts(table, ["sim:hiring-biased"], store=str(store), progress="off")
    scores = table[table["use_case"].eq("score")]
    for seed in (1, 2):
        counterbench.run_prompts(scores, ["sim:hiring-biased"], store=str(pooled), seed=seed, progress="off")
    counterbench.run_prompts(table, ["sim:hiring-biased"], store=str(pooled), temperature=1.0, seed=1,
                             progress="off")
    return (counterbench.analyze(str(alone), "hiring", bootstrap=200),
            counterbench.analyze(str(pooled), "hiring", bootstrap=200), pooled)


def test_stability_runs_leave_the_main_tables_as_they_were(stores):
    alone, pooled, _ = stores
    compared = 0
    for name, table in alone.tables.items():
        if name == "hiring_stability" or not name.startswith("hiring_"):
            continue
        pd.testing.assert_frame_equal(table.reset_index(drop=True), pooled.tables[name].reset_index(drop=True),
                                      obj=name)
        compared += not table.empty
    assert compared >= 10  # win rates, TSR, scores, bias summary, noise floor, controls, parse health, ...
    assert "hiring_stability" in alone.summary["unsupported"]


def test_the_stability_table_uses_every_run_with_the_primary_first(stores):
    _alone, pooled, store = stores
    table = pooled.tables["hiring_stability"]
    assert set(table["temperature"]) == {0.0, 1.0}
    at_zero = table[table["temperature"].eq(0.0)].set_index("repeats")
    assert list(at_zero.index) == [1, 2, 3] and at_zero.loc[3, "avg_variance"] > 0
    # repeat 1 at T = 0 is the primary run (sent without --generation-seed): its neutral mean score
    results = counterbench.run.load_results(str(store))
    first = primary_run(results)
    assert len(first) == len(results[results["temperature"].eq(0.0) & results["seed"].isna()]) < len(results)
    primary_scores = frames(first)["scores"]
    mean = primary_scores[primary_scores["group"].eq("neutral")]["score"].mean()
    assert at_zero.loc[1, "repeat_mean"] == pytest.approx(mean, abs=1e-12)


def test_the_primary_run_is_the_default_temperature_else_the_lowest():
    rows = pd.DataFrame({"model": ["m"] * 6 + ["n"] * 3, "use_case": ["score"] * 9,
                         "temperature": [1.0, 0.0, 0.0, 0.0, 0.5, 0.0, 0.7, 0.7, 1.0],
                         "seed": [None, 4, 2, 3, None, 2, 5, 3, None]})
    kept = primary_run(rows)
    assert kept.index.tolist() == [2, 5, 7]  # m: T = 0, lowest seed; n: no T = 0, so T = 0.7, lowest seed
    unseeded = rows.drop(columns="seed")
    assert primary_run(unseeded) is unseeded  # no seed recorded: nothing to choose between
    one = rows.iloc[[2, 5]]
    assert primary_run(one) is one
