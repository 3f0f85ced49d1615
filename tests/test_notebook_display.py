"""The notebook shows the finding: an analysis's (and an audit's) HTML leads with the finding sentences
and a compact leaderboard, the tables folded behind ``<details>``; the README's Python block, run as a
notebook, shows the finding sentence and no warning; progress without ipywidgets is text.

The notebook test needs ``nbclient`` and ``ipykernel`` (the ``dev`` extra; skipped where they are not
installed); the HTML itself is checked without them, from the README's block executed in this process."""

from __future__ import annotations

import asyncio
import os
import re
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import counterbench
from counterbench.analyses.result import AnalysisResult
from tests.conftest import REPO

APPROVAL = REPO / "examples" / "approval_crossed.yaml"
APPROVAL_SIM = REPO / "examples" / "sim" / "approval_crossed.yaml"


def _readme_example() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    match = re.search(r"```python\n(.*?)```", text, re.S)
    assert match, "README has no Python example"
    return match.group(1)


def _before_details(page: str) -> str:
    return page.split("<details", 1)[0]


@pytest.mark.slow
def test_readme_block_displays_the_finding_first_and_warns_nothing(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code = _readme_example()
    assert code.rstrip().splitlines()[-1].split("#")[0].strip() == "analysis", "the block ends by showing it"
    namespace: dict[str, Any] = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")

        async def notebook_cell() -> None:  # inside a running loop, as a Jupyter cell is
            exec(compile(code, "README.md", "exec"), namespace)

        asyncio.run(notebook_cell())
        page = namespace["analysis"]._repr_html_()
    assert [str(w.message) for w in caught] == []
    findings = namespace["analysis"].summary["findings"]
    assert findings and all(f in page for f in (_escaped(f) for f in findings))
    head = _before_details(page)
    assert _escaped(findings[0]) in head and "Leaderboard" in head and "Mean Δ%" in head and "V@10 %" in head
    assert "sim:biased" in head and "Simulated" in head
    # every table is still there, folded: its name in a summary line
    for name in ("leaderboard", "cpg", "identifier_deviation"):
        assert f"<summary>{name} (" in page
    assert head.index(_escaped(findings[0])) < head.index("Leaderboard")


def _escaped(text: str) -> str:
    import html

    return html.escape(text)


@pytest.mark.slow
def test_an_outcome_study_shows_its_largest_gaps_and_the_audit_its_report(tmp_path: Path) -> None:
    async def cell() -> counterbench.pipeline.Audit:
        return counterbench.audit(str(APPROVAL), [f"sim:{APPROVAL_SIM}"], out=tmp_path / "out",
                                  store=tmp_path / "cb.db", bootstrap=300)

    done = asyncio.run(cell())
    page = done._repr_html_()
    head = _before_details(page)
    finding = done.analysis.summary["findings"][0]
    assert "Black is" in finding and _escaped(finding) in head
    assert "Largest matched gaps" in head and "counterbench audit: completed" in head
    assert str(done.report.html) in head
    # the marked gap leads the compact table: Black against white, in percentage points
    table = head.split("Largest matched gaps", 1)[1]
    first_row = re.search(r"<tbody>\s*<tr>(.*?)</tr>", table, re.S)
    assert first_row and "<td>Black</td>" in first_row.group(1) and "<td>white</td>" in first_row.group(1)
    assert "<summary>outcome_gaps (" in page and "<summary>crossed_regression (" in page


def test_the_view_escapes_and_says_when_there_is_no_finding() -> None:
    gaps = pd.DataFrame({"model": ["m<1>"], "use_case": ["u"], "facet": ["f"], "comparison": ["<b>x</b>"],
                         "reference": ["r"], "difference": [1.5], "ci_low": [-1.0], "ci_high": [4.0],
                         "n_slots": [8], "significant": [False]})
    result = AnalysisResult({"outcome_gaps": gaps, "empty": pd.DataFrame()},
                            {"title": "T & <i>", "findings": ["a <script>x</script> finding"]})
    page = result._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;" in page and "T &amp; &lt;i&gt;" in page
    assert "&lt;b&gt;x&lt;/b&gt;" in page and "<summary>empty" not in page
    quiet = AnalysisResult({}, {"study": "s", "findings": []})._repr_html_()
    assert "no finding in words" in quiet and "<details" not in quiet


NOTEBOOK_SETUP = """\
import warnings
warnings.simplefilter("always")
"""


@pytest.mark.slow
def test_readme_block_as_a_notebook_shows_the_finding_without_warnings(tmp_path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(NOTEBOOK_SETUP), nbformat.v4.new_code_cell(_readme_example())]
    env_path = os.pathsep.join([str(REPO / "src"), str(REPO), os.environ.get("PYTHONPATH", "")])
    os.environ["PYTHONPATH"], saved = env_path, os.environ.get("PYTHONPATH")
    try:
        client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                         resources={"metadata": {"path": str(tmp_path)}})
        client.execute()
    finally:
        if saved is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = saved
    outputs = nb.cells[1].outputs
    html = "".join(o.get("data", {}).get("text/html", "") for o in outputs if o.output_type == "execute_result")
    streams = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    displayed = [o for o in outputs if o.output_type in ("display_data", "error")]
    assert "offers Dalit" in html and "less than Brahmin" in html, html[:500]
    # rich's live bar without ipywidgets: a UserWarning 'install "ipywidgets"' per refresh and an empty box
    assert displayed == [], displayed
    assert "Warning" not in streams and "ipywidgets" not in streams, streams
    # progress without ipywidgets: text lines with count and total, the last at 100%
    assert re.search(r"\[sim:biased\] [\d,]+/[\d,]+ \(100\.0%\)", streams), streams


def test_ipython_display_formatter_shows_the_finding() -> None:
    """The IPython display path: the same object through IPython's own display formatter."""
    pytest.importorskip("IPython")
    from IPython.core.formatters import DisplayFormatter

    result = AnalysisResult({}, {"study": "s", "findings": ["s finds a 3 pp gap."]})
    data, _ = DisplayFormatter().format(result)
    assert "s finds a 3 pp gap." in data["text/html"]
