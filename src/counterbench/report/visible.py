"""Make invisible and direction-changing characters from model output visible in the report.

Model answers are untrusted text. Besides HTML (escaped by the renderers), a few characters can
spoof what a reader sees without any markup: bidirectional overrides and isolates (U+202A–U+202E,
U+2066–U+2069, U+200E/U+200F, U+061C) reorder the text around them, NUL/ESC and the other C0/C1
controls can hide or garble it in terminals and viewers, and zero-width characters and the byte
order mark (U+200B, U+2060, U+FEFF, ...) hide inside numbers. In the HTML and Markdown reports each
is shown as its escape, e.g. ``\\u202e``; tabs and newlines are kept. The zero-width joiner and
non-joiner (U+200C, U+200D) are left alone: Devanagari and emoji need them. The store keeps the
text exactly as received.
"""

from __future__ import annotations

import re

_INVISIBLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f"  # C0 (not tab, newline) and C1 controls, DEL
    "\u061c\u180e\u200b\u200e\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]"
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def show_controls(text: str) -> str:
    """``text`` with every invisible or direction-changing character replaced by its visible escape."""
    return _INVISIBLE.sub(_escape, text) if _INVISIBLE.search(text) else text
