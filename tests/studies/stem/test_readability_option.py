"""The readability maths handling chosen from the command line (``--readability-math``)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import counterbench
from counterbench.builtin.stem.study import StemStudy
from counterbench.errors import UserError
from counterbench.models.base import ChatRequest, ChatResult
from counterbench.outcomes.readability import score_texts
from tests.conftest import run_cli

#: explanations heavy with formulas: scored raw, each formula is many long "words"; as placeholders, one word
TEXTS = [
    "We solve $x^{2}+5x+6=0$ by factoring it as $(x+2)(x+3)=0$. So $x=-2$ or $x=-3$. Check both.",
    "The area is $\\frac{1}{2}\\cdot 6\\cdot 4 = 12$. A triangle is half of a rectangle \\(b h\\).",
    "Divide: $$\\gcd(84, 36) = 12$$ because $84 = 2^{2}\\cdot 3\\cdot 7$ and $36 = 2^{2}\\cdot 3^{2}$.",
]


class _MathsWriter:
    """Answers every ranking prompt with B and every generation prompt with one of :data:`TEXTS`."""

    name, simulated = "maths-writer", False

    async def complete(self, request: ChatRequest) -> ChatResult:
        if "### <LETTER>" in request.user:
            return ChatResult(text="### B", finish_reason="stop")
        return ChatResult(text=TEXTS[len(request.user) % len(TEXTS)], finish_reason="stop")

    async def aclose(self) -> None:
        return None


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("maths") / "s.db"
    counterbench.run_prompts(counterbench.prompts("stem", preset="quick"), [_MathsWriter()], store=path)
    return path


def _analyse(store: Path, out: Path, math: str | None) -> tuple[pd.DataFrame, dict[str, object]]:
    option = ["--readability-math", math] if math is not None else []
    done = run_cli("analyze", "stem", *option, "--store", str(store), "-o", str(out), cwd=out.parent)
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(out / "stem_descriptive.csv")
    return table[table["task"].eq("generation")], json.loads((out / "summary.json").read_text())


def test_placeholder_maths_from_the_command_line(store: Path, tmp_path: Path) -> None:
    raw, raw_summary = _analyse(store, tmp_path / "raw", None)
    placeholder, summary = _analyse(store, tmp_path / "placeholder", "placeholder")
    assert raw_summary["readability"] == "textstat 0.7.8, maths raw"
    assert summary["readability"] == "textstat 0.7.8, maths placeholder"
    assert placeholder["scored_by"].eq("textstat 0.7.8, maths placeholder").all()
    # each cell's mean grade level is that of the texts scored with placeholders (independently computed)
    by_text = dict(zip(TEXTS, score_texts(TEXTS, "placeholder")["mgl"], strict=True))
    results = counterbench.load_results(store, include_prompt_text=True)
    gen = results[results["use_case"].eq("generation")]
    expected = gen.assign(y=gen["response"].map(by_text)).groupby("context")["y"].mean()
    got = placeholder.set_index("context")["mean"]
    assert len(got) == 2 and all(abs(got[c] - expected[c]) < 1e-9 for c in got.index)
    assert (raw["mean"].to_numpy() - placeholder["mean"].to_numpy() > 0.25).all()  # formulas no longer long words


def test_a_bad_maths_handling_is_one_line(store: Path, tmp_path: Path) -> None:
    done = run_cli("analyze", "stem", "--store", str(store), "-o", str(tmp_path / "o"), "--readability-math=latex",
                   cwd=tmp_path)
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "--readability-math must be one of raw, placeholder" in lines[0]


def test_the_python_option() -> None:
    assert StemStudy(readability_math="placeholder").readability_math() == "placeholder"
    with pytest.raises(UserError, match=r"^readability-math must be one of raw, placeholder"):
        StemStudy(readability_math="latex")
