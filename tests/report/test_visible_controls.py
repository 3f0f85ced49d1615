"""Control, bidi-override and zero-width characters from model output are shown, not obeyed."""

from __future__ import annotations

import re
from pathlib import Path

from counterbench.report.api import render_report
from counterbench.report.context import ReportInput
from counterbench.report.samples import select_samples
from counterbench.report.visible import show_controls
from tests.report.fixtures import make_summary, make_tables, sample_responses

#: a sample answer that would display as "### 0000021 INR" reversed, with a NUL, an ESC sequence and a BOM
SPOOF = "\ufeff### \u202e1200000\u202c INR\x00 \x1b[2J\u2066x\u2069"
HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]")


def test_show_controls_escapes_what_hides_or_reorders_text_and_keeps_the_rest() -> None:
    assert show_controls(SPOOF) == "\\ufeff### \\u202e1200000\\u202c INR\\x00 \\x1b[2J\\u2066x\\u2069"
    kept = "कर्मचारी\u200d वेतन\tline\nnext ₹12,00,000 👩\u200d💻"
    assert show_controls(kept) == kept  # Devanagari joiners, emoji ZWJ, tabs and newlines stay


def test_reports_show_control_characters_visibly(tmp_path: Path) -> None:
    models = ["sim:fair", "sim:biased"]
    data = ReportInput(make_tables(models), make_summary(models),
                       select_samples(sample_responses(models, payload=SPOOF)))
    html, md = render_report(data)
    for text, slash in ((html, "\\"), (md, "\\\\")):  # Markdown backslash-escapes the backslash itself
        assert not HIDDEN.search(text), repr(HIDDEN.search(text))
        for shown in ("u202e1200000" + slash + "u202c", "x00", "x1b[2J", "ufeff"):
            assert slash + shown in text, shown


def test_the_store_keeps_the_text_exactly(tmp_path: Path) -> None:
    from counterbench.run import load_results, run_prompts
    from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread
    from tests.run.conftest import fake_model, make_prompts

    class SpoofServer(FakeOpenAIServer):
        def _answer(self, payload, system, user, *, finish_reason, content=...):  # type: ignore[no-untyped-def]
            return super()._answer(payload, system, user, finish_reason=finish_reason, content=SPOOF)

    with run_in_thread(SpoofServer(FaultConfig())) as server:
        run_prompts(make_prompts(2), [fake_model(server)], store=tmp_path / "s.db")
    assert list(load_results(tmp_path / "s.db")["response"]) == [SPOOF, SPOOF]
