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

from counterbench.columns import VARIANTS
from counterbench.errors import UserError
from counterbench.outcomes import get_kind, legacy_outcome
from counterbench.outcomes.base import OutcomeSpec
from counterbench.studies.base import Facet
from counterbench.studies.counts import PromptCounts
from counterbench.studies.designs import CROSSED_AXIS, combination_name
from counterbench.studies.expansion import Block, Partials, assemble, fmt
from counterbench.studies.spec import PLACEHOLDER, Identifier, StudyDefinition

#: design column: the identifier's position in its axis (crossed designs: the first attribute's level)
LEVEL_INDEX = "level_index"


def render(template: str, values: Mapping[str, Any]) -> str:
    """Fill ``{name}`` placeholders (only these; other braces are left alone)."""
    return PLACEHOLDER.sub(lambda m: fmt(values[m.group(1)]), template)


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
        self.canonical_pairs = definition.canonical_pairs
        self.description = definition.description
        self.languages: Mapping[str, str] = {
            code: spec.get("name", code) for code, spec in definition.languages.items()
        }
        self.outcomes: Mapping[str, OutcomeSpec] = {
            name: uc.outcome or legacy_outcome(uc.answer_type) for name, uc in definition.use_cases.items()
        }
        self.use_case_labels: Mapping[str, str] = {
            name: uc.label for name, uc in definition.use_cases.items() if uc.label
        }
        self.favourable: Mapping[str, str] = {
            name: uc.favourable for name, uc in definition.use_cases.items() if uc.favourable
        }
        from counterbench.outcomes.choice_options import ORDER_COLUMN, declared_options

        if any(declared_options(spec) for spec in self.outcomes.values()):  # compare within one order of options
            self.slot_columns = (*self.slot_columns, ORDER_COLUMN)
        crossed = definition.crossed
        self.axes = tuple(crossed.attributes) if crossed is not None else tuple(definition.axes)
        self.facets = self._facets()
        self._aliases = {
            alias: uc.name for uc in definition.use_cases.values() for alias in (uc.name, *uc.aliases)
        }
        self.use_case_aliases: Mapping[str, str] = {
            alias: uc.name for uc in definition.use_cases.values() for alias in uc.aliases
        }
        self._expanded: dict[tuple[str, ...], pd.DataFrame] = {}
        self._identifier_aliases = {
            alias: ident.value for ident in definition.identifiers for alias in (ident.value, *ident.aliases)
        }

    def _facets(self) -> tuple[Facet, ...]:
        d = self.definition
        out: list[Facet] = []
        if d.crossed is not None:
            for attr, levels in d.crossed.attributes.items():
                values = tuple(lv.value for lv in levels)
                ref = d.canonical_pairs.get(attr, (values[0], values[1]))[0]
                out.append(Facet(attr, attr, values, ref, None, "attribute"))
            return tuple(out)
        for axis, idents in d.axes.items():
            values = tuple(i.value for i in idents)
            ref = d.canonical_pairs.get(axis, (values[0], values[1]))[0]
            out.append(Facet(axis, "identifier", values, ref, axis, "axis"))
            if axis in d.groups:
                groups = d.groups[axis]
                out.append(Facet(f"{axis} (groups)", "group", groups, groups[0], axis, "group"))
        return tuple(out)

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
        if uc.system_prompt:
            system = self.definition.system_prompts[uc.system_prompt]
        else:
            spec = self.outcomes[uc.name]
            system = get_kind(spec.kind).instruction(spec)
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
        key = tuple(v for v in VARIANTS if v in variants)
        if key not in self._expanded:
            self._expanded[key] = self._expand(key)
        return self._expanded[key].copy(deep=False)  # copy-on-write: a caller's change never reaches the cache

    def _units(self, lang: str) -> list[tuple[str, str, dict[str, str], dict[str, Any]]]:
        """What one prompt varies: (axis, identifier, placeholder phrases, design columns) in study order."""
        d = self.definition
        if d.crossed is not None:
            first = next(iter(d.crossed.attributes.values()))
            return [
                (CROSSED_AXIS, combination_name(combo),
                 {attr: lv.phrases[lang] for attr, lv in zip(d.crossed.attributes, combo, strict=True)},
                 {**{attr: lv.value for attr, lv in zip(d.crossed.attributes, combo, strict=True)},
                  LEVEL_INDEX: first.index(combo[0])})
                for combo in d.crossed.combinations()
            ]
        units = []
        for axis, idents in d.axes.items():
            for position, ident in enumerate(idents):
                extra: dict[str, Any] = {LEVEL_INDEX: position}
                if d.groups:
                    extra["group"] = ident.group
                units.append((axis, ident.value, self.identifier_forms(ident, lang), extra))
        return units

    def prompt_counts(self) -> PromptCounts:
        """The standard table's size from its blocks (:mod:`.expansion`), checked as :meth:`expand` checks them,
        without writing a prompt."""
        if ("standard",) in self._expanded:
            return PromptCounts.of(self._expanded["standard",])
        blocks, _ = self._blocks(("standard",))
        blocks = [b for b in blocks if b.size]
        return PromptCounts.of_rows(sum(b.size for b in blocks), (b.constants["use_case"] for b in blocks),
                                    (u[1] for b in blocks for u in b.units))

    def _expand(self, variants: tuple[str, ...]) -> pd.DataFrame:
        return assemble(*self._blocks(variants))

    def _blocks(self, variants: tuple[str, ...]) -> tuple[list[Block], list[str]]:
        """The table's blocks (variant × use case × language × order of options) and its design columns."""
        d = self.definition
        units = {lang: self._units(lang) for lang in d.languages}
        unit_columns = list(dict.fromkeys(k for lang_units in units.values() for u in lang_units for k in u[3]))
        design_names = list(
            dict.fromkeys(k for uc in d.use_cases.values() for k in uc.profiles[0] if k != "profile_id")
        )
        design_names += [c for c in unit_columns if c not in design_names]
        partials: dict[tuple[str, str, str], Partials] = {}
        for uc in d.use_cases.values():
            for lang in d.languages:
                designs = [{k: (v[lang] if isinstance(v, dict) else v) for k, v in profile.items()}
                           for profile in uc.profiles]  # a per-language value is a dict (use_cases.py)
                questions = uc.question_variants[lang]
                for order, template, columns in _option_orders(self.outcomes[uc.name], uc.templates[lang]):
                    partials[uc.name, lang, order] = Partials.build(
                        template, [{**design, **columns} for design in designs], questions)
                    design_names += [c for c in columns if c not in design_names]
                first = _partial(uc.templates[lang], {**designs[0], "question": questions[0]})
                self._check_distinct(uc.name, lang, units[lang], (designs[0], 1, first))
        blocks = [
            Block(f"{uc.name}_{lang_spec['id_infix']}_", order + ("_fair" if variant == "fairness" else ""),
                  {"study": d.name, "use_case": uc.name, "language": lang, "variant": variant,
                   "answer_type": uc.answer_type, "system": self.system_prompt_for(uc.name, variant)},
                  units[lang], partials[uc.name, lang, order])
            for variant in variants for uc in d.use_cases.values() for lang, lang_spec in d.languages.items()
            for order in [o for (u, la, o) in partials if u == uc.name and la == lang]
        ]
        return blocks, design_names

    def _check_distinct(
        self, use_case: str, lang: str, units: list[tuple[str, str, dict[str, str], dict[str, Any]]],
        first: tuple[dict[str, Any], int, list[tuple[str, str | None]]],
    ) -> None:
        """Two levels of one axis whose prompts read alike would be compared on identical prompts: refuse."""
        design, qv_index, parts = first
        seen: dict[tuple[str, str], str] = {}
        for axis, identifier, phrase_values, _ in units:
            text = "".join(p if n is None else phrase_values[n] for p, n in parts)
            other = seen.setdefault((axis, text), identifier)
            if other != identifier:
                raise UserError(
                    f"{self.source}: use_cases.{use_case}.template.{lang}: {other} and {identifier} ({axis}) give "
                    f"identical prompts (profile {design['profile_id']}, question {qv_index}); give them phrases "
                    "that differ where the template uses them"
                )


