"""The parsing rules as data: loading `rules.yaml` once and resolving use cases.

Decisions:

- Every word the parsers recognise (units, currencies, periods, range separators, refusal
  phrases, error and truncation markers) and every per-answer-type fact (unit, release unit,
  plausibility bounds) lives in ``rules.yaml`` next to this module. Adding a unit word or a
  refusal phrase in another language is a data edit.
- Answers are parsed by *answer type* (``inr_annual``, ``percent``, ``inr``, ``number``); a study's use case
  declares its answer type in the study (never here). Any other name is a
  :class:`~counterbench.errors.UserError` whose one-line message lists the valid names.
- The file is read once per process (``functools.cache``); the returned objects are frozen.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from counterbench.errors import UserError

RULES_FILE = "rules.yaml"
ACCEPTS = ("money", "percent", "any")


@dataclass(frozen=True)
class AnswerType:
    """What one kind of answer means: its unit, release unit and plausibility bounds."""

    name: str
    unit: str | None
    release_unit: str | None
    release_divisor: float
    lower: float | None
    upper: float | None
    accepts: str
    monthly_to_annual: bool


@dataclass(frozen=True)
class Rules:
    """Everything loaded from ``rules.yaml``. Word lists are lower-cased and normalised."""

    answer_types: dict[str, AnswerType]
    scales: dict[str, float]  # word -> multiplier
    percent_words: tuple[str, ...]
    currency_prefixes: tuple[str, ...]
    currency_suffixes: tuple[str, ...]
    foreign_prefixes: tuple[str, ...]
    foreign_suffixes: tuple[str, ...]
    month_words: tuple[str, ...]
    year_words: tuple[str, ...]
    range_separators: tuple[str, ...]
    between_words: tuple[str, ...]
    between_joiners: tuple[str, ...]
    error_prefixes: tuple[str, ...]
    truncation_markers: tuple[str, ...]
    refusal_phrases: dict[str, tuple[str, ...]]  # profile -> phrases (as written in the file)


def _words(raw: Any, key: str) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(w, str) for w in raw):
        raise ValueError(f"{RULES_FILE}: {key} must be a list of strings")
    return tuple(w.lower() for w in raw)


def _answer_type(name: str, raw: Any) -> AnswerType:
    if not isinstance(raw, dict):
        raise ValueError(f"{RULES_FILE}: answer_types.{name} must be a mapping")
    bounds = raw.get("bounds")
    lower = upper = None
    if bounds is not None:
        if not (isinstance(bounds, list) and len(bounds) == 2):
            raise ValueError(f"{RULES_FILE}: answer_types.{name}.bounds must be [lower, upper] or null")
        lower, upper = float(bounds[0]), float(bounds[1])
    accepts = str(raw.get("accepts"))
    if accepts not in ACCEPTS:
        raise ValueError(f"{RULES_FILE}: answer_types.{name}.accepts must be one of {ACCEPTS}")
    return AnswerType(
        name=name,
        unit=raw.get("unit"),
        release_unit=raw.get("release_unit"),
        release_divisor=float(raw.get("release_divisor", 1)),
        lower=lower,
        upper=upper,
        accepts=accepts,
        monthly_to_annual=bool(raw.get("monthly_to_annual", False)),
    )


def rules_from_mapping(data: dict[str, Any]) -> Rules:
    """Build :class:`Rules` from the parsed YAML mapping (validates its shape)."""
    answer_types = {name: _answer_type(name, raw) for name, raw in dict(data["answer_types"]).items()}
    scales: dict[str, float] = {}
    for name, raw in dict(data["scales"]).items():
        for word in _words(raw["words"], f"scales.{name}.words"):
            scales[word] = float(raw["multiplier"])
    periods = dict(data["periods"])
    refusals = {str(profile): tuple(phrases) for profile, phrases in dict(data["refusal_phrases"]).items()}
    return Rules(
        answer_types=answer_types,
        scales=scales,
        percent_words=_words(data["percent_words"], "percent_words"),
        currency_prefixes=_words(data["currency_prefixes"], "currency_prefixes"),
        currency_suffixes=_words(data["currency_suffixes"], "currency_suffixes"),
        foreign_prefixes=_words(data["foreign_currency_prefixes"], "foreign_currency_prefixes"),
        foreign_suffixes=_words(data["foreign_currency_suffixes"], "foreign_currency_suffixes"),
        month_words=_words(periods["month"], "periods.month"),
        year_words=_words(periods["year"], "periods.year"),
        range_separators=_words(data["range_separators"], "range_separators"),
        between_words=_words(data["range_between_words"], "range_between_words"),
        between_joiners=_words(data["range_between_joiners"], "range_between_joiners"),
        error_prefixes=tuple(str(p) for p in data["error_prefixes"]),
        truncation_markers=tuple(str(m) for m in data["truncation_markers"]),
        refusal_phrases=refusals,
    )


@functools.cache
def load_rules() -> Rules:
    """Read the packaged ``rules.yaml`` (once per process)."""
    text = resources.files("counterbench.parse").joinpath(RULES_FILE).read_text(encoding="utf-8")
    data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # libyaml: ~8x faster, same values
    if not isinstance(data, dict):
        raise ValueError(f"{RULES_FILE} must hold a mapping")
    return rules_from_mapping(data)


def answer_type_names() -> list[str]:
    """The answer type names :func:`resolve_answer_type` accepts."""
    return sorted(load_rules().answer_types)


@functools.cache
def resolve_answer_type(name: str) -> AnswerType:
    """The :class:`AnswerType` called ``name``; an unknown name is a :class:`UserError`."""
    answer_type = load_rules().answer_types.get(name)
    if answer_type is None:
        raise UserError(f"unknown answer type {name!r}; valid names: " + ", ".join(answer_type_names()))
    return answer_type
