"""The README's Python example runs unchanged inside a running event loop (as in Jupyter), and
``counterbench.audit`` does what the CLI's audit does."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

import pytest

import counterbench
from tests.conftest import REPO

pytestmark = pytest.mark.slow


def _readme_example() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    match = re.search(r"```python\n(.*?)```", text, re.S)
    assert match, "README has no Python example"
    return match.group(1)


def test_readme_example_runs_inside_a_running_event_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code = _readme_example()

    async def notebook_cell() -> None:
        asyncio.get_running_loop()  # we are inside a running loop, like a Jupyter cell
        exec(compile(code, "README.md", "exec"), {})

    asyncio.run(notebook_cell())
    assert (tmp_path / "report.html").is_file() and os.path.getsize(tmp_path / "report.html") > 10_000


def test_audit_from_python_with_generation_keywords(tmp_path: Path) -> None:
    async def cell() -> counterbench.pipeline.Audit:
        return counterbench.audit(str(REPO / "examples" / "suitability_score.yaml"), ["sim:biased"],
                                  out=tmp_path / "out", store=tmp_path / "cb.db", bootstrap=500, temperature=0.0,
                                  max_tokens=16)

    done = asyncio.run(cell())
    assert done.run.complete and done.report.html.is_file()
    assert "Job suitability scores (1-10)" in done.report.html.read_text(encoding="utf-8")
    html = done._repr_html_()
    assert "outcome_gaps" in html and "Wheelchair user" in html
    # sim:biased on a user study: the second identifier of each axis gets 0.85 x the expected score
    # (6.4 on a 1-10 scale, so -0.96 points), and the report's banner says so
    gaps = done.analysis.tables["outcome_gaps"].set_index("comparison")
    for second in ("Wheelchair user", "Muslim"):
        row = gaps.loc[second]
        assert row["ci_low"] <= -0.96 <= row["ci_high"] and row["ci_high"] < 0, row
    assert not bool(gaps.loc["Deaf", "significant"]) and not bool(gaps.loc["Jewish", "significant"])
    assert "sim:biased plants:" in done.report.html.read_text(encoding="utf-8")
