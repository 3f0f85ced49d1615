"""Make invisible and direction-changing characters from model output visible in the report.

Model answers are untrusted text. Besides HTML (escaped by the renderers), a few characters can
spoof what a reader sees without any markup: bidirectional overrides and isolates (U+202A–U+202E,
U+2066–U+2069, U+200E/U+200F, U+061C) reorder the text around them, NUL/ESC and the other C0/C1
controls can hide or garble it in terminals and viewers, and zero-width characters and the byte
order mark (U+200B, U+2060, U+FEFF, ...) hide inside numbers. In the HTML and Markdown reports each
is shown as its escape, e.g. ``\\u202e``; tabs and newlines are kept. The zero-width joiner and
non-joiner (U+200C, U+200D) are kept where a script or an emoji sequence uses them — right after a
letter, a combining mark or a symbol, and not next to a digit — and escaped elsewhere (at the start,
after a space or punctuation, inside a number), where they can only hide. The viewer shows text the
same way. The store keeps the text exactly as received.
"""

from __future__ import annotations

import re
import unicodedata

_INVISIBLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f"  # C0 (not tab, newline) and C1 controls, DEL
    "\u061c\u180e\u200b\u200e\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]"
)


_JOINERS = re.compile("[\u200c\u200d]")
#: what a joiner may follow: letters, combining marks (Devanagari's virama), symbols (emoji), modifiers
_JOINS_AFTER = ("L", "M", "So", "Sk")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _joiner(match: re.Match[str]) -> str:
    text, at = match.string, match.start()
    before = unicodedata.category(text[at - 1]) if at > 0 else ""
    after = unicodedata.category(text[at + 1]) if at + 1 < len(text) else ""
    joins = before.startswith(_JOINS_AFTER) and after != "Nd"
    return match.group() if joins else _escape(match)


def show_controls(text: str) -> str:
    """``text`` with every invisible or direction-changing character replaced by its visible escape."""
    if _JOINERS.search(text):  # first: a joiner's neighbours are judged as received
        text = _JOINERS.sub(_joiner, text)
    return _INVISIBLE.sub(_escape, text) if _INVISIBLE.search(text) else text
