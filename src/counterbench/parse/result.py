"""The outcome of parsing one response: :class:`ParsedAnswer`.

Decisions:

- ``status`` is ``ok`` (a value), ``refused`` or ``unparseable``. The fourth status of a response
  record, ``error`` (transport/API failure), is the runner's and is never produced by a parser; a
  stored ``ERROR: ...`` text that reaches the parser is ``unparseable`` with reason ``error_text``.
- ``value`` is in the answer type's unit (INR per year for salary and counter-offer, percent for
  hike, INR for prices); ``release_value`` is the same number in the published release's unit
  (LPA = INR / 100,000 for salary-like answers, % and INR otherwise).
- ``out_of_range`` flags an ``ok`` value outside the answer type's plausibility bounds; the value
  is kept (analyses decide whether to exclude it).
- ``reason`` says why a response has no value (``empty``, ``error_text``, ``truncated``,
  ``negative``, ``ambiguous``, ``no_number``, ``unit_mismatch``, ``bad_grouping``,
  ``unreadable_number``, ``hidden_character``, ``refusal``);
  it is ``None`` for ``ok`` except ``refusal_phrase`` under the release profile (a value was parsed
  *and* the release's refusal detector fired — the release counted such rows in both tallies).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from counterbench.parse.rules import AnswerType

Status = Literal["ok", "refused", "unparseable"]
STATUSES: tuple[str, ...] = ("ok", "refused", "unparseable")


@dataclass(frozen=True)
class ParsedAnswer:
    """One parsed response. Immutable, so parsers may share cached instances."""

    status: Status
    value: float | None = None
    unit: str | None = None
    is_range: bool = False
    out_of_range: bool = False
    reason: str | None = None
    release_value: float | None = None
    release_unit: str | None = None

    @property
    def ok(self) -> bool:
        """True when a value was parsed."""
        return self.status == "ok"


def answer_ok(
    value: float,
    answer_type: AnswerType,
    *,
    is_range: bool = False,
    reason: str | None = None,
    release_value: float | None = None,
) -> ParsedAnswer:
    """An ``ok`` answer with its release value and plausibility flag filled in.

    ``release_value`` defaults to ``value / release_divisor``; pass it to keep a value computed
    elsewhere bit for bit (the release profile does).
    """
    value = round(value, 6) + 0.0  # drop float noise from unit multiplication; no negative zero
    if release_value is None:
        release_value = round(value / answer_type.release_divisor, 9)
    out_of_range = (answer_type.lower is not None and value < answer_type.lower) or (
        answer_type.upper is not None and value > answer_type.upper
    )
    return ParsedAnswer(
        status="ok",
        value=value,
        unit=answer_type.unit,
        is_range=is_range,
        out_of_range=bool(out_of_range),
        reason=reason,
        release_value=release_value,
        release_unit=answer_type.release_unit,
    )


def answer_refused() -> ParsedAnswer:
    """A ``refused`` answer."""
    return ParsedAnswer(status="refused", reason="refusal")


def answer_unparseable(reason: str) -> ParsedAnswer:
    """An ``unparseable`` answer with its reason."""
    return ParsedAnswer(status="unparseable", reason=reason)
