"""At 1280 px in headless Chromium every significance mark and every chart row label of the hiring report is
shown in full: not shortened, not cut by its chart's edge or by any clipping container."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pandas as pd
import pytest

import counterbench
import counterbench.builtin.hiring
from counterbench.builtin.hiring import synthetic as syn
from counterbench.builtin.hiring.analysis import analyze_hiring
from counterbench.builtin.hiring.plan import build_prompts, full_plan, plan_from_mapping
from counterbench.report.api import write_report
from tests.report.chromium import CHROMIUM

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="headless chromium (Debian package `chromium`) is not installed"),
]

#: every text of every chart: its own text, its tooltip, and what (if anything) hides part of it
READ_LABELS = r"""
(() => {
  const width = document.documentElement.clientWidth;
  const hidden = (el) => {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) return 'not rendered';
    if (r.left < -0.5 || r.right > width + 0.5) return 'outside the 1280 px window';
    for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
      const style = getComputedStyle(a);
      if (a.tagName.toLowerCase() === 'svg' || style.overflowX !== 'visible' || style.overflow !== 'visible') {
        const b = a.getBoundingClientRect();
        if (r.left < b.left - 0.5 || r.right > b.right + 0.5)
          return 'cut by ' + a.tagName.toLowerCase() + ' ' + (a.getAttribute('aria-label') || a.className || '');
      }
    }
    return '';
  };
  return JSON.stringify([...document.querySelectorAll('svg.chart text')].map(t => ({
    text: [...t.childNodes].filter(n => n.nodeType === 3).map(n => n.textContent).join(''),
    title: (t.querySelector('title') || {}).textContent || null,
    anchor: t.getAttribute('text-anchor'),
    chart: t.closest('svg').getAttribute('aria-label'),
    hidden: hidden(t),
  })));
})()
"""


#: a group name longer than the 30 characters a chart's own label margin holds (a row label of the bar
#: charts, of the confusion-matrix heatmaps and a column header of the relative-advantage heatmap)
LONG = "European-descent Singaporean (example)"


def _report(tmp_path) -> str:
    builtin = Path(counterbench.builtin.hiring.__file__).with_name("data") / "baskets.yaml"
    baskets = tmp_path / "baskets.yaml"
    baskets.write_text(builtin.read_text(encoding="utf-8").replace("ethnicity: Caucasian", f"ethnicity: {LONG}"),
                       encoding="utf-8")
    plan = plan_from_mapping({"jobs": 12, "variations": [1], "language_only": False, "recover_jobs": 2,
                              "baskets_file": str(baskets)}, base=full_plan())
    design = build_prompts(plan).drop(columns=["system", "user"])
    biased = syn.Planted(compare_effects={"Chinese": 0.35, "Indian Female": -0.3}, score_effects={"Male": 6.0})
    models = {"openai:gpt-4o-mini-2024-07-18": biased, "sim:hiring-fair": syn.Planted()}
    results = pd.concat([syn.answer_texts(design, m, p, seed=i) for i, (m, p) in enumerate(models.items())],
                        ignore_index=True)
    tables, unsupported = analyze_hiring(results, bootstrap=300)
    assert tables["hiring_win_rates"]["significant"].fillna(False).astype(bool).any()  # there are marks to read
    summary = {"study": "hiring", "title": "Hiring markers", "unsupported": unsupported,
               "models": {m: {"simulated": True} for m in models}}
    html = write_report(counterbench.report.context.ReportInput(tables, summary), tmp_path / "r.html").html
    return html.resolve().as_uri()


def test_every_mark_and_row_label_reads_in_full_at_1280_px(tmp_path):
    from tests.viewer.cdp import Browser

    url = _report(tmp_path)

    async def read() -> list[dict[str, object]]:
        async with Browser(tmp_path) as page:
            await page.send("Emulation.setDeviceMetricsOverride",
                            {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False})
            await page.goto(url)
            return list(json.loads(await page.evaluate(READ_LABELS)))

    texts = asyncio.run(read())
    marks = [t for t in texts if str(t["text"]).split(" · ")[0].endswith("*")]  # "+0.12* · MODEL"
    labels = [t for t in texts if t["anchor"] == "end" and t["title"]]  # row labels carry their full text as title
    assert len(marks) >= 3, "the planted preferences give marked groups"
    assert {"Chinese Male", "Chinese Female", "score · with rationale", "compare · no rationale"} <= \
        {str(t["text"]) for t in labels}
    heatmap_rows = [t for t in labels if str(t["chart"]).startswith("Relative advantage")]
    assert len(heatmap_rows) >= 8  # 2 models × 2 settings × 2 prompt variants
    for t in marks + labels:
        assert t["hidden"] == "", t
    for t in labels:
        assert t["text"] == t["title"], f"row label shortened: {t}"
    # labels longer than 30 characters: the bar charts' rows, the confusion matrices' rows
    long_rows = [t for t in labels if str(t["text"]).startswith(LONG)]
    assert {f"{LONG} Male", f"{LONG} Female", LONG} <= {str(t["text"]) for t in long_rows}
    charts = {str(t["chart"]) for t in long_rows}
    assert {"Win rate − 0.5", "Top-Score Rate (%)", "Mean score − neutral resume"} <= charts
    assert any("% of each true class" in str(t["chart"]) for t in long_rows)  # a heatmap row
    # no chart text is shortened, and a column header is wrapped in full and not cut
    assert not [t for t in texts if "…" in str(t["text"])]
    header = [t for t in texts if str(t["chart"]).startswith("Relative advantage") and t["title"] == f"{LONG} Male"]
    assert " ".join(str(t["text"]) for t in header) == f"{LONG} Male" and all(t["hidden"] == "" for t in header)
    # the group heading of each heatmap block names the model in full
    assert {"openai:gpt-4o-mini-2024-07-18", "sim:hiring-fair"} <= {str(t["text"]) for t in texts}
