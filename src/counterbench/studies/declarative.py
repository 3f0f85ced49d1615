"""Expansion of a declarative single-attribute counterfactual study into a prompt table.

Order and ids (spec §1): for each use case and language, prompts are numbered 1.. in the order
axis -> identifier -> profile -> question variant, with ids ``<use_case>_<infix>_<NNNNN>``. Fairness
prompts (system prompt + the study's ``fairness_suffix``) carry the same number with ``_fair``
appended, so a standard prompt and its fairness twin are easy to match. Expansion is pure: the same
definition gives the same table, byte for byte.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from counterbench.errors import UserError
from counterbench.studies.base import BASE_COLUMNS, VARIANTS
from counterbench.studies.definition import PLACEHOLDER, Identifier, StudyDefinition


def render(template: str, values: Mapping[str, Any]) -> str:
    """Fill ``{name}`` placeholders (only these; other braces are left alone)."""
    return PLACEHOLDER.sub(lambda m: _fmt(values[m.group(1)]), template)


def _fmt(value: Any) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) >= 1e15:
        return str(int(value))
    return str(value)


class DeclarativeStudy:
    """A study declared as data (see ``docs/studies.md``)."""

    slot_columns: tuple[str, ...] = ("variant", "use_case", "language", "axis", "profile_id", "question_variant")
    counterfactual_column: str = "identifier"

    def __init__(self, definition: StudyDefinition) -> None:
        self.definition = definition
        self.name = definition.name
        self.title = definition.title
        self.source = definition.source
        self.presets = definition.presets
        self._aliases = {
            alias: uc.name for uc in definition.use_cases.values() for alias in (uc.name, *uc.aliases)
        }
        self._identifier_aliases = {
            alias: ident.value for ident in definition.identifiers for alias in (ident.value, *ident.aliases)
        }

    def canonical_identifier(self, name: str) -> str:
        """Map an identifier alias (e.g. the release's ``Shia``) to the study's value; unknown names pass."""
        return self._identifier_aliases.get(name, name)

    def canonical_use_case(self, name: str) -> str:
        try:
            return self._aliases[name]
        except KeyError:
            raise UserError(
                f"unknown use case '{name}' in study {self.name} "
                f"(one of: {', '.join(self.definition.use_cases)})"
            ) from None

    def system_prompt_for(self, use_case: str, variant: str = "standard") -> str:
        uc = self.definition.use_cases[self.canonical_use_case(use_case)]
        system = self.definition.system_prompts[uc.system_prompt]
        if variant == "fairness":
            system += self._fairness_suffix()
        return system

    def _fairness_suffix(self) -> str:
        if self.definition.fairness_suffix is None:
            raise UserError(f"study {self.name} declares no fairness_suffix, so it has no fairness variant")
        return self.definition.fairness_suffix

    def identifier_forms(self, ident: Identifier, language: str) -> dict[str, str]:
        """The identifier's phrase and every derived phrase form for one language."""
        out = {"identifier_phrase": ident.phrases[language]}
        for form, rules_by_lang in self.definition.phrase_forms.items():
            override = ident.forms.get(form)
            if override is not None:
                out[form] = override[language]
                continue
            phrase = ident.phrases[language]
            for rule in rules_by_lang[language]:
                if rule.pattern.search(phrase):
                    phrase = rule.pattern.sub(rule.replace, phrase, count=1)
                    break
            else:
                raise UserError(
                    f"{self.source}: phrase_forms.{form}.{language}: no rule matches the phrase "
                    f"'{ident.phrases[language]}' of identifier {ident.value}; add a rule or a `forms` override"
                )
            out[form] = phrase
        return out

    def expand(self, variants: Sequence[str] = ("standard",)) -> pd.DataFrame:
        for v in variants:
            if v not in VARIANTS:
                raise UserError(f"unknown variant '{v}' (one of: {', '.join(VARIANTS)})")
        d = self.definition
        forms = {
            (ident.value, lang): self.identifier_forms(ident, lang)
            for ident in d.identifiers
            for lang in d.languages
        }
        rows: list[dict[str, Any]] = []
        for variant in VARIANTS:
            if variant not in variants:
                continue
            suffix = "_fair" if variant == "fairness" else ""
            for uc in d.use_cases.values():
                system = self.system_prompt_for(uc.name, variant)
                for lang, lang_spec in d.languages.items():
                    template = uc.templates[lang]
                    questions = uc.question_variants[lang]
                    number = 0
                    for ident in d.identifiers:
                        phrase_values = forms[(ident.value, lang)]
                        for profile in uc.profiles:
                            design = {k: (v[lang] if isinstance(v, Mapping) else v) for k, v in profile.items()}
                            for qv_index, question in enumerate(questions, start=1):
                                number += 1
                                values = {**design, **phrase_values, "question": question}
                                rows.append(
                                    {
                                        "prompt_id": f"{uc.name}_{lang_spec['id_infix']}_{number:05d}{suffix}",
                                        "study": d.name,
                                        "use_case": uc.name,
                                        "language": lang,
                                        "axis": ident.axis,
                                        "identifier": ident.value,
                                        "profile_id": design["profile_id"],
                                        "question_variant": qv_index,
                                        "variant": variant,
                                        "answer_type": uc.answer_type,
                                        "system": system,
                                        "user": render(template, values),
                                        **{k: v for k, v in design.items() if k != "profile_id"},
                                    }
                                )
        return _to_frame(rows)


def _to_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Build the table with base columns first and design columns in order of first appearance."""
    design: dict[str, None] = {}
    for row in rows:
        for key in row:
            if key not in BASE_COLUMNS:
                design.setdefault(key, None)
    frame = pd.DataFrame.from_records(rows, columns=[*BASE_COLUMNS, *design])
    frame["question_variant"] = frame["question_variant"].astype("int64")
    for col in design:
        frame[col] = _tidy_design_column(frame[col])
    return frame


def _tidy_design_column(col: pd.Series) -> pd.Series:
    """Numbers stay numbers (float, NaN where a use case lacks the field); anything else is text."""
    present = col.dropna()
    if len(present) and all(isinstance(v, int | float) and not isinstance(v, bool) for v in present):
        return col.astype("float64")
    return col.map(lambda v: None if v is None or (isinstance(v, float) and pd.isna(v)) else str(v)).astype(
        "object"
    )
