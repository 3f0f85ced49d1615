"""What every benchmark prints besides its own figures: the load it ran at and whether it met its goal.

A benchmark script calls :func:`load_average` before its work and :func:`finish` at the end::

    before = load_average()
    result = {...}  # its own figures
    finish(result, before, goal="p99 arrival-to-commit <= 10 ms", within_goal=p99 <= 10)

:func:`finish` adds ``load_average_before``, ``load_average_after`` (1, 5 and 15 minutes), ``goal`` (what
``within_goal`` means, in words) and ``within_goal``, prints the JSON and writes it to ``out`` if given.
Figures are comparable only at a similar load: on a busy 2-core machine timings double.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

__all__ = ["finish", "load_average", "mc_error"]


def load_average() -> list[float]:
    """The machine's load average over 1, 5 and 15 minutes."""
    return [round(x, 2) for x in os.getloadavg()]


def mc_error(rate: float, n: int) -> float:
    """Two binomial standard errors of ``rate`` over ``n`` simulated draws: the Monte-Carlo allowance a
    measured rate gets around its target (``n`` below 1 counts as 1)."""
    return 2 * math.sqrt(rate * (1 - rate) / max(n, 1))


def finish(result: dict[str, Any], load_before: list[float], *, goal: str, within_goal: bool,
           out: str | Path | None = None) -> dict[str, Any]:
    """``result`` with the load before and after, the goal and whether it was met; printed as JSON."""
    result = {**result, "load_average_before": load_before, "load_average_after": load_average(), "goal": goal,
              "within_goal": bool(within_goal)}
    text = json.dumps(result, indent=2, default=str, ensure_ascii=False)
    print(text)
    if out is not None:
        Path(out).write_text(text + "\n", encoding="utf-8")
    return result
