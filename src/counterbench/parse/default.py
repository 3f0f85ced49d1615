"""The ``default`` profile: the correct parsing rules.

Decisions, in the order they are applied:

1. ``None`` or blank text -> ``unparseable``/``empty``. A text starting with a runner error prefix
   (``ERROR:``, ``TIMEOUT:`` — the release stored transport failures that way) ->
   ``unparseable``/``error_text``; it is never searched for numbers.
2. A hidden character inside a number (a zero-width space between digits, a bidirectional control in a
   text with digits: :mod:`counterbench.parse.hidden`) -> ``unparseable``/``hidden_character``; hidden
   characters elsewhere are removed. Truncation markers (``[TRUNCATED]``) are removed and remembered.
3. The text is normalised and its number mentions found (see :mod:`counterbench.parse.mentions`):
   leading ``#``s, ``₹``, ``Rs``/``Rs.``, ``INR`` are markers, not noise; Western and Indian digit
   grouping; LPA/lakh(s)/lac ×1e5, crore(s)/cr ×1e7, k ×1e3, ``%``; ranges -> midpoint with
   ``is_range``.
4. *Candidates* are the mentions that can answer this answer type: for INR types any amount that is
   not a percentage or a foreign currency; for ``percent`` a ``%`` value or a bare number; for
   ``number`` anything. A bare INR amount is rupees (₹45,000 is forty-five thousand rupees, never
   45,000 LPA). For salary-like answers a per-month amount is multiplied by 12.
   No candidates -> ``unit_mismatch`` if there were numbers of another kind, else ``no_number``.
5. The *format marker* wins: if a line starting with ``#`` holds a candidate that carries a unit
   (``### 12,00,000 INR``, ``### 8 %``) or is the whole line (``### 1200000``), only such
   candidates count. Otherwise all candidates count.
6. Among the counted candidates, those with a unit (INR marker or scale word for money, ``%`` for
   percent) outrank bare numbers, so "with a 9.1 CGPA expect ₹18 LPA" is ₹18 LPA. If what is left
   has more than one distinct value -> ``unparseable``/``ambiguous`` (never guess).
7. The one value: a bad digit grouping (``10,5``, ``12 00 00``) -> ``bad_grouping``; letters glued
   to the number that are no known unit (``1.2B``) -> ``unreadable_number``; a negative number
   (including the ``-1`` sentinel) -> ``negative``; a truncated response whose value carries no
   unit (the number itself may be cut) -> ``truncated``. Otherwise ``ok``, with
   ``out_of_range`` set from the answer type's plausibility bounds (value kept).
8. Refusal: a response without a usable value (steps 4–7 failed) that contains an explicit
   decline from the phrase list (English, romanised Hindi, Hindi) -> ``refused``. A decline followed by a
   number ("I can't be exact, but ### 12 LPA") is ``ok``.
"""

from __future__ import annotations

from counterbench.parse.hidden import has_hidden_in_number, strip_hidden
from counterbench.parse.mentions import Mention, find_mentions, line_of, line_starts, normalise, patterns
from counterbench.parse.result import ParsedAnswer, answer_ok, answer_unparseable
from counterbench.parse.rules import AnswerType, load_rules

_LINE_NOISE = "#*:.-=> "


def _is_candidate(m: Mention, accepts: str) -> bool:
    if accepts == "money":
        return not (m.percent or m.foreign)
    if accepts == "percent":
        return not (m.foreign or m.currency or m.scale is not None)
    return True


def _has_unit(m: Mention, accepts: str) -> bool:
    if accepts == "money":
        return m.currency or m.scale is not None
    if accepts == "percent":
        return m.percent
    return m.currency or m.percent or m.scale is not None


def _marked(lines: list[str], starts: list[int], m: Mention, accepts: str) -> bool:
    """True when ``m`` sits on a ``#`` format line and is that line's answer."""
    index = line_of(starts, m.start)
    line = lines[index]
    if not line.lstrip().startswith("#"):
        return False
    if _has_unit(m, accepts):
        return True
    offset = starts[index]
    rest = line[: m.start - offset] + line[m.end - offset :]
    return rest.strip(_LINE_NOISE) == ""


def _select(text: str, candidates: list[Mention], accepts: str) -> list[Mention]:
    """Steps 5 and 6: the candidates that can be the answer."""
    lines = text.split("\n")
    starts = line_starts(text)
    pool = [m for m in candidates if _marked(lines, starts, m, accepts)] or candidates
    return [m for m in pool if _has_unit(m, accepts)] or pool


def _strip_truncation(text: str) -> tuple[str, bool]:
    truncated = False
    for marker in load_rules().truncation_markers:
        if marker in text:
            text = text.replace(marker, " ")
            truncated = True
    return text, truncated


def _numeric(text: str, answer_type: AnswerType, truncated: bool) -> ParsedAnswer:
    """Steps 3–7 on a normalised text."""
    mentions = find_mentions(text)
    accepts = answer_type.accepts
    candidates = [m for m in mentions if _is_candidate(m, accepts)]
    if not candidates:
        return answer_unparseable("unit_mismatch" if mentions else "no_number")
    chosen = _select(text, candidates, accepts)
    convert = accepts != "percent"
    values = {round(m.amount(answer_type.monthly_to_annual) if convert else (m.lo + m.hi) / 2, 4) for m in chosen}
    if len(values) > 1:
        return answer_unparseable("ambiguous")
    first = chosen[0]
    if any(m.bad_grouping for m in chosen):
        return answer_unparseable("bad_grouping")
    if any(m.unreadable for m in chosen):
        return answer_unparseable("unreadable_number")
    if first.negative:
        return answer_unparseable("negative")
    if truncated and not _has_unit(first, accepts):
        return answer_unparseable("truncated")
    value = first.amount(answer_type.monthly_to_annual) if convert else (first.lo + first.hi) / 2
    return answer_ok(value, answer_type, is_range=any(m.is_range for m in chosen))


def parse_default(text: str | None, answer_type: AnswerType) -> ParsedAnswer:
    """Parse one response under the ``default`` profile (see the module docstring)."""
    if text is None or not text.strip():
        return answer_unparseable("empty")
    stripped = text.lstrip()
    if stripped.startswith(load_rules().error_prefixes):
        return answer_unparseable("error_text")
    if has_hidden_in_number(text):
        return answer_unparseable("hidden_character")
    body, truncated = _strip_truncation(strip_hidden(text))
    if not body.strip():
        return answer_unparseable("truncated")
    normalised = normalise(body)
    parsed = _numeric(normalised, answer_type, truncated)
    if parsed.status != "ok" and patterns().refusal.search(normalised):
        return ParsedAnswer(status="refused", reason="refusal")
    return parsed
