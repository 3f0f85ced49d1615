"""How two answers of a kind compare, read from what each kind declares (``difference_unit``).

The verbs that show or judge a gap (the gate, the viewer, power, the report's charts) ask here instead of
branching on a kind's name: a kind whose ``difference_unit`` is a percent *of* something (``amount``:
"percent of the pair's mean") compares relatively (Δ%); every other kind compares by the plain difference,
in its own unit (percentage points for rates, labels and choices, points for scores, the metric's units
for text).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from counterbench.errors import UserError
from counterbench.outcomes import KINDS, get_kind, kind_of_answer_type, spec_from_answer_type

#: a kind's ``difference_unit`` -> the short suffix written after a number
_SHORT = {"percentage points": " pp", "points": " points", "units of the metric": " units"}


@dataclass(frozen=True)
class GapUnit:
    """One kind's comparison: relative (Δ%) or the plain difference, and how its numbers are written."""

    kind: str
    #: the kind's own words, e.g. ``percentage points``
    words: str
    #: True when a gap is relative to the pair's level (Δ%), False for a plain difference
    relative: bool
    #: the suffix after a number: ``%``, `` pp``, `` points``
    suffix: str
    #: the key a threshold for this unit goes by (``pct``, ``pp``, ``points``, ``metric``)
    key: str

    def format(self, value: float, signed: bool = True, digits: int = 1) -> str:
        """``value`` with its unit: ``-16.3 pp``, ``+0.42 points``, ``27.5%``; ``—`` for a missing value."""
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return "—"
        return f"{value:{'+' if signed else ''}.{digits}f}{self.suffix}"


def gap_unit(kind: str | None) -> GapUnit:
    """The comparison of ``kind`` (a kind's name; ``None`` or unknown means ``amount``, the oldest kind)."""
    name = kind if kind in KINDS else "amount"
    words = get_kind(str(name)).difference_unit
    if words.startswith("percent of"):
        return GapUnit(str(name), words, True, "%", "pct")
    suffix = _SHORT.get(words, f" {words}")
    key = {"percentage points": "pp", "points": "points"}.get(words, "metric")
    return GapUnit(str(name), words, False, suffix, key)


def difference(reference: float, comparison: float, kind: str | None) -> float:
    """``comparison`` against ``reference`` in the kind's comparison: Δ% of the pair's mean for a relative
    kind (NaN when both are 0), the plain difference otherwise."""
    if gap_unit(kind).relative:
        mean = (reference + comparison) / 2
        return math.nan if mean == 0 else 100.0 * (comparison - reference) / mean
    return comparison - reference


#: kinds whose stored value is not the answer's measure on its own (a ``choice`` stores the chosen option's
#: position; what it stands for is in the prompt's design columns), so one answer has no comparable number
_NEEDS_DESIGN = frozenset({"choice"})


def kind_of(answer_type: str | None) -> str:
    """The kind of a prompt's ``answer_type`` (``amount`` when missing or unknown, as in older stores)."""
    return kind_of_answer_type(answer_type) or "amount"


def answer_measures(answer_type: str | None, values: np.ndarray) -> np.ndarray:
    """The kind's measure of stored values of one ``answer_type`` (e.g. 100 for a label's positive answer,
    0 otherwise; the amount itself); NaN where a single answer has no comparable number."""
    kind = kind_of(answer_type)
    values = np.asarray(values, dtype=np.float64)
    if kind in _NEEDS_DESIGN:
        return np.full(values.shape, np.nan)
    try:
        spec = spec_from_answer_type(answer_type) if answer_type else get_kind(kind).decode("number")
    except UserError:  # an answer type this version cannot read: compare the stored values as they are
        return values
    measured: np.ndarray = get_kind(kind).measure(spec, pd.DataFrame({"value": values}))
    return np.asarray(measured, dtype=np.float64)
