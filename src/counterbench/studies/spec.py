"""The parsed form of a declarative study: its identifiers, use cases and the checker that names the file
in every error. :mod:`counterbench.studies.definition` builds these from a study mapping."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from counterbench.errors import UserError
from counterbench.outcomes.base import OutcomeSpec
from counterbench.studies.designs import CrossedDesign

PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
RESERVED_PLACEHOLDERS = ("identifier_phrase", "question")


@dataclass(frozen=True)
class Identifier:
    axis: str
    value: str
    phrases: Mapping[str, str]
    #: explicit phrase forms (form name -> language -> text) overriding the derivation rules
    forms: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    #: other names for the same identifier (e.g. the published release's "Shia" for "Shia Muslim")
    aliases: tuple[str, ...] = ()
    #: the group the identifier belongs to (names grouped into groups), or ``None``
    group: str | None = None


@dataclass(frozen=True)
class RewriteRule:
    pattern: re.Pattern[str]
    replace: str


@dataclass(frozen=True)
class UseCase:
    name: str
    answer_type: str
    system_prompt: str
    templates: Mapping[str, str]
    question_variants: Mapping[str, tuple[str, ...]]
    profiles: tuple[Mapping[str, Any], ...]
    aliases: tuple[str, ...] = ()
    outcome: OutcomeSpec | None = None
    #: how reports name the use case (default: its name, capitalised)
    label: str | None = None
    #: which direction of the outcome is favourable: ``higher``, ``lower`` or ``None`` (not declared)
    favourable: str | None = None

    @property
    def n_question_variants(self) -> int:
        return len(next(iter(self.question_variants.values()))) if self.question_variants else 0


@dataclass(frozen=True)
class StudyDefinition:
    name: str
    title: str
    description: str
    languages: Mapping[str, Mapping[str, str]]
    axes: Mapping[str, tuple[Identifier, ...]]
    phrase_forms: Mapping[str, Mapping[str, tuple[RewriteRule, ...]]]
    system_prompts: Mapping[str, str]
    fairness_suffix: str | None
    use_cases: Mapping[str, UseCase]
    presets: Mapping[str, Mapping[str, Any]]
    source: str
    #: axis -> (reference, comparison): the pair the canonical pair gap compares on that axis
    canonical_pairs: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    #: axis -> its groups, in declared order (axes whose identifiers are grouped)
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: several attributes stated in one prompt (``design.crossed``), or ``None``
    crossed: CrossedDesign | None = None

    @property
    def identifiers(self) -> tuple[Identifier, ...]:
        return tuple(ident for idents in self.axes.values() for ident in idents)


class _Ctx:
    """Carries the file name for error messages."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, problem: str) -> UserError:
        return UserError(f"{self.source}: {where}: {problem}")

    def mapping(self, value: Any, where: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping) or not value:
            raise self.fail(where, "expected a non-empty mapping")
        return value

    def text(self, value: Any, where: str) -> str:
        if isinstance(value, bool) or not isinstance(value, str | int | float) or str(value) == "":
            raise self.fail(where, "expected a non-empty text")
        return str(value)

    def per_language(self, value: Any, where: str, languages: Mapping[str, Any]) -> dict[str, str]:
        m = self.mapping(value, where)
        for lang in m:
            if lang not in languages:
                raise self.fail(f"{where}.{lang}", f"unknown language (declared: {', '.join(languages)})")
        for lang in languages:
            if lang not in m:
                raise self.fail(where, f"missing text for language '{lang}'")
        return {lang: self.text(m[lang], f"{where}.{lang}") for lang in languages}
