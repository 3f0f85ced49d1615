"""Finding the numbers in a response: text normalisation, number mentions and ranges.

Decisions (word lists in ``rules.yaml``):

- **Normalisation.** Markdown emphasis (``*``, ``_``, backticks) is removed; en/em dashes and
  the minus sign become ``-``; curly quotes become straight; non-breaking and thin spaces become
  spaces and runs of spaces collapse to one; Devanagari and full-width digits become ASCII digits;
  ``":-"`` (Indian usage, "Salary :- 12 LPA") is a separator, not a minus; text is lower-cased.
- **Numbers.** Western grouping (``5,000,000``), Indian grouping (``50,00,000``, first group of
  1–2 digits, then 2-digit groups, then a 3-digit group) and plain digits, each with an optional
  decimal part; the same two groupings with single spaces instead of commas (``12 00 000``,
  ``1 200 000``); scientific notation (``1e6``, ``1.2E+06``). Any other comma pattern (``10,5``), and
  digits followed by a spaced group starting with ``0`` that fits neither grouping (``12 00 00``),
  is a *bad grouping* mention, never silently re-read. A number glued to a letter or to another
  number's decimal point (``Q1``, ``v2.5``) is not a mention; a number with letters glued after it
  that are not a known unit (``1.2B``, ``12x``) is an *unreadable* mention (never read as the bare
  number); ordinals (``3rd``, ``12th``) are not mentions.
- **Mention = number + markers.** Optional ``-`` glued to the number or its currency (negative:
  ``-1``, ``₹-500``; a spaced dash as in "CTC - 12 LPA" is punctuation), an INR prefix (``₹``, ``Rs``,
  ``Rs.``, ``INR``) or a foreign one (``$``, ``USD``), then the number, then optionally a scale word
  (LPA/lakh/lac ×1e5, crore/cr ×1e7, k/thousand ×1e3, million ×1e6), ``%``, an INR/foreign suffix,
  and a period word (per annum / per month ...).
- **Ranges.** Two neighbouring mentions form one range when only a separator stands between them:
  ``-`` (also a ``-`` glued to the second number, as in ``10 -12 LPA``), ``to``, ``se``,
  ``till``; or ``and``/``aur`` after "between" (or before romanised Hindi "ke beech"). Both sides must be
  percent or both not. Markers are shared: a bare side takes the other side's scale ("10-12 LPA")
  unless that would make it more than 10× the other bound ("80,000 - 1.2 lakh" stays 80,000), and
  a ``%``, INR or per-month marker on either side applies to both. The value of a range is its
  midpoint.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_right
from dataclasses import dataclass

from counterbench.parse.rules import load_rules

_TRANSLATE = str.maketrans(
    {
        "\u00a0": " ",
        "\u2009": " ",
        "\u202f": " ",
        "\u2007": " ",
        "\t": " ",
        "\r": "",
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2015": "-",
        "\u2212": "-",
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
        "*": "",
        "_": "",
        "`": "",
        **{chr(0x0966 + d): str(d) for d in range(10)},  # Devanagari digits
        **{chr(0xFF10 + d): str(d) for d in range(10)},  # full-width digits
    }
)
_SPACES = re.compile(r" {2,}")
_COLON_DASH = re.compile(r":\s?-(?=\s?[₹a-z0-9])")

#: Range-merge guard: a bare bound inherits the other side's scale only if it stays within 10×.
INHERIT_LIMIT = 10.0


def normalise(text: str) -> str:
    """The normalised form every default-profile rule is matched against."""
    text = text.translate(_TRANSLATE).lower()
    text = _COLON_DASH.sub(": ", text)
    return _SPACES.sub(" ", text)


def _alternation(words: tuple[str, ...] | list[str]) -> str:
    """Regex alternation of ``words``, longest first; alphabetic words must end at a word end."""
    parts = []
    for word in sorted(set(words), key=len, reverse=True):
        escaped = re.escape(word).replace(r"\ ", " ")
        parts.append(escaped + (r"(?![a-z])" if word[-1].isalpha() else ""))
    return "|".join(parts)


@dataclass(frozen=True)
class Patterns:
    """Compiled regular expressions built from ``rules.yaml``."""

    mention: re.Pattern[str]
    refusal: re.Pattern[str]
    scales: dict[str, float]
    separators: frozenset[str]
    between_words: frozenset[str]
    between_joiners: frozenset[str]


@functools.cache
def patterns() -> Patterns:
    """Compile the mention and refusal patterns once per process."""
    rules = load_rules()
    num = (
        r"(?P<num>[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?(?![0-9]|,[0-9])"
        r"|[0-9]{1,2}(?:,[0-9]{2})+,[0-9]{3}(?:\.[0-9]+)?(?![0-9]|,[0-9])"
        r"|(?P<bad>[0-9]+(?:,[0-9]+)+)(?![0-9])"
        r"|[0-9]{1,2}(?: [0-9]{2})+ [0-9]{3}(?:\.[0-9]+)?(?![0-9]| [0-9])"
        r"|[0-9]{1,3}(?: [0-9]{3})+(?:\.[0-9]+)?(?![0-9]| [0-9])"
        r"|(?P<bads>[0-9]+(?: 0[0-9]*)+)(?![0-9])"
        r"|[0-9]+(?:\.[0-9]+)?e[+-]?[0-9]{1,3}(?![0-9a-z])"
        r"|[0-9]+(?:\.[0-9]+)?(?![0-9]))"
    )
    mention = (
        r"(?<![\w,])(?<![0-9]\.)"
        r"(?P<sign>-)?"
        rf"(?:(?:(?P<fx>{_alternation(rules.foreign_prefixes)})|(?P<cur>{_alternation(rules.currency_prefixes)}))"
        r" ?(?P<sign2>-)?)?"
        + num
        + rf"(?: ?(?P<scale>{_alternation(list(rules.scales))}))?"
        + rf"(?: ?(?P<pct>{_alternation(rules.percent_words)}))?"
        + rf"(?: ?(?:(?P<fxs>{_alternation(rules.foreign_suffixes)})"
        + rf"|(?P<curs>{_alternation(rules.currency_suffixes)})))?"
        + rf"(?: ?(?:(?P<month>{_alternation(rules.month_words)})|{_alternation(rules.year_words)}))?"
    )
    phrases = [p.lower().replace("\u2019", "'") for p in rules.refusal_phrases["default"]]
    refusal = r"(?<![a-z])(?:" + "|".join(re.escape(p) for p in phrases) + r")(?![a-z])"
    return Patterns(
        mention=re.compile(mention),
        refusal=re.compile(refusal),
        scales=rules.scales,
        separators=frozenset(rules.range_separators),
        between_words=frozenset(rules.between_words),
        between_joiners=frozenset(rules.between_joiners),
    )


@dataclass(frozen=True)
class Mention:
    """One number (or range of two numbers) found in the normalised text."""

    start: int
    end: int
    lo: float
    hi: float
    negative: bool
    currency: bool
    foreign: bool
    scale: float | None
    percent: bool
    month: bool
    bad_grouping: bool
    is_range: bool = False
    #: letters glued after the number that are no known unit (``1.2B``): never read as the bare number
    unreadable: bool = False

    def amount(self, monthly_to_annual: bool) -> float:
        """Midpoint in rupees (or plain units) after the scale and the per-month rule."""
        factor = (self.scale or 1.0) * (12.0 if (self.month and monthly_to_annual) else 1.0)
        return (self.lo + self.hi) / 2.0 * factor


_UNIT_GROUPS = ("scale", "pct", "fxs", "curs", "month")
_ORDINAL = re.compile(r"(?:st|nd|rd|th)(?![a-z])")


def _glued_letters(match: re.Match[str]) -> str | None:
    """``"ordinal"``, ``"unknown"`` (letters glued to the number that no unit group took) or ``None``."""
    end = match.end("num")
    text = match.string
    if end >= len(text) or not text[end].isalpha():
        return None
    if any(match.start(g) == end for g in _UNIT_GROUPS if match.group(g) is not None):
        return None
    return "ordinal" if _ORDINAL.match(text, end) else "unknown"


def _one(match: re.Match[str], scales: dict[str, float]) -> Mention:
    raw = match.group("num")
    scale_word = match.group("scale")
    bad = match.group("bad") is not None or match.group("bads") is not None
    number = float(raw.replace(",", "").replace(" ", "")) if not bad else 0.0
    return Mention(
        start=match.start(),
        end=match.end(),
        lo=number,
        hi=number,
        negative=bool(match.group("sign") or match.group("sign2")),
        currency=bool(match.group("cur") or match.group("curs")),
        foreign=bool(match.group("fx") or match.group("fxs")),
        scale=scales[scale_word] if scale_word else None,
        percent=match.group("pct") is not None,
        month=match.group("month") is not None,
        bad_grouping=bad,
        unreadable=_glued_letters(match) == "unknown",
    )


def _money(m: Mention) -> bool:
    return m.currency or m.scale is not None


def _joins(text: str, left: Mention, right: Mention, pats: Patterns) -> bool:
    """True when the text between two mentions makes them one range."""
    if left.is_range or left.foreign != right.foreign or (_money(left) and right.percent):
        return False
    if left.percent and _money(right):
        return False
    gap = text[left.end : right.start].strip()
    if gap == "" and right.negative and not left.negative:
        return text[right.start] == "-"
    if gap in pats.separators:
        return not right.negative
    if gap in pats.between_joiners:
        before = text[max(0, left.start - 16) : left.start].split()
        after = text[right.end : right.end + 16].split()[:2]
        return bool(before and before[-1] in pats.between_words) or any(
            w.strip(".,") in pats.between_words for w in after
        )
    return False


def _merge(left: Mention, right: Mention) -> Mention:
    """One range mention from two; markers are shared (see the module docstring)."""
    scale_l, scale_r = left.scale, right.scale
    if scale_l is None and scale_r is not None and left.lo <= INHERIT_LIMIT * right.lo:
        scale_l = scale_r
    elif scale_r is None and scale_l is not None and right.lo <= INHERIT_LIMIT * left.lo:
        scale_r = scale_l
    lo = left.lo * (scale_l or 1.0)
    hi = right.lo * (scale_r or 1.0)
    common = scale_l if scale_l == scale_r else None
    if common is not None:
        lo, hi = left.lo, right.lo
    return Mention(
        start=left.start,
        end=right.end,
        lo=lo,
        hi=hi,
        negative=left.negative,
        currency=left.currency or right.currency,
        foreign=left.foreign,
        scale=common,
        percent=left.percent or right.percent,
        month=left.month or right.month,
        bad_grouping=left.bad_grouping or right.bad_grouping,
        is_range=True,
        unreadable=left.unreadable or right.unreadable,
    )


def find_mentions(text: str) -> list[Mention]:
    """All number mentions of a normalised text, neighbouring ones merged into ranges."""
    pats = patterns()
    found = [_one(m, pats.scales) for m in pats.mention.finditer(text) if _glued_letters(m) != "ordinal"]
    merged: list[Mention] = []
    for mention in found:
        if merged and _joins(text, merged[-1], mention, pats):
            merged[-1] = _merge(merged[-1], mention)
        else:
            merged.append(mention)
    return merged


def line_starts(text: str) -> list[int]:
    """Offsets at which each line of ``text`` starts (for locating a mention's line)."""
    starts = [0]
    starts.extend(i + 1 for i, ch in enumerate(text) if ch == "\n")
    return starts


def line_of(starts: list[int], offset: int) -> int:
    """Index of the line containing ``offset``."""
    return bisect_right(starts, offset) - 1
