"""An analysis failure never loses a run: a table that fails is named with its reason, the rest comes out.

A table is registered whose function raises on purpose; a study is audited through real HTTP into a
SQLite store. The audit must still write every other table, the report (with a banner naming the table
and a one-line reason) and a gate verdict; ``failed_tables`` names it in the summary; the CLI's
``report --store`` and ``analyze`` recompute everything from the store without a model, say which table
failed in one line and exit 1; once the table is fixed (unregistered here), the same store reports clean.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import yaml

import counterbench
from counterbench.analyses.isolation import FailedTables, failure_reason, isolated
from counterbench.analyses.table_registry import TABLES, TableInputs, TableSpec
from counterbench.errors import UserError
from counterbench.testing._fakecore import FaultConfig, run_in_thread
from counterbench.testing.fake_openai import FakeOpenAIServer
from tests.conftest import run_cli_here
from tests.matrix.planted import PLANTED_LEVEL, Planted, reply, study_mapping, use_case

BROKEN = "broken_on_purpose"


def _explode(inputs: TableInputs) -> pd.DataFrame:
    raise RuntimeError("planted failure for the test\nwith a second line nobody should see")


@pytest.fixture
def broken_table() -> Iterator[None]:
    TABLES.register(BROKEN, TableSpec(BROKEN, ("n",), "a table that always fails", _explode), source=__name__)
    try:
        yield
    finally:
        TABLES.unregister(BROKEN)


def _study(tmp: Path) -> Path:
    study = study_mapping("single")
    study["use_cases"] = {use_case("label"): study["use_cases"][use_case("label")]}  # type: ignore[index]
    path = tmp / "label_study.yaml"
    path.write_text(yaml.safe_dump(study, sort_keys=False), encoding="utf-8")
    return path


def _responses(store: Path) -> int:
    with sqlite3.connect(store) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])


def test_a_failing_table_is_named_and_everything_else_comes_out(broken_table: None, tmp_path: Path) -> None:
    study, store, out = _study(tmp_path), tmp_path / "cb.db", tmp_path / "out"
    with run_in_thread(FakeOpenAIServer(FaultConfig(reply=reply(Planted())))) as server:
        result = counterbench.audit(str(study), [f"m=openai-compatible:{server.base_url}:matrix"], store=store,
                                    out=out, bootstrap=200, concurrency=8)
    reason = "RuntimeError: planted failure for the test"
    assert result.analysis.summary["failed_tables"] == {BROKEN: reason}
    assert BROKEN not in result.analysis.summary.get("unsupported", {})
    gaps = result.analysis.tables["outcome_gaps"]  # the other tables are all there
    planted = gaps[gaps["comparison"] == PLANTED_LEVEL].iloc[0]
    assert bool(planted["significant"]) and float(planted["ci_high"]) < 0
    for name in ("outcome_levels", "outcome_gaps", "parse_health"):
        assert not pd.read_csv(out / "analysis" / f"{name}.csv").empty, name
    html = (out / "report.html").read_text(encoding="utf-8")
    assert 'class="banner banner-failed"' in html and f"{BROKEN} — {reason}." in html
    assert "second line" not in html
    assert PLANTED_LEVEL in html and html.count("<section") >= 3  # the report's body is there
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert f"{BROKEN} — {reason}" in markdown
    gate = run_cli_here("check", "--analysis", str(out / "analysis"))
    assert gate.returncode in (0, 1) and "Traceback" not in gate.stderr and gate.stdout.strip()

    paid = _responses(store)
    again = run_cli_here("report", str(study), "--store", str(store), "-o", str(tmp_path / "again.html"),
                         cwd=tmp_path)
    assert again.returncode == 1, again.stderr
    assert f"table {BROKEN} failed: {reason}" in again.stderr.splitlines()
    assert (tmp_path / "again.html").is_file() and "Traceback" not in again.stderr
    analysed = run_cli_here("analyze", str(study), "--store", str(store), "-o", str(tmp_path / "tables"),
                            cwd=tmp_path)
    assert analysed.returncode == 1 and f"table {BROKEN} failed: {reason}" in analysed.stderr
    summary = json.loads((tmp_path / "tables" / "summary.json").read_text(encoding="utf-8"))
    assert summary["failed_tables"] == {BROKEN: reason}
    assert not pd.read_csv(tmp_path / "tables" / "outcome_gaps.csv").empty
    assert _responses(store) == paid  # recomputed from the store: no model was called

    TABLES.unregister(BROKEN)  # "fixed": the same store reports clean
    try:
        fixed = run_cli_here("report", str(study), "--store", str(store), "-o", str(tmp_path / "fixed.html"),
                             cwd=tmp_path)
        assert fixed.returncode == 0, fixed.stderr
        assert 'class="banner banner-failed"' not in (tmp_path / "fixed.html").read_text(encoding="utf-8")
    finally:
        TABLES.register(BROKEN, TableSpec(BROKEN, ("n",), "a table that always fails", _explode), source=__name__)


def test_isolated_keeps_user_errors_and_names_bugs_in_one_line() -> None:
    failed = FailedTables()
    assert isolated(("a", "b"), lambda: 1 / 0, lambda: "fallback", failed) == "fallback"
    assert failed.reasons == {"a": "ZeroDivisionError: division by zero", "b": "ZeroDivisionError: division by zero"}
    with pytest.raises(UserError):
        isolated("c", lambda: (_ for _ in ()).throw(UserError("your mistake")), lambda: None, failed)
    assert "c" not in failed.reasons
    assert failure_reason(ValueError("x" * 1000)).endswith("…") and len(failure_reason(ValueError("x" * 1000))) == 240
