"""The outcome tables' swap tests run batched (:func:`counterbench.analyses.slot_inference.swap_tested`: one
:meth:`SwapTest.pvalues` per table, one matrix product per number of slots); every gap's p must be the one its
own swap test gives, computed here directly from the arrangements, one gap at a time."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from counterbench.analyses import outcome_tables as ot
from counterbench.analyses.study import resolve_study
from counterbench.prompts import prompts
from counterbench.stats.inference import MIN_SLOTS
from counterbench.stats.seeding import stable_seed
from counterbench.stats.swap_test import SwapTest
from tests.analyses.simlaw import PLANTED, simulate_results


def _alone(seed: int, first: np.ndarray, second: np.ndarray, statistic: Any) -> float:
    """One gap's swap test without any batching: every arrangement's summed statistics, counted."""
    swaps, exact = SwapTest(seed).arrangements(first.shape[0])
    observed = float(statistic(first.sum(axis=0)[None, :])[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        values = statistic(first.sum(axis=0)[None, :] + swaps @ (second - first))
    as_far = int(np.count_nonzero(np.abs(np.nan_to_num(values, nan=0.0)) >= abs(observed) * (1 - 1e-9) - 1e-300))
    return min(1.0, as_far / values.size) if exact else min(1.0, (1 + as_far) / (1 + values.size))


@pytest.fixture(scope="module")
def rows() -> tuple[pd.DataFrame, Any]:
    study = resolve_study("rupeebias")
    # 12 to 27 matched slots a gap (some enumerated exactly, some over random arrangements), 5% refused
    table = prompts("rupeebias", use_case=["salary_estimation", "counter_offer_recommendation"], question_variant=[1])
    results = simulate_results(table, "sim:b", effects=PLANTED, noise_sd=0.04, refusal_rate=0.05)
    return ot.measured_rows(results[results["variant"].astype(str).eq("standard")], study.outcomes), study


@pytest.mark.parametrize("table", ["outcome_gaps", "language_gaps"])
def test_batched_swap_pvalues_are_each_gaps_own(rows: tuple[pd.DataFrame, Any], table: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    frame, study = rows
    calls: list[tuple[int, list[Any], list[float]]] = []
    batched = SwapTest.pvalues

    def recording(self: SwapTest, tests: Any) -> list[float]:
        out = batched(self, tests)
        calls.append((self.seed, list(tests), list(out)))
        return out

    monkeypatch.setattr(SwapTest, "pvalues", recording)
    slots = list(study.slot_columns)
    if table == "outcome_gaps":
        result = ot.level_and_gap_tables(frame, study.facets, slots, 50, 0)[1]
        seed = stable_seed("outcome_gaps_swap_test", base_seed=0)
    else:
        result = ot.language_gap_table(frame, study.facets, slots, list(study.languages), 50, 0)
        seed = stable_seed("language_gaps_swap_test", base_seed=0)
    assert len(calls) == 1, "one batched call per table"
    call_seed, tests, got = calls[0]
    assert call_seed == seed
    sizes = {np.asarray(first).shape[0] for first, _, _ in tests}
    assert len(tests) > 100 and len(sizes) > 5 and min(sizes) <= SwapTest(seed).exact_up_to < max(sizes), \
        "tests of many sizes, exact and random, share the batch"
    assert min(sizes) >= MIN_SLOTS
    expected = [_alone(seed, np.asarray(f, dtype=np.float64), np.asarray(s, dtype=np.float64), stat)
                for f, s, stat in tests]
    assert got == expected  # exactly, gap by gap
    # and the table's p is the larger of that swap p and the interval's t-test p, in the rows' order
    testable = result[result["n_slots"] >= MIN_SLOTS]
    assert len(testable) == len(got)
    p = testable["p_value"].to_numpy(np.float64)
    swap_p = np.array(got)
    defined = ~np.isnan(p)
    assert defined.any() and (p[defined] >= swap_p[defined]).all()
    assert (p[defined] == swap_p[defined]).any()  # the swap test decides some rows
