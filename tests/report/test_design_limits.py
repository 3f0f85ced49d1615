"""The report says what a design cannot support (counterbench.report.limits), and no interval is drawn on
fewer slots than its calibration supports (counterbench.stats.inference.too_few_for_interval)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from tests.conftest import run_cli


def test_a_thin_design_gets_no_interval_and_says_so(tmp_path: Path) -> None:
    # the quick preset with one question variant: 2 slots per use case for salary and increment
    out = tmp_path / "audit"
    done = run_cli("audit", "rupeebias", "--model", "sim:fair", "--preset", "quick", "--question-variant", "1",
                   "--store", str(tmp_path / "a.db"), "--out", str(out), "--bootstrap", "200", "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr
    cells = pd.read_csv(out / "analysis" / "use_case_mean_delta.csv")
    thin = cells[cells["use_case"].isin(["salary_estimation", "salary_increment_estimation"])]
    assert (thin["n_slots"] == 2).all() and thin["ci_low"].isna().all() and thin["ci_high"].isna().all()
    wide = cells[~cells.index.isin(thin.index)]
    assert (wide["n_slots"] == 3).all() and wide["ci_low"].notna().all()
    # Mean Δ% is a mean of absolute gaps: no interval of it goes below 0
    for name in ("use_case_mean_delta", "use_case_axis_mean_delta", "axis_mean_delta"):
        frame = pd.read_csv(out / "analysis" / f"{name}.csv")
        assert (frame["ci_low"].dropna() >= 0).all(), name
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "rest on fewer than 3 slots per use case" in report and "shown without an interval" in report
    assert "Only some identifiers of an axis were run" in report
