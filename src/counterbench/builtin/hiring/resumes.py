"""Resume templates: the Additional Information section, marker injection, the neutral resume, ablation.

A template holds a section headed ``Additional Information`` (optionally with ``#`` marks or a colon)
whose following lines each carry exactly one placeholder — ``[LANGUAGES]``, ``[ACTIVITIES]``,
``[VOLUNTEERING]``, ``[HOBBIES]`` — and nothing else of the resume. Paper "Small Changes, Big Impact"
§3.2:

- an **augmented** resume replaces each placeholder with its basket's value;
- the **neutral** resume removes the whole section (header, placeholder lines and the blank line
  before the header), so the section is the only textual difference between the two;
- an **ablated** resume (§3.6) keeps only some categories: the lines of removed categories go, the
  header stays while at least one category remains; with none left it is the neutral resume.

So, by construction and checked by :func:`outside_section`, an augmented resume with its section cut
out equals its neutral resume byte for byte.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from counterbench.builtin.hiring.data import CATEGORIES, PLACEHOLDERS
from counterbench.errors import UserError

_HEADER = re.compile(r"^\s*#{0,6}\s*\**\s*additional information\s*\**\s*:?\s*$", re.IGNORECASE)
_ANY_PLACEHOLDER = re.compile(r"\[(LANGUAGES|ACTIVITIES|VOLUNTEERING|HOBBIES)\]")


@dataclass(frozen=True)
class Section:
    """Where the Additional Information section lies in a template (line indices)."""

    lines: tuple[str, ...]
    header: int
    #: category -> index of the line holding its placeholder
    slots: Mapping[str, int]
    #: first line after the section
    end: int


def find_section(text: str, *, where: str = "resume template") -> Section:
    """Locate the section; a template without one, or with placeholders elsewhere, is a UserError."""
    return _find_section(text, where)


@lru_cache(maxsize=4096)
def _find_section(text: str, where: str) -> Section:
    lines = tuple(text.split("\n"))
    headers = [i for i, line in enumerate(lines) if _HEADER.match(line)]
    if len(headers) != 1:
        raise UserError(f"{where}: expected exactly one 'Additional Information' section heading, "
                        f"found {len(headers)}")
    header = headers[0]
    slots: dict[str, int] = {}
    i = header + 1
    while i < len(lines) and _ANY_PLACEHOLDER.search(lines[i]):
        found = _ANY_PLACEHOLDER.findall(lines[i])
        if len(found) != 1:
            raise UserError(f"{where}: line {i + 1} holds {len(found)} placeholders; put each on its own line")
        category = found[0].lower()
        if category in slots:
            raise UserError(f"{where}: placeholder [{found[0]}] appears twice")
        slots[category] = i
        i += 1
    missing = [PLACEHOLDERS[c] for c in CATEGORIES if c not in slots]
    if missing:
        raise UserError(f"{where}: the Additional Information section lacks {', '.join(missing)} "
                        "(each on its own line right after the heading)")
    stray = [n + 1 for n, line in enumerate(lines) if _ANY_PLACEHOLDER.search(line) and n not in slots.values()]
    if stray:
        raise UserError(f"{where}: a placeholder outside the Additional Information section (line {stray[0]})")
    return Section(lines, header, slots, i)


def _start(section: Section) -> int:
    """First line to drop with the section: the header, or the blank line just before it."""
    start = section.header
    if start > 0 and not section.lines[start - 1].strip():
        start -= 1
    return start


def neutral_resume(template: str) -> str:
    """The neutral resume: the template without its Additional Information section."""
    section = find_section(template)
    kept = section.lines[: _start(section)] + section.lines[section.end :]
    return "\n".join(kept)


def fill(template: str, markers: Mapping[str, str], keep: Iterable[str] = CATEGORIES) -> str:
    """The template with the kept categories' placeholders replaced by ``markers``; other lines removed.

    With no category kept the result is :func:`neutral_resume`.
    """
    keep_set = set(keep)
    unknown = keep_set - set(CATEGORIES)
    if unknown:
        raise UserError(f"unknown marker category '{sorted(unknown)[0]}' (one of {', '.join(CATEGORIES)})")
    if not keep_set:
        return neutral_resume(template)
    section = find_section(template)
    out: list[str] = list(section.lines[: section.header + 1])
    for index in range(section.header + 1, section.end):
        category = next(c for c, i in section.slots.items() if i == index)
        if category in keep_set:
            out.append(section.lines[index].replace(PLACEHOLDERS[category], markers[category]))
    out.extend(section.lines[section.end :])
    return "\n".join(out)


def outside_section(resume: str) -> str:
    """The resume with its Additional Information section cut out (heading and its marker lines).

    For an augmented resume this must equal its neutral resume (the test of the study's design).
    A resume without the section is returned unchanged.
    """
    lines = resume.split("\n")
    headers = [i for i, line in enumerate(lines) if _HEADER.match(line)]
    if not headers:
        return resume
    header = headers[0]
    end = header + 1
    while end < len(lines) and lines[end].strip() and ":" in lines[end] and not _HEADER.match(lines[end]):
        end += 1
    start = header - 1 if header > 0 and not lines[header - 1].strip() else header
    return "\n".join(lines[:start] + lines[end:])


def cumulative_conditions(order: Sequence[str] = ("hobbies", "volunteering", "activities", "languages"),
                          ) -> list[tuple[str, tuple[str, ...]]]:
    """The cumulative ablation (paper §3.6): all markers, then removing ``order`` one category at a time.

    Returns ``(condition name, kept categories)`` from all four down to none, e.g.
    ``("all", 4 cats)``, ``("-hobbies", 3 cats)``, ... ``("none", ())``.
    """
    if sorted(order) != sorted(CATEGORIES):
        raise UserError(f"the ablation order must name each of {', '.join(CATEGORIES)} once, got {', '.join(order)}")
    kept = list(CATEGORIES)
    steps: list[tuple[str, tuple[str, ...]]] = [("all", tuple(kept))]
    removed: list[str] = []
    for category in order:
        kept.remove(category)
        removed.append(category)
        steps.append(("none" if not kept else "-" + "-".join(removed), tuple(kept)))
    return steps


def single_conditions() -> list[tuple[str, tuple[str, ...]]]:
    """One condition per category with only that category present (``only-languages``, ...)."""
    return [(f"only-{c}", (c,)) for c in CATEGORIES]
