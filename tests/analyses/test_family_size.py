"""Power's family is the family the marks are made in: the rows :mod:`counterbench.analyses.family_size` counts
from a design before any answer are the rows an analysis of the design's answers tests in one model's family
(:func:`counterbench.analyses.families.family_sizes`), table by table, and the analysis's ``power`` table tests
at α / that size."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import counterbench
from counterbench.analyses.families import MARKING, family_sizes
from counterbench.analyses.family_size import COUNTERS, design_family_size, family_rows
from counterbench.analyses.study import analyze_study
from counterbench.run.results import load_results
from counterbench.studies.registry import load_study


def _tested_rows(tables: dict[str, pd.DataFrame], model: str) -> dict[str, int]:
    """Per marking table: the rows of ``model`` with a family q-value (the rows the family tested)."""
    out = {}
    for name in MARKING:
        frame = tables.get(name)
        ok = frame is not None and not frame.empty and "q_value" in frame.columns
        out[name] = int((frame["q_value"].notna() & (frame["model"].astype(str) == model)).sum()) if ok else 0
    return out


def _run(tmp_path: Path, study: str, table: pd.DataFrame, sim: str) -> dict[str, pd.DataFrame]:
    store = tmp_path / "s.db"
    counterbench.run_prompts(table, [sim], store=store, handle_signals=False)
    return analyze_study(load_results(store), study, bootstrap=30).tables


def test_every_table_of_the_family_is_counted() -> None:
    assert set(COUNTERS) == set(MARKING)


@pytest.mark.parametrize(("study", "filters", "sim", "expected"), [
    ("examples/approval_crossed.yaml", {}, "sim:examples/sim/approval_crossed.yaml", {"outcome_gaps": 7}),
    ("examples/loan_rate.yaml", {}, "sim:examples/sim/loan_rate.yaml", {"outcome_gaps": 8, "language_gaps": 4}),
    ("rupeebias", {"use_case": ["salary_estimation"], "variant": ["standard", "fairness"],
                   "profile": ["P01", "P02", "P03", "P04"], "axis": ["Gender", "Religion"]}, "sim:biased", None),
])
def test_the_design_count_is_the_analysis_family(tmp_path: Path, study: str, filters: dict[str, object], sim: str,
                                                 expected: dict[str, int] | None) -> None:
    table = counterbench.prompts(study, **filters)
    counted = family_rows(table, load_study(study))
    tables = _run(tmp_path, study, table, sim)
    model = next(iter(family_sizes(tables)))
    assert counted == _tested_rows(tables, model)
    assert design_family_size(table, load_study(study)) == family_sizes(tables)[model] == sum(counted.values())
    if expected is not None:
        assert {k: v for k, v in counted.items() if v} == expected
    else:  # two languages and the fairness prompt: every amount table, the language rows, the ablation
        assert all(counted[name] > 0 for name in ("outcome_gaps", "language_gaps", "cpg", "cpg_overall",
                                                  "language_moderation", "fairness_ablation", "kendalls_w"))
        power = tables["power"]
        assert set(power["family_size"]) == {sum(counted.values())}
        assert (power["alpha"] <= 0.05 / sum(counted.values()) + 1e-12).all()


def test_power_of_an_amount_design_counts_the_whole_family(tmp_path: Path) -> None:
    """The quick preset's family: 60 gap-table rows, 30 + 6 canonical pair gaps, 30 + 6 + 1 Kendall's W rows —
    not the 6 canonical pairs averaged over use cases."""
    from tests.conftest import run_cli

    table = counterbench.prompts("rupeebias", preset="quick")
    assert design_family_size(table, load_study("rupeebias")) == 133
    done = run_cli("power", "rupeebias", "--preset", "quick", "--out", str(tmp_path / "p.csv"))
    assert done.returncode == 0, done.stderr
    frame = pd.read_csv(tmp_path / "p.csv")
    assert set(frame["family_size"]) == {133} and (frame["alpha"] <= 0.05 / 133 + 1e-12).all()
