"""The ``stem`` study through the CLI: registry, audit with the simulated model, hostile output, re-parsing."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from aiohttp import web

from counterbench.builtin.stem.analysis import outcome_frame
from counterbench.outcomes.readability import MAX_CHARS
from counterbench.run.results import load_results, reparse_store
from counterbench.testing.fake_openai import FakeOpenAIServer, run_in_thread
from tests.conftest import run_cli

#: a reply ten times the longest text readability scores (1,000,000 characters; a body over the HTTP client's
#: 32 MiB cap is tests/models/test_http1.py's): stored whole, not scored, never in the report
HUGE = "A" * (10 * MAX_CHARS)
HOSTILE_RANKING = ["", "### AB", "### F", "I pick C.", "<script>alert('x')</script>", "### B", "### e"]
HOSTILE_GENERATION = [HUGE, "<img src=x onerror=alert(1)> Fractions are parts of a whole. We add them.", ""]


class HostileServer(FakeOpenAIServer):
    """Answers the STEM prompts with malformed and hostile text, chosen by a hash of the prompt."""

    def _answer(self, payload: dict[str, Any], system: str, user: str, *, finish_reason: str,
                content: Any = ...) -> web.Response:
        if content is ...:
            pick = int(hashlib.sha256(user.encode()).hexdigest(), 16)
            replies = HOSTILE_RANKING if "### <LETTER>" in user else HOSTILE_GENERATION
            content = replies[pick % len(replies)]
        return super()._answer(payload, system, user, finish_reason=finish_reason, content=content)


@pytest.fixture
def hostile() -> Iterator[Any]:
    with run_in_thread(HostileServer()) as server:
        yield server


def test_stem_is_a_listed_built_in_study(tmp_path: Path) -> None:
    out = run_cli("studies", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "stem" in out.stdout and "choice, text" in out.stdout


def test_audit_with_the_simulated_model(tmp_path: Path) -> None:
    out = run_cli("audit", "stem", "--model", "sim:stem", "--model", "sim:fair", "--preset", "quick",
                  "--store", str(tmp_path / "s.db"), "-o", str(tmp_path / "out"), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    summary = json.loads((tmp_path / "out" / "analysis" / "summary.json").read_text())
    assert summary["study"] == "stem" and summary["readability"] == "textstat 0.7.8, maths raw"
    assert "stem_progressive" in summary["unsupported"] and "stem_bias" not in summary["unsupported"]
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    for title in ("Chosen level and grade level", "Bias by attribute (MAB, MDB)", "SHAP attribution",
                  "Agreement between models", "Position bias in the ranking task"):
        assert title in html
    assert "Needs the progressive experiment (the paper preset" in html  # what quick cannot support
    kappa = pd.read_csv(tmp_path / "out" / "analysis" / "stem_kappa.csv")
    assert len(kappa) == 4 and set(kappa["model_1"]) | set(kappa["model_2"]) == {"sim:fair", "sim:stem"}


def test_hostile_output_is_classified_and_escaped(tmp_path: Path, hostile: Any) -> None:
    model = f"openai-compatible:{hostile.base_url}:fake-model"
    out = run_cli("audit", "stem", "--model", model, "--preset", "quick",
                  "--store", str(tmp_path / "s.db"), "-o", str(tmp_path / "out"), cwd=tmp_path, timeout=600)
    assert out.returncode == 0, out.stderr
    # no --max-tokens: each prompt's requested limit reaches the server (ranking 16, generation 512, as the paper)
    limits = {(("### <LETTER>" in body["messages"][-1]["content"]), body["max_tokens"])
              for body in hostile.counters.recent_bodies}
    assert limits == {(True, 16), (False, 512)}
    results = load_results(tmp_path / "s.db")
    rank = results[results["use_case"].eq("ranking")]
    by_reply = dict(zip(rank["response"].fillna(""), zip(rank["status"], rank["unit"], strict=True), strict=True))
    assert by_reply["### F"][0] == "unparseable" and by_reply["### AB"][0] == "unparseable"
    assert by_reply[""][0] == "empty" and by_reply["<script>alert('x')</script>"][0] == "unparseable"
    assert by_reply["### B"] == ("ok", "B") and by_reply["### e"] == ("ok", "E")
    gen = results[results["use_case"].eq("generation")]
    huge = gen[gen["response"].str.len().eq(len(HUGE))]
    assert len(huge) and huge["status"].eq("unparseable").all()
    assert gen.loc[gen["response"].str.startswith("<img"), "status"].eq("ok").all()
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "<script>alert" not in html and "<img src=x" not in html
    frame = outcome_frame(results)
    first = frame.set_index("prompt_id")["y"]
    reparse_store(tmp_path / "s.db")
    again = outcome_frame(load_results(tmp_path / "s.db")).set_index("prompt_id")["y"]
    pd.testing.assert_series_equal(first.sort_index(), again.sort_index())
    levels = frame[frame["task"].eq("ranking") & frame["y"].notna()]
    assert levels["y"].isin([1.0, 2.0, 3.0, 4.0, 5.0]).all()


@pytest.mark.slow
def test_cli_audit_recovers_every_planted_effect(tmp_path: Path) -> None:
    """``audit stem --model sim:stem`` on the main experiment: the planted attributes top MAB and SHAP,
    d has the right sign and the planted pairs are FDR-significant at both levels."""
    out = run_cli("audit", "stem", "--model", "sim:stem", "--preset", "main", "--store", str(tmp_path / "s.db"),
                  "-o", str(tmp_path / "out"), cwd=tmp_path, timeout=900)
    assert out.returncode == 0, out.stderr
    folder = tmp_path / "out" / "analysis"
    bias, shap = pd.read_csv(folder / "stem_bias.csv"), pd.read_csv(folder / "stem_shap.csv")
    pairwise = pd.read_csv(folder / "stem_pairwise.csv")
    planted = {"ranking": {"location": "Rural", "income": "Low"}, "generation": {"disability": "Disabled"}}
    for (task, context, role), part in bias.groupby(["task", "context", "role"]):
        want = set(planted[task])
        assert set(part.nlargest(len(want), "mab_z")["attribute"]) == want, (task, context, role)
        s = shap[shap["kind"].eq("attribute") & shap["task"].eq(task) & shap["context"].eq(context)
                 & shap["role"].eq(role)]
        assert set(s.nlargest(len(want), "mean_abs")["attribute"]) == want
        for attribute, level in planted[task].items():
            rows = pairwise[pairwise["task"].eq(task) & pairwise["context"].eq(context) & pairwise["role"].eq(role)
                            & pairwise["attribute"].eq(attribute) & pairwise["level_b"].eq(level)]
            assert len(rows) and (rows["d_response"] > 0).all() and (rows["d_profile"] > 0).all()
            assert rows["significant_response"].all() and rows["significant_profile"].all()
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "Rural and Low-income students each get an expected chosen level 0.5 lower" in html
