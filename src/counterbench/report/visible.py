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

The report and the viewer render their pages from Jinja templates set up alike
(:func:`template_environment`).
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

if TYPE_CHECKING:
    import jinja2

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


def shown(value: Any) -> Any:
    """Every printed text value (not counterbench's own Markup) with invisible characters made visible."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return show_controls(value)
    return value


def template_environment(package: str) -> jinja2.Environment:
    """The Jinja environment of ``package``'s ``templates`` folder: autoescaped, strict about undefined
    names, every printed value through :func:`shown`."""
    import jinja2

    return jinja2.Environment(loader=jinja2.PackageLoader(package, "templates"), autoescape=True, trim_blocks=True,
                              lstrip_blocks=True, undefined=jinja2.StrictUndefined, finalize=shown)
