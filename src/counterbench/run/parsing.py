"""Parsing at write time: turn a raw response into the stored status/value columns.

The run engine, ``counterbench import`` and ``counterbench parse`` all go through
:class:`ResponseParser`, a thin layer over :func:`counterbench.parse.parse_answer` that

* picks what to parse against: the prompt's outcome kind when it is not an amount (rate, score,
  label, choice, text: :mod:`counterbench.outcomes`), else its declared amount answer type, else its
  use case's name when the parser knows it, else nothing (stored as ``ok``, reason ``free_text``);
* gives answers that did not finish their own statuses, whatever their text: ``truncated``
  (``finish_reason: length`` — a cut answer such as ``### 12`` must never count as 12),
  ``filtered`` (``content_filter``) and ``empty`` (a blank reply). Analyses use ``ok`` rows only,
  parse health counts these, and ``--retry-errors`` sends them again;
* stores a reply that is JSON nested deeper (or larger) than :mod:`counterbench.json_limits` allows as
  ``unparseable`` with reason ``json_too_deep`` (``json_too_large``), without reading a value out of it;
* never loses a paid response to a parser bug: an unexpected exception is stored as
  ``unparseable`` with reason ``parser_error:<type>`` (the raw text is kept, so a later
  ``counterbench parse`` can redo it).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from counterbench.errors import UserError

log = logging.getLogger(__name__)



@dataclass(frozen=True, slots=True)
class Parsed:
    """The stored parse columns of one response."""

    status: str
    value: float | None = None
    unit: str | None = None
    release_value: float | None = None
    release_unit: str | None = None
    is_range: bool | None = None
    out_of_range: bool | None = None
    reason: str | None = None


def _json_limit(text: str) -> str | None:
    """``json_too_deep`` / ``json_too_large`` for a reply that is JSON beyond the limits
    (:mod:`counterbench.json_limits`), else ``None``."""
    stripped = text.lstrip()
    if not stripped.startswith(("{", "[")):
        return None
    from counterbench.json_limits import json_limit_reason

    return json_limit_reason(stripped)


class ResponseParser:
    """Parse responses under one profile; caches which key each use case / answer type maps to."""

    def __init__(self, profile: str = "default") -> None:
        from counterbench.parse import parse_answer, parse_profiles

        if profile not in parse_profiles():
            raise UserError(f"unknown parse profile '{profile}' (one of: {', '.join(parse_profiles())})")

        self.profile = profile
        self._parse_answer = parse_answer
        self._keys: dict[tuple[str | None, str | None], str | None] = {}
        self._warned = False

    def key_for(self, use_case: str | None, answer_type: str | None) -> str | None:
        """The name to parse against: an outcome kind's answer type (``label:yes|no``), else the declared
        amount answer type, else the use case's name; ``None`` for free text."""
        cache_key = (use_case, answer_type)
        if cache_key in self._keys:
            return self._keys[cache_key]
        chosen: str | None = None
        from counterbench.outcomes import is_generic

        if is_generic(answer_type):  # rate, score, label, choice, text: the outcome kind parses
            self._keys[cache_key] = answer_type
            return answer_type
        # a declared answer type wins over a use case's name (a user's ``salary_estimation`` may be a percent)
        for candidate in (answer_type, use_case):
            if not candidate:
                continue
            try:
                self._parse_answer("", candidate, profile=self.profile)
            except UserError:
                continue
            chosen = candidate
            break
        self._keys[cache_key] = chosen
        return chosen

    def warm_up(self, kinds: Iterable[tuple[str | None, str | None]]) -> None:
        """Resolve and exercise the parser of every ``(use_case, answer_type)`` before the first request:
        its rules and patterns load here (tens of ms), not while the first replies wait for their commit."""
        for use_case, answer_type in set(kinds):
            self.parse("### 1", "stop", self.key_for(use_case, answer_type))

    def parse(self, text: str | None, finish_reason: str | None, key: str | None) -> Parsed:
        if finish_reason == "length":
            return Parsed("truncated", reason="length")
        if finish_reason == "content_filter":
            return Parsed("filtered", reason="content_filter")
        if not (text or "").strip():
            return Parsed("empty", reason="empty")
        if key is None:
            return Parsed("ok", reason="free_text")
        limit = _json_limit(text or "")
        if limit is not None:  # a structured reply nested too deep (or too large) to read: never parsed around
            return Parsed("unparseable", reason=limit)
        try:
            from counterbench.outcomes import is_generic, parse_outcome

            if is_generic(key):
                answer: Any = parse_outcome(key, text, self.profile)
            else:
                answer = self._parse_answer(text or "", key, profile=self.profile)
        except Exception as exc:  # keep the paid response; re-parse later
            if not self._warned:
                log.warning("parser failed on a response (%s); stored as unparseable", type(exc).__name__)
                self._warned = True
            return Parsed("unparseable", reason=f"parser_error:{type(exc).__name__}")
        return Parsed(
            status=str(answer.status),
            value=answer.value,
            unit=answer.unit,
            release_value=answer.release_value,
            release_unit=answer.release_unit,
            is_range=bool(answer.is_range),
            out_of_range=bool(answer.out_of_range),
            reason=answer.reason,
        )
