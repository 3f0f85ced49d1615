"""Parsing the hiring study's answers: a verdict (A / B / Tie), a 1–100 score, a demographic label.

Every evaluation prompt asks for the answer on a fixed final line, ``### <ANSWER>`` (paper "Small
Changes, Big Impact" §3.4, App. I). Decisions:

- Only the **tail** of a response is read (the last :data:`TAIL_CHARS` characters), so a 10 MB
  rationale costs the same as a short one; the head is read too for refusal phrases.
- The **answer line** is the last line starting with ``#`` in the tail, else the last non-empty line.
  Markdown emphasis, quotes and a leading ``Verdict:`` / ``Score:`` / ``Answer:`` are ignored.
- ``A`` and ``B`` are read in capitals only (a lower-case "a" is an article); ``tie`` in any case.
- A verdict line naming **both A and B** (``A and B``, ``A/B``) or none is ``unparseable``
  (``ambiguous`` / ``no_verdict``); ``Candidate A`` counts as ``A``.
- A score must be one whole number in 1–100: ``0`` and ``101`` are ``unparseable`` with reason
  ``out_of_scale``, ``85.5`` is ``not_integer``, ``ninety`` (no digits) is ``no_score``, two numbers
  (``80 or 90``) are ``ambiguous``; ``85/100`` reads as 85.
- A label must be exactly one of the declared labels (case-insensitive); two labels is
  ``ambiguous``. "Cannot determine" is a valid label (the analysis counts it as wrong).
- A response that matches the parser's refusal phrases and has no answer line is ``refused``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from counterbench.parse.mentions import normalise, patterns
from counterbench.parse.result import ParsedAnswer

TAIL_CHARS = 2000
VERDICTS: tuple[str, ...] = ("A", "B", "Tie")
SCORE_RANGE: tuple[int, int] = (1, 100)

_EMPHASIS = re.compile(r"[*_`\"'“”‘’]")
_LEAD = re.compile(r"^\s*#{1,6}\s*")
_PREFIX = re.compile(r"^(?:final\s+)?(?:verdict|answer|score|rating|choice|decision)\s*[:=\-]?\s*", re.IGNORECASE)
_VERDICT_TOKEN = re.compile(r"(?<![A-Za-z])(A|B|[Tt][Ii][Ee])(?![A-Za-z])")
_NUMBER = re.compile(r"(?<![\w.])(-?\d+(?:\.\d+)?)(?![\w])")


def answer_line(text: str) -> str | None:
    """The line holding the answer: the last ``#`` line of the tail, else its last non-empty line (None when
    the text has none)."""
    tail = text[-TAIL_CHARS:]
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    if len(text) > TAIL_CHARS and len(lines) > 1:
        lines = lines[1:]  # the first tail line may be cut mid-way
    if not lines:
        return None
    marked = [line for line in lines if line.startswith("#")]
    chosen = marked[-1] if marked else lines[-1]
    chosen = _EMPHASIS.sub("", _LEAD.sub("", chosen)).strip()
    return _PREFIX.sub("", chosen).strip(" .!:;")


def _refused(text: str) -> bool:
    sample = text[:TAIL_CHARS] + "\n" + text[-TAIL_CHARS:] if len(text) > 2 * TAIL_CHARS else text
    return bool(patterns().refusal.search(normalise(sample)))


def _no_answer(text: str, reason: str) -> ParsedAnswer:
    return ParsedAnswer("refused", reason="refusal") if _refused(text) else ParsedAnswer("unparseable", reason=reason)


def parse_verdict(text: str | None) -> ParsedAnswer:
    """``ok`` with ``unit`` = ``A`` / ``B`` / ``Tie`` and value 0 / 1 / 2; see the module decisions."""
    if text is None or (line := answer_line(text)) is None:
        return ParsedAnswer("unparseable", reason="empty")
    line = re.sub(r"(?i)\bcandidate\s+", "", line)
    tokens = {t.upper() if len(t) == 1 else "Tie" for t in _VERDICT_TOKEN.findall(line)}
    if len(tokens) > 1:
        return ParsedAnswer("unparseable", reason="ambiguous")
    if len(tokens) == 1 and len(line) <= 40:
        verdict = tokens.pop()
        return ParsedAnswer("ok", value=float(VERDICTS.index(verdict)), unit=verdict)
    return _no_answer(text, "no_verdict")


def parse_score(text: str | None, low: int = SCORE_RANGE[0], high: int = SCORE_RANGE[1]) -> ParsedAnswer:
    """``ok`` with the score as value (unit ``points``); see the module decisions."""
    if text is None or (line := answer_line(text)) is None:
        return ParsedAnswer("unparseable", reason="empty")
    line = re.sub(r"\s*/\s*100\b", "", line)
    numbers = _NUMBER.findall(line)
    if not numbers:
        return _no_answer(text, "no_score")
    if len(numbers) > 1:
        return ParsedAnswer("unparseable", reason="ambiguous")
    number = float(numbers[0])
    if not number.is_integer():
        return ParsedAnswer("unparseable", reason="not_integer")
    if not low <= number <= high:
        return ParsedAnswer("unparseable", reason="out_of_scale")
    return ParsedAnswer("ok", value=number, unit="points")


def parse_label(text: str | None, labels: Sequence[str]) -> ParsedAnswer:
    """``ok`` with ``unit`` = the one label on the answer line (value = its index)."""
    if text is None or (line := answer_line(text)) is None:
        return ParsedAnswer("unparseable", reason="empty")
    folded = line.casefold()
    found = [i for i, label in enumerate(labels)
             if re.search(r"(?<![\w])" + re.escape(label.casefold()) + r"(?![\w])", folded)]
    if len(found) > 1:
        return ParsedAnswer("unparseable", reason="ambiguous")
    if len(found) == 1:
        return ParsedAnswer("ok", value=float(found[0]), unit=labels[found[0]])
    return _no_answer(text, "no_label")


def rationale_chars(text: str | None) -> int:
    """How many characters an answer writes before its final line (0 when it is only that line).

    The rationale variants ask for 2-3 sentences there; the parse-health table counts the answers that
    have one, so a run whose constraint or token limit left no room for it shows up.
    """
    if not text:
        return 0
    body = text.rstrip()
    cut = body.rfind("\n")
    return len(body[:cut].strip()) if cut >= 0 else 0
