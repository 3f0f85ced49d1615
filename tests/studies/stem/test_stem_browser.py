"""The STEM report (paper preset, 3 simulated models) in headless Chromium at 1280 px: the progressive chart
and the interaction grids (the paper's Tables 12–14) are on screen, every table's Mark column is within the
page, and every chart label reads in full — not shortened, not cut by its chart's edge, not overlapping
another label of the same chart."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from itertools import combinations
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from counterbench.builtin.stem.progressive_chart import step_labels
from counterbench.builtin.stem.results import analyze_results
from counterbench.builtin.stem.simulate import simulate_outcomes
from counterbench.builtin.stem.study import StemStudy
from counterbench.models.simulated import load_profile
from counterbench.report.api import write_report
from counterbench.report.context import ReportInput
from tests.report.chromium import CHROMIUM
from tests.studies.hiring.test_hiring_browser_labels import READ_LABELS

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,  # ~45 s: the paper preset's 21,385 prompts per model analysed for 3 models
    pytest.mark.skipif(CHROMIUM is None, reason="headless chromium (Debian package `chromium`) is not installed"),
]

#: every chart text's box and its chart's index; every interaction grid's caption and box
READ_BOXES = r"""
(() => {
  const charts = [...document.querySelectorAll('svg.chart')];
  const texts = charts.flatMap((svg, i) => [...svg.querySelectorAll('text')].map(t => {
    const r = t.getBoundingClientRect();
    return {chart: i, label: svg.getAttribute('aria-label'), left: r.left, right: r.right, top: r.top,
            bottom: r.bottom, text: [...t.childNodes].filter(n => n.nodeType === 3).map(n => n.textContent).join('')};
  }));
  const grids = [...document.querySelectorAll('table')]
    .filter(t => t.caption && / \(MGL\)$/.test(t.caption.textContent))
    .map(t => { const r = t.getBoundingClientRect();
                return {caption: t.caption.textContent.trim(), width: r.width, height: r.height, right: r.right,
                        cells: t.querySelectorAll('tbody td').length}; });
  const marks = [...document.querySelectorAll('th')].filter(th => /^Mark/.test(th.textContent.trim()))
    .map(th => { const r = th.getBoundingClientRect();
                 const section = th.closest('section');
                 const heading = section ? section.querySelector('h2, h3') : null;
                 return {text: th.textContent.trim(), right: r.right, width: r.width,
                         section: heading ? heading.textContent.trim() : ''}; });
  return JSON.stringify({texts, grids, marks, width: document.documentElement.clientWidth});
})()
"""


def _report(tmp_path: Path) -> Path:
    table = StemStudy().table  # the paper preset: everything
    planted = load_profile("stem")
    models: dict[str, Any] = {"sim:stem": (planted, 0), "sim:stem-null": (dataclasses.replace(planted, effects=()), 1),
                              "sim:stem-reseeded": (planted, 2)}
    results = pd.concat([simulate_outcomes(table, name, preset=profile, seed=seed, profile_sd=0.1)
                         for name, (profile, seed) in models.items()], ignore_index=True)
    tables, summary = analyze_results(results)
    return write_report(ReportInput(tables, {**summary, "study": "stem", "title": "STEM explanations"}),
                        tmp_path / "r.html").html


def _overlap(a: dict[str, Any], b: dict[str, Any]) -> float:
    """The area two boxes share (px²)."""
    width = min(a["right"], b["right"]) - max(a["left"], b["left"])
    height = min(a["bottom"], b["bottom"]) - max(a["top"], b["top"])
    return max(width, 0.0) * max(height, 0.0)


def test_the_progressive_chart_grids_and_labels_read_at_1280_px(tmp_path: Path) -> None:
    from tests.viewer.cdp import Browser

    url = _report(tmp_path).resolve().as_uri()

    async def read() -> tuple[list[dict[str, Any]], dict[str, Any]]:
        async with Browser(tmp_path) as page:
            await page.send("Emulation.setDeviceMetricsOverride",
                            {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False})
            await page.goto(url)
            return list(json.loads(await page.evaluate(READ_LABELS))), json.loads(await page.evaluate(READ_BOXES))

    labels, boxes = asyncio.run(read())
    # the progressive chart: a panel per model × experiment, the planted model's first, every step labelled
    progressive = [t for t in labels if str(t["chart"]).endswith(": grade level per step")]
    charts = list(dict.fromkeys(str(t["chart"]) for t in progressive))
    assert len(charts) >= 4 and charts[0].startswith("sim:stem · india · builtin · progressive"), charts
    for chart in charts:
        experiment = "ablation" if "ablation" in chart else "progressive"
        shown = {str(t["text"]) for t in progressive if t["chart"] == chart}
        assert set(step_labels("india", experiment).values()) <= shown, (chart, shown)
    # the interaction grids (Tables 12–14): shown on the page, not folded away, every cell filled, within 1280 px
    grids = boxes["grids"]
    captions = {g["caption"] for g in grids}
    for model in ("sim:stem", "sim:stem-null", "sim:stem-reseeded"):
        assert any(c.startswith(f"{model} · progressive · ") for c in captions), (model, captions)
    for grid in grids:
        assert grid["height"] > 0 and grid["cells"] >= 4 and grid["right"] <= boxes["width"] + 0.5, grid
    # every table's Mark column is on screen at 1280 px (the pairwise table's used to sit past the edge)
    assert len(boxes["marks"]) >= 3
    off = [mark for mark in boxes["marks"] if not (mark["width"] > 0 and mark["right"] <= boxes["width"] + 0.5)]
    assert not off, off
    # every chart label: not hidden or cut, not shortened (a label with a tooltip reads as its tooltip)
    assert len(labels) > 200
    for text in labels:
        assert text["hidden"] == "", text
        if text["title"] and text["anchor"] == "end":
            assert text["text"] == text["title"], f"label shortened: {text}"
    # and no two labels of one chart overlap (more than a hair of antialiasing)
    by_chart: dict[int, list[dict[str, Any]]] = {}
    for box in boxes["texts"]:
        if box["text"].strip() and box["right"] > box["left"]:
            by_chart.setdefault(box["chart"], []).append(box)
    assert len(by_chart) >= 10
    clashes = [(a["label"], a["text"], b["text"]) for part in by_chart.values() for a, b in combinations(part, 2)
               if _overlap(a, b) > 2.0]
    assert not clashes, clashes[:10]
