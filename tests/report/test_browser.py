"""The report in headless Chromium: loads without console errors, is not blank, and model text
(a script and an ``onerror`` image planted in a model name and a response) shows as text and never runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from counterbench.report.api import write_report
from counterbench.report.context import ReportInput
from counterbench.report.samples import select_samples
from tests.report.chromium import CHROMIUM, load, root_tag, screenshot, with_probe
from tests.report.fixtures import make_summary, make_tables, sample_responses

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="headless chromium (Debian package `chromium`) is not installed"),
]

MARK = "data-pwned"
PAYLOAD = (f"<script>document.documentElement.setAttribute('{MARK}','script')</script>"
           f"<img src=x onerror=\"document.documentElement.setAttribute('{MARK}','img')\">")
EVIL_MODEL = f"evil:<img src=x onerror=\"document.documentElement.setAttribute('{MARK}','model')\">"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    models = ["sim:biased", "sim:fair", "openai:gpt-4o-mini", EVIL_MODEL, "local"]
    data = ReportInput(make_tables(models), make_summary(models),
                       select_samples(sample_responses(models, payload=PAYLOAD)))
    return write_report(data, tmp_path_factory.mktemp("browser") / "report.html").html


def probed(report: Path, workdir: Path, *, drop_csp: bool = False) -> Path:
    html = with_probe(report.read_text(encoding="utf-8"))
    if drop_csp:  # prove that escaping alone keeps the payload inert, without the policy's help
        start = html.index('<meta http-equiv="Content-Security-Policy"')
        html = html[:start] + html[html.index(">", start) + 1 :]
    page = workdir / ("nocsp.html" if drop_csp else "probed.html")
    page.write_text(html, encoding="utf-8")
    return page


def test_loads_without_console_errors(report: Path, tmp_path: Path) -> None:
    result = load(probed(report, tmp_path), tmp_path)
    root = root_tag(result.dom)
    assert 'data-probe="ready"' in root, "the probe did not run; is the DOM dump complete?"
    assert "data-probe-errors" not in root, root
    assert result.console == []
    assert "Leaderboard" in result.dom and "Methods" in result.dom


@pytest.mark.parametrize("drop_csp", [False, True], ids=["with-csp", "escaping-only"])
def test_planted_payload_is_text_and_never_runs(report: Path, tmp_path: Path, drop_csp: bool) -> None:
    result = load(probed(report, tmp_path, drop_csp=drop_csp), tmp_path)
    root = root_tag(result.dom)
    assert 'data-probe="ready"' in root
    assert MARK not in root, f"the payload ran: {root}"
    assert "data-probe-errors" not in root, f"an <img src=x> was created (its load failed): {root}"
    assert "<img" not in result.dom.lower() and "<script>document" not in result.dom
    assert "&lt;script&gt;document.documentElement.setAttribute" in result.dom  # shown as text
    assert "evil:&lt;img src=x onerror=" in result.dom
    assert result.console == []


def test_screenshot_is_not_blank(report: Path, tmp_path: Path) -> None:
    png = tmp_path / "report.png"
    console = screenshot(report, png, tmp_path)
    assert console == []
    pixels = np.asarray(Image.open(png).convert("L"), dtype=np.float64)
    assert pixels.shape == (4000, 1280)
    assert pixels.std() > 10, "the screenshot is (nearly) one colour"
    ink = (pixels < 128).mean()
    assert 0.005 < ink < 0.5, f"dark pixel share {ink:.3f} is implausible for a rendered report"
    top = pixels[:1000]
    assert (top < 128).mean() > 0.003, "nothing drawn at the top of the page"
