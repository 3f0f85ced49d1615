"""docs/studies.md's "How big must my design be" quotes `counterbench power` on two examples: the
figures it quotes are the command's."""

from __future__ import annotations

import re

from tests.conftest import REPO, run_cli

DOCS = (REPO / "docs" / "studies.md").read_text(encoding="utf-8")
SECTION = DOCS.split("## How big must my design be", 1)[1].split("\n## ", 1)[0]


def _rows(out: str) -> dict[str, list[str]]:
    """use case -> its cells, from the power command's table."""
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in re.split(r"[│┃]", line) if c.strip()]
        if len(cells) >= 3 and cells[0] in ("loan_rate", "approval", "all use cases"):
            rows.setdefault(cells[0], cells[1:])
    return rows


def test_the_quoted_power_figures_are_the_commands() -> None:
    assert "counterbench power" in SECTION and "At least 6 matched prompts" in SECTION
    done = run_cli("power", "examples/loan_rate.yaml", "--language", "en", env={"COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    assert _rows(done.stdout)["all use cases"] == ["12", "0.8 pp", "0.8 pp", "0.8 pp"]
    assert "12 matched prompts" in SECTION and "0.8 pp for each pair" in SECTION
    few = run_cli("power", "examples/loan_rate.yaml", "--language", "en", "--question-variant", "1",
                  env={"COLUMNS": "200"})
    assert _rows(few.stdout)["all use cases"] == ["6", "too few", "too few", "too few"]
    crossed = run_cli("power", "examples/approval_crossed.yaml", env={"COLUMNS": "200"})
    cells = _rows(crossed.stdout)["all use cases"]
    gaps = sorted(float(c.removesuffix(" pp")) for c in cells[1:])
    assert cells[0] == "36" and f"{gaps[0]:.1f}–{gaps[-1]:.1f} pp" in SECTION, cells
