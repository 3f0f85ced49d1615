"""The built-in studies' paper presets run to a report from a store with a simulated model.

``audit stem --preset paper`` once crashed after every request had been paid for: the store gave the
progressive experiment's ``step`` back as a float (``'1.0'``) and the SHAP-by-step table parsed it as an
integer. Both paper presets are run here through the CLI (simulated model → SQLite store → analysis read
back from the store → report), then reported again from the store alone (no model, nothing re-run).
Each takes some 10–20 s.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.slow  # scheduled first (tests/conftest.py)

PAPER = [("stem", "sim:stem", ("stem_progressive_shap", "stem_progressive", "stem_single_bias", "stem_bias")),
         ("hiring", "sim:hiring-biased", ("hiring_win_rates", "hiring_scores", "hiring_recoverability"))]


# the hiring preset is run from tests/studies/test_paper_preset_hiring_from_store.py: a file's tests stay in one
# test process, and these two (some 25 s each) are among the suite's longest
@pytest.mark.parametrize(("study", "model", "tables"), PAPER[:1], ids=[p[0] for p in PAPER[:1]])
def test_the_paper_preset_completes_from_a_store(tmp_path: Path, study: str, model: str,
                                                 tables: tuple[str, ...]) -> None:
    paper_preset_completes_from_a_store(tmp_path, study, model, tables)


def paper_preset_completes_from_a_store(tmp_path: Path, study: str, model: str, tables: tuple[str, ...]) -> None:
    store, out = tmp_path / "s.db", tmp_path / "out"
    audit = run_cli("audit", study, "--model", model, "--preset", "paper", "--store", str(store), "-o", str(out),
                    cwd=tmp_path, timeout=600)
    assert audit.returncode == 0, audit.stderr[-3000:]
    assert "Traceback" not in audit.stderr
    assert (out / "report.html").is_file() and (out / "report.md").is_file()
    summary = json.loads((out / "analysis" / "summary.json").read_text(encoding="utf-8"))
    assert summary["study"] == study and not summary.get("failed_tables")
    for name in tables:
        frame = pd.read_parquet(out / "analysis" / f"{name}.parquet")
        assert not frame.empty, f"{name} is empty after the paper preset"
    if study == "stem":  # the design column that crashed: integer steps, as written
        steps = pd.read_parquet(out / "analysis" / "stem_progressive_shap.parquet")["step"]
        assert pd.api.types.is_integer_dtype(steps) and set(steps) >= {1, 2, 3}
    again = run_cli("report", study, "--store", str(store), "-o", str(tmp_path / "again.html"), cwd=tmp_path,
                    timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert (tmp_path / "again.html").is_file()
