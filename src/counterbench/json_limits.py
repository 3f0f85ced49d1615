"""Bounded JSON: model replies and JSONL lines are untrusted, so their nesting and size are limited.

Decisions:

- :data:`MAX_DEPTH` levels of ``[``/``{`` and :data:`MAX_BYTES` of text at most; Python's ``json`` would
  raise ``RecursionError`` (a crash, not a parse failure) on a reply nested ~1,000 deep.
- The depth is measured before parsing, on the text with its strings removed, and only when the text has
  more brackets than the limit (so a short reply costs one ``count``).
- Too deep or too large raises :class:`JSONLimitError` (a ``ValueError``, so callers that treat malformed
  JSON as such treat these the same); its ``reason`` (``json_too_deep``, ``json_too_large``) is what a
  reply stored as ``unparseable`` carries.
- ``strict=True`` (a user's file) also refuses what JSON itself does not allow but Python's ``json``
  reads: a key given twice in one object (``json`` keeps the last) and ``NaN``/``Infinity``; reason
  ``json_duplicate_key`` or ``json_not_a_number``.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["MAX_BYTES", "MAX_DEPTH", "JSONLimitError", "json_limit_reason", "loads_bounded"]

#: deepest nesting of arrays and objects read from a reply or a JSONL line
MAX_DEPTH = 64
#: largest JSON text read (characters)
MAX_BYTES = 16 * 1024 * 1024

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


class JSONLimitError(ValueError):
    """JSON beyond the limits; ``reason`` is ``json_too_deep``, ``json_too_large``, ``json_duplicate_key`` or
    ``json_not_a_number``."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _depth(text: str) -> int:
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    depth = deepest = 0
    for char in brackets:
        if char in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
        else:
            depth -= 1
    return deepest


def json_limit_reason(text: str | bytes, max_depth: int = MAX_DEPTH) -> str | None:
    """``json_too_large``, ``json_too_deep`` or ``None`` for ``text`` (checked without parsing it)."""
    if len(text) > MAX_BYTES:
        return "json_too_large"
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if text.count("[") + text.count("{") <= max_depth:
        return None
    return "json_too_deep" if _depth(text) > max_depth else None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise JSONLimitError("json_duplicate_key", f"duplicate key '{key}'; each key may appear once per object")
        obj[key] = value
    return obj


def _no_constant(name: str) -> Any:
    raise JSONLimitError("json_not_a_number", f"{name} is not a JSON number; give a finite number")


def loads_bounded(text: str | bytes, max_depth: int = MAX_DEPTH, *, strict: bool = False) -> Any:
    """``json.loads(text)`` within the limits; :class:`JSONLimitError` beyond them, ``ValueError`` if malformed.
    ``strict``: a duplicate key or ``NaN``/``Infinity`` is a :class:`JSONLimitError` too (a user's file)."""
    reason = json_limit_reason(text, max_depth)
    if reason == "json_too_large":
        raise JSONLimitError(reason, f"JSON text of {len(text):,} characters, more than {MAX_BYTES:,}")
    if reason == "json_too_deep":
        raise JSONLimitError(reason, f"JSON nested deeper than {max_depth} levels")
    try:
        if strict:
            return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
        return json.loads(text)
    except RecursionError:
        raise JSONLimitError("json_too_deep", "JSON nested too deeply") from None
