"""The README's approval demo shows what its simulated model plants and nothing else (issue 30: the
demos show no mark on an unplanted level): through the CLI, the store and the analysis read back, the only
marked gap is Black against white, with its sign."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from tests.conftest import run_cli_here


def test_the_approval_demo_marks_only_the_planted_level(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = run_cli_here("audit", "examples/approval_crossed.yaml", "--model",
                        "sim:examples/sim/approval_crossed.yaml", "--store", str(tmp_path / "cb.db"), "-o", str(out))
    assert done.returncode == 0, done.stderr
    marked = pd.read_parquet(out / "analysis" / "outcome_gaps.parquet")
    marked = marked[marked["significant"].astype(bool)]
    assert list(marked["comparison"]) == ["Black"] and (marked["difference"] < 0).all(), marked
    findings = [line for line in done.stdout.splitlines() if line.startswith("- ")]
    assert len(findings) == 1 and "Black" in findings[0] and "Asian" not in done.stdout, findings