def _option_orders(spec: OutcomeSpec, template: str) -> list[tuple[str, str, dict[str, Any]]]:
    """Per order of a declared choice's options (:mod:`counterbench.outcomes.choice_options`): the prompt id's
    suffix (``_o1``, ... when the options rotate), the template with the options listed after it, and the
    design columns saying the order and where the measured option stands. Any other outcome: the template."""
    from counterbench.outcomes.choice_options import (
        MEASURED_COLUMN,
        ORDER_COLUMN,
        declared_options,
        measured_label,
        option_lines,
        rotations,
    )

    if not declared_options(spec):
        return [("", template, {})]
    orders = rotations(spec)
    return [(f"_o{k}" if len(orders) > 1 else "", f"{template}\n{option_lines(spec, order)}",
             {ORDER_COLUMN: k, MEASURED_COLUMN: measured_label(spec, order)})
            for k, order in enumerate(orders, start=1)]


def _partial(template: str, values: Mapping[str, Any]) -> list[tuple[str, str | None]]:
    """Split a template into literal text and the names still to fill (the identifier's phrases)."""
    pieces = PLACEHOLDER.split(template)
    out: list[tuple[str, str | None]] = []
    literal = ""
    for i, piece in enumerate(pieces):
        if i % 2 == 0:
            literal += piece
        elif piece in values:
            literal += fmt(values[piece])
        else:
            out.append((literal, None))
            out.append(("", piece))
            literal = ""
    out.append((literal, None))
    return [(p, n) for p, n in out if n is not None or p]
