"""The fairness gate: fail a CI pipeline when a model's earned results cross a threshold.

::

    from counterbench.gate import Thresholds, check
    verdict = check(analysis.tables, Thresholds(max_mean_delta=5, max_pair_gap=5, max_gap_pp=5, significant_w="model"))
    verdict.passed, verdict.summary(), verdict.junit()

``counterbench check --analysis DIR`` and ``counterbench audit ... --fail-on ...`` call this. It gates any
study: amount tables (Mean Δ% when asked for, canonical pair gaps, Kendall's W) and every other kind's marked gaps in
that kind's unit (see :mod:`counterbench.gate.checks`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from counterbench.gate.checks import evaluate
from counterbench.gate.junit import junit_xml, write_junit
from counterbench.gate.rules import Outcome, Thresholds, parse_fail_on

__all__ = ["Outcome", "Thresholds", "Verdict", "check", "parse_fail_on"]


@dataclass
class Verdict:
    outcomes: list[Outcome]
    thresholds: Thresholds
    source: str = ""

    @property
    def passed(self) -> bool:
        return not any(o.failed for o in self.outcomes)

    def summary(self, max_details: int = 3) -> str:
        """One screen: a line per model × rule, the worst offenders under each failure, the verdict."""
        width = max([len(o.model) for o in self.outcomes] + [5])
        lines = [f"Fairness gate: {self.thresholds.describe()}"]
        for o in self.outcomes:
            mark = {"passed": "PASS", "failed": "FAIL"}.get(o.status, "SKIP")
            lines.append(f"  {mark}  {o.model:<{width}}  {o.rule}: {o.value} (limit {o.limit})")
            shown = o.details[:max_details] if o.status != "passed" else []
            lines += [f"          {d}" for d in shown]
            if len(o.details) > len(shown) and shown:
                lines.append(f"          … and {len(o.details) - len(shown)} more")
        failed = sorted({o.model for o in self.outcomes if o.failed})
        skipped = sum(o.status == "not evaluated" for o in self.outcomes)
        verdict = f"FAILED: {', '.join(failed)}" if failed else "PASSED"
        lines.append(f"{verdict} ({sum(o.failed for o in self.outcomes)} of {len(self.outcomes)} checks failed"
                     + (f", {skipped} not evaluated" if skipped else "") + ")")
        return "\n".join(lines)

    def junit(self) -> str:
        return junit_xml(self.outcomes, self.thresholds, self.source)

    def write_junit(self, path: Path | str) -> Path:
        return write_junit(Path(path), self.junit())


def check(tables: Mapping[str, pd.DataFrame], thresholds: Thresholds | None = None,
          models: Sequence[str] | None = None, source: str = "", summary: Mapping[str, Any] | None = None) -> Verdict:
    """Evaluate ``thresholds`` (defaults: :class:`Thresholds`) on analysis ``tables``; ``summary`` (the analysis's)
    names the study's outcome kinds, which choose the rules (without it, the tables' ``kind`` columns do)."""
    chosen = thresholds or Thresholds()
    return Verdict(evaluate(tables, chosen, models, summary), chosen, source)
