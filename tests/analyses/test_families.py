"""One family of marks per model (analyses/families.py): every marking table under one correction."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from counterbench.analyses.families import DESCRIPTIVE, MARKING, families_summary, mark_families

pytestmark = pytest.mark.slow  # scheduled first (tests/conftest.py)


def _gaps(model: str, p: list[float], use_case: str = "u") -> pd.DataFrame:
    return pd.DataFrame({"model": model, "use_case": use_case, "p_value": p, "q_value": 0.5,
                         "ci_low": 1.0, "ci_high": 2.0, "significant": False})


def test_one_correction_over_every_table_of_a_model() -> None:
    """p 0.01 is marked in a family of 2 (q 0.02), not in one of 10 (q 0.1) — wherever the other 8 rows are."""
    alone = {"outcome_gaps": _gaps("m", [0.01, 0.9])}
    mark_families(alone)
    assert alone["outcome_gaps"]["significant"].tolist() == [True, False]
    shared = {"outcome_gaps": _gaps("m", [0.01, 0.9]),
              "kendalls_w_axis": pd.DataFrame({"model": "m", "p_fisher": [0.8] * 8, "q_value": 0.9,
                                               "significant": False}),
              "crossed_regression": _gaps("m", [0.0001]).drop(columns="use_case")}
    mark_families(shared)
    gaps = shared["outcome_gaps"]
    assert not gaps["significant"].any() and gaps["q_value"].iloc[0] == np.float64(0.01) * 10
    # the regression tests the gaps' contrasts again: its p is kept, with no q and no mark
    regression = shared["crossed_regression"]
    assert regression["p_value"].iloc[0] == 0.0001 and not regression["significant"].any()
    assert regression["q_value"].isna().all()


def test_models_are_families_of_their_own_and_untested_rows_stay_out() -> None:
    tables = {"outcome_gaps": pd.concat([_gaps("a", [0.01, 0.9]), _gaps("b", [0.001] * 5)], ignore_index=True)}
    tables["outcome_gaps"].loc[1, "q_value"] = np.nan  # too few slots for its own rule: not in the family
    mark_families(tables)
    frame = tables["outcome_gaps"]
    assert frame["significant"].tolist() == [True, False, True, True, True, True, True]
    assert frame["q_value"].iloc[0] == 0.01 and np.isnan(frame["q_value"].iloc[1])


def test_a_mark_needs_its_interval_to_exclude_zero() -> None:
    tables = {"outcome_gaps": _gaps("m", [0.001]).assign(ci_low=-1.0)}
    mark_families(tables)
    assert not tables["outcome_gaps"]["significant"].any()


def test_only_the_primary_measure_marks() -> None:
    """p(yes) primary for use case u, the sampled answer for v: the other measure's rows keep p, not a mark."""
    measures = pd.DataFrame({"model": "m", "use_case": ["u", "v"], "primary": ["p(yes)", "sampled"]})
    tables = {"outcome_gaps": pd.concat([_gaps("m", [0.001], "u"), _gaps("m", [0.001], "v")], ignore_index=True),
              "probability_gaps": pd.concat([_gaps("m", [0.001], "u"), _gaps("m", [0.001], "v")], ignore_index=True),
              "decision_measures": measures}
    mark_families(tables)
    assert tables["outcome_gaps"]["significant"].tolist() == [False, True]
    assert tables["probability_gaps"]["significant"].tolist() == [True, False]
    assert tables["outcome_gaps"]["p_value"].tolist() == [0.001, 0.001]


def test_a_null_model_is_marked_somewhere_at_most_five_percent_of_the_time() -> None:
    """Uniform p-values in four tables of a null model: each table alone marks ~5% of models, together ~18%;
    in one family, at most 5% (Monte Carlo: 4,000 models, independent p-values, all in the same tables:
    each model's family is its own rows only)."""
    rng = np.random.default_rng(3)
    sizes = {"outcome_gaps": 12, "cpg_overall": 3, "language_gaps": 6, "kendalls_w_axis": 3}
    n = 4000
    models = np.asarray([f"m{i}" for i in range(n)])
    tables, alone = {}, np.zeros(n, dtype=bool)
    for name, size in sizes.items():
        p = rng.uniform(size=(n, size))
        ranked = np.sort(p, axis=1) <= 0.05 * np.arange(1, size + 1) / size  # BH within the table alone
        alone |= ranked.any(axis=1)
        tables[name] = pd.DataFrame({"model": np.repeat(models, size), "q_value": 0.5, "significant": False,
                                     MARKING[name].p_col: p.ravel(), "ci_low": 1.0, "ci_high": 2.0})
    mark_families(tables)
    shared = np.zeros(n, dtype=bool)
    for frame in tables.values():
        marked = frame.groupby("model", sort=False)["significant"].any()
        shared |= marked.reindex(models).to_numpy(dtype=bool)
    any_alone, any_shared = int(alone.sum()), int(shared.sum())
    print(f"any mark, tables alone: {any_alone / n:.3f}; one family: {any_shared / n:.3f}")
    assert any_alone / n > 0.15 and any_shared / n <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / n), (any_alone, any_shared)


def test_the_summary_names_the_shared_family_and_why_descriptive_tables_have_no_mark() -> None:
    frame = pd.DataFrame({"model": ["m"]})
    out = families_summary({"outcome_gaps": frame, "crossed_regression": frame, "mog": frame})
    assert set(out) == {"outcome_gaps", "crossed_regression"}
    assert "one family per model" in out["outcome_gaps"] and out["crossed_regression"] == DESCRIPTIVE[
        "crossed_regression"]
