"""``counterbench check``: the fairness gate over an analysis folder (exit 1 when a threshold is crossed)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

FailOnOpt = Annotated[
    list[str] | None,
    typer.Option("--fail-on", metavar="SPEC",
                 help="Thresholds, repeatable: 'default', a YAML file, or RULE=VALUE with mean-delta=5, "
                      "pair-gap=5 (amounts, %), gap-pp=5 (rates, labels, choices), gap-points=1 (scores), "
                      "gap-metric=1 (text), w=model|axis|cell|off, usable-answers=on|off, untested=pass|fail; "
                      "off switches a rule off."),
]
JunitOpt = Annotated[Path | None, typer.Option("--junit", help="Also write the verdict as JUnit XML for CI.")]
EXIT_GATE_FAILED = 1


def check_command(
    analysis: Annotated[Path, typer.Option("--analysis", help="A folder written by `counterbench analyze --out`.")],
    fail_on: FailOnOpt = None,
    model: Annotated[list[str] | None, typer.Option("--model", "-m", help="Check only this model.")] = None,
    junit: JunitOpt = None,
) -> None:
    """Fail (exit 1) when a model's results cross a fairness threshold; print what failed.

    Works on any study; each marked gap is judged in its outcome kind's unit. Defaults judge marked gaps
    only: no significant canonical pair gap (per use case or averaged) above 5% for amounts; no significant
    gap above 5 percentage points (rates, labels, choices), 1 point (scores) or 1 metric unit (text); no
    significant Kendall's W at the model level where W is computed. Overall Mean Δ% (mean-delta=X) is opt-in:
    it grows with answer noise and rests on no test. A rule that cannot be tested is SKIP
    (fails only with untested=fail). Exit codes: 0 passed, 1 a threshold was crossed, 2 a mistake.
    """
    from counterbench.gate import check, parse_fail_on
    from counterbench.report.context import load_analysis_dir

    thresholds = parse_fail_on(fail_on or [])
    data = load_analysis_dir(analysis)
    verdict = check(data.tables, thresholds, model or None, source=str(analysis), summary=data.summary)
    print(verdict.summary())
    if junit is not None:
        print(f"JUnit XML: {verdict.write_junit(junit)}")
    if not verdict.passed:
        raise typer.Exit(EXIT_GATE_FAILED)


def gate_after_audit(analysis: Path, fail_on: list[str] | None, junit: Path | None) -> None:
    """``audit --fail-on``: check the analysis the audit just wrote; exit 1 when it fails."""
    if fail_on is None and junit is None:
        return
    check_command(analysis, fail_on or ["default"], None, junit)


def register(app: typer.Typer) -> None:
    app.command("check")(check_command)
