"""The template lint: a neutral resume may carry no name, pronoun, nationality or basket term.

Paper "Small Changes, Big Impact" §3.1–3.2: the injected section must be the only demographic
signal. :func:`lint_template` returns every finding (category, term, line); :func:`check_templates`
raises one :class:`~counterbench.errors.UserError` for the first bad template.

Decisions:

- Terms are matched as whole words/phrases, case-insensitively, on the template *outside* its
  Additional Information placeholders (the placeholder lines carry only the labels).
- The word lists live in ``data/lint_terms.yaml``; basket terms are every comma- or
  semicolon-separated item of every basket value, without parenthesised qualifiers ("Hokkien
  (conversational)" → "Hokkien"), so a template mentioning any marker is rejected.
- A ``Name:`` (or ``Full name:``) field is a name whatever follows it; first names are matched from
  the list (a small seed list — extend it for other countries).
- Another country's lists (:func:`load_lint_terms`): a file of the same keys either *extends* the
  built-in lists or *replaces* them; ``allow`` relaxes single terms (a generic word such as
  "cycling"), each with the reason recorded in :attr:`LintTerms.allowed`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from counterbench.builtin.hiring.data import Basket, ResumeTemplate, builtin_path
from counterbench.errors import UserError, check_keys
from counterbench.yaml_files import read_yaml_file


@dataclass(frozen=True)
class LintFinding:
    """One forbidden term found in a template."""

    category: str  # name | pronoun | nationality | basket
    term: str
    line: int


LIST_KEYS: tuple[str, ...] = ("pronouns", "nationality", "name_fields", "first_names")


@dataclass(frozen=True)
class LintTerms:
    """The lint's word lists and the terms relaxed on purpose (term -> the reason given)."""

    lists: Mapping[str, tuple[str, ...]]
    allowed: Mapping[str, str] = field(default_factory=dict)


@lru_cache(maxsize=1)
def _terms() -> LintTerms:
    data: dict[str, Any] = yaml.safe_load(builtin_path("lint_terms.yaml").read_text(encoding="utf-8"))
    return LintTerms({key: tuple(str(t).lower() for t in data[key]) for key in LIST_KEYS})


def load_lint_terms(path: str | Path | None = None, *, mode: str = "extend",
                    allow: Mapping[str, str] | None = None) -> LintTerms:
    """The built-in lists, extended or replaced (``mode``) by a file of the same keys, minus ``allow``."""
    if mode not in ("extend", "replace"):
        raise UserError(f"the lint terms mode must be extend or replace, got '{mode}'")
    base = _terms()
    lists = dict(base.lists)
    if path is not None:
        p = Path(path)
        data = read_yaml_file(p) or {}
        if not isinstance(data, dict):
            raise UserError(f"{p.name}: expected a mapping of {', '.join(LIST_KEYS)} to lists of terms")
        check_keys(data, LIST_KEYS, p.name)
        for key, terms in data.items():
            if not isinstance(terms, list) or not all(isinstance(t, str) and t.strip() for t in terms):
                raise UserError(f"{p.name}: {key}: expected a list of words")
            mine = tuple(t.strip().lower() for t in terms)
            lists[key] = mine if mode == "replace" else tuple(dict.fromkeys((*lists[key], *mine)))
        if mode == "replace":
            lists = {key: lists[key] if key in data else () for key in LIST_KEYS}
    allowed = {str(term).strip().lower(): str(reason) for term, reason in (allow or {}).items()}
    for term, reason in allowed.items():
        if not reason.strip():
            raise UserError(f"lint: allowing '{term}' needs a reason (why this word does not reveal anyone)")
    return LintTerms(lists, allowed)


def basket_terms(baskets: Iterable[Basket]) -> set[str]:
    """Every marker item of the baskets, lower-cased, qualifiers in parentheses removed."""
    terms: set[str] = set()
    for basket in baskets:
        for value in basket.markers.values():
            for item in re.split(r"[,;]", value):
                item = re.sub(r"\([^)]*\)", " ", item)
                item = " ".join(item.split()).strip().lower()
                if len(item) >= 3:
                    terms.add(item)
    return terms


def _words(term: str) -> str:
    return r"\s+".join(re.escape(w) for w in term.split())


def _phrase(term: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w])" + _words(term) + r"(?![\w])", re.IGNORECASE)


@dataclass(frozen=True)
class _Patterns:
    """A lint's compiled terms: one pattern per term, and one for all of them at once."""

    terms: list[tuple[str, str, re.Pattern[str]]]
    #: matches a line exactly when one of ``terms`` does (an alternation inside the same word bounds:
    #: a term followed by a letter backtracks to the next); a neutral line is passed by one search
    any_term: re.Pattern[str] | None
    name_field: re.Pattern[str] | None


@lru_cache(maxsize=64)
def _compiled(terms: tuple[tuple[str, str], ...], fields: tuple[str, ...]) -> _Patterns:
    any_term = (re.compile(r"(?<![\w])(?:" + "|".join(_words(term) for _, term in terms) + r")(?![\w])",
                           re.IGNORECASE) if terms else None)
    name_field = (re.compile(r"^\s*(?:" + "|".join(re.escape(f) for f in fields) + r")\s*:", re.IGNORECASE)
                  if fields else None)
    return _Patterns([(category, term, _phrase(term)) for category, term in terms], any_term, name_field)


def _patterns(baskets: Sequence[Basket], lint: LintTerms | None) -> _Patterns:
    data = (lint or _terms()).lists
    allowed = (lint or _terms()).allowed
    terms: list[tuple[str, str]] = [("pronoun", t) for t in data["pronouns"]]
    terms += [("nationality", t) for t in data["nationality"]]
    terms += [("name", t) for t in data["first_names"]]
    terms += [("basket", t) for t in sorted(basket_terms(baskets))]
    return _compiled(tuple(t for t in terms if t[1] not in allowed),
                     tuple(f for f in data["name_fields"] if f not in allowed))


def lint_template(text: str, baskets: Sequence[Basket] = (), lint: LintTerms | None = None) -> list[LintFinding]:
    """Every name, pronoun, nationality word or basket term in ``text`` (outside the placeholders)."""
    return _lint(text, _patterns(baskets, lint))


def _lint(text: str, patterns: _Patterns) -> list[LintFinding]:
    findings: list[LintFinding] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if patterns.name_field is not None and patterns.name_field.match(line):
            findings.append(LintFinding("name", line.split(":", 1)[0].strip(), number))
        # the section's labels ("Languages:", "Hobbies:") are the template's own words, not markers
        body = re.sub(r"\[(LANGUAGES|ACTIVITIES|VOLUNTEERING|HOBBIES)\]", " ", line)
        if patterns.any_term is None or not patterns.any_term.search(body):
            continue
        for category, term, pattern in patterns.terms:
            if pattern.search(body):
                findings.append(LintFinding(category, term, number))
    return findings


def check_templates(templates: Sequence[ResumeTemplate], baskets: Sequence[Basket] = (),
                    lint: LintTerms | None = None) -> None:
    """Raise a UserError naming the first template that carries a forbidden term."""
    patterns = _patterns(baskets, lint)
    for template in templates:
        findings = _lint(template.text, patterns)
        if findings:
            first = findings[0]
            raise UserError(
                f"resume template for job '{template.job_id}' line {first.line} carries a {first.category} "
                f"('{first.term}'); neutral resumes may hold no names, pronouns, nationality or marker terms "
                f"({len(findings)} finding(s))"
            )
