"""Invisible characters in model output: a number with one inside is never read as the digits around it.

Decisions:

- *Hidden* characters are the zero-width ones (U+200B space, U+200C non-joiner, U+200D joiner, U+2060 word
  joiner, U+FEFF byte-order mark, U+180E), the soft hyphen U+00AD, and the bidirectional controls (U+200E,
  U+200F, U+061C, U+202A–U+202E, U+2066–U+2069).
- One inside a number (between two digits, or between a digit and a decimal point or grouping comma) makes
  the answer ``unparseable`` with reason ``hidden_character``: ``9\\u200b50000`` shows as 950000 but a
  parser that skips the character reads 50,000, and one that drops it reads what the model may not have
  meant either. A bidirectional control anywhere in a text with digits does the same (``\\u202e0000021``
  shows as 1200000).
- Elsewhere (around a word, after the number) they are only formatting and are removed before parsing.
"""

from __future__ import annotations

import re

__all__ = ["HIDDEN", "has_hidden_in_number", "strip_hidden"]

_ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff\u180e\u00ad"
_BIDI = "\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069"
#: a character class of every hidden character
HIDDEN = f"[{_ZERO_WIDTH}{_BIDI}]"
_DIGIT = "0-9\u0966-\u096f\uff10-\uff19"
_IN_NUMBER = re.compile(rf"[{_DIGIT}][.,]?{HIDDEN}+[.,]?[{_DIGIT}]")
_BIDI_CHAR = re.compile(f"[{_BIDI}]")
_ANY_DIGIT = re.compile(f"[{_DIGIT}]")
_HIDDEN = re.compile(HIDDEN)


def has_hidden_in_number(text: str) -> bool:
    """True when a hidden character sits inside a number of ``text``, or a bidirectional control sits in a
    text with digits (see the module docstring)."""
    if not _HIDDEN.search(text):
        return False
    return bool(_IN_NUMBER.search(text) or (_BIDI_CHAR.search(text) and _ANY_DIGIT.search(text)))


def strip_hidden(text: str) -> str:
    """``text`` without its hidden characters (formatting only, once :func:`has_hidden_in_number` is false)."""
    return _HIDDEN.sub("", text)
